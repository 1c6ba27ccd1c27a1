#!/usr/bin/env python3
"""ONNX models timed in kiln (bench/onnx_bench: import, first call = compile + run, replays) and in
onnxruntime's CPU execution provider (session creation, first run, runs), on the same inputs.

Models: the ones bench/onnx/ort_compare.py builds (MLP, CNN, encoder layer, decoder layer,
recurrent, and a stack of --layers encoder layers, ~40 nodes each: import and compile time of a
large graph) and the models PyTorch exported (tests/onnx/models/). They are written to --out,
which the GPU run carries (bench/gpu/onnx_run.sh runs onnx_bench there; onnxruntime has no wheel
on that machine, so bench/onnx/torch_speed.py times PyTorch instead).

    python3 -m venv /tmp/ort && /tmp/ort/bin/pip install onnx onnxruntime numpy
    /tmp/ort/bin/python bench/onnx/speed.py build/bench/onnx_bench [--device cpu] [--out DIR] [--results FILE]
"""
import argparse
import glob
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import ort_compare  # noqa: E402  (the model builders)


def write_models(out, layers):
    """Writes every model as OUT/<name>.onnx; returns {name: path}."""
    paths = {}
    builders = [("mlp", ort_compare.mlp), ("cnn", ort_compare.cnn), ("encoder_layer", ort_compare.encoder(1)),
                ("decoder_layer", ort_compare.decoder_layer), ("recurrent", ort_compare.recurrent),
                (f"encoder_x{layers}", ort_compare.encoder(layers))]
    for name, build in builders:
        graph, _ = build()
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="kiln speed.py")
        paths[name] = os.path.join(out, f"{name}.onnx")
        onnx.save(model, paths[name])
    here = os.path.dirname(os.path.abspath(__file__))
    for d in sorted(glob.glob(os.path.join(here, "..", "..", "tests", "onnx", "models", "*", "model.onnx"))):
        name = os.path.basename(os.path.dirname(d))
        paths[name] = os.path.join(out, f"{name}.onnx")
        shutil.copyfile(d, paths[name])
    return paths


def ort_times(path, iters):
    t0 = time.perf_counter()
    sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
    session_ms = (time.perf_counter() - t0) * 1e3
    rng = np.random.default_rng(3)
    feeds = {}
    for i in sess.get_inputs():
        shape = [d if isinstance(d, int) else 1 for d in i.shape]
        feeds[i.name] = (rng.standard_normal(shape).astype(np.float32) if "float" in i.type
                         else np.zeros(shape, dtype=np.int64))
    t0 = time.perf_counter()
    sess.run(None, feeds)
    first_ms = (time.perf_counter() - t0) * 1e3
    runs = []
    for _ in range(iters):
        t0 = time.perf_counter()
        sess.run(None, feeds)
        runs.append((time.perf_counter() - t0) * 1e6)
    return session_ms, first_ms, statistics.median(runs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("onnx_bench")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--iters", type=int, default=50)
    ap.add_argument("--layers", type=int, default=12)
    ap.add_argument("--out", help="write the models here (default: a temporary directory)")
    ap.add_argument("--results", help="append one JSON line per model and runtime here")
    ap.add_argument("--models", help="comma-separated names: only these (default: all)")
    args = ap.parse_args()
    out = args.out or tempfile.mkdtemp(prefix="kiln_onnx_speed_")
    os.makedirs(out, exist_ok=True)
    paths = write_models(out, args.layers)
    if args.models:
        paths = {k: v for k, v in paths.items() if k in args.models.split(",")}
    kiln_json = os.path.join(out, "kiln.jsonl")
    if os.path.exists(kiln_json):
        os.remove(kiln_json)
    # A first call that compiles (no kernels from an earlier run's disk cache).
    env = dict(os.environ, KILN_DISK_CACHE="0")
    r = subprocess.run([args.onnx_bench, "--device", args.device, "--iters", str(args.iters), "--results", kiln_json]
                       + list(paths.values()), capture_output=True, text=True, env=env)
    if r.returncode != 0:
        print(r.stdout + r.stderr)
        sys.exit(1)
    kiln = {}
    for line in open(kiln_json):
        row = json.loads(line)
        kiln[row["model"].removesuffix(".onnx")] = row
    print(f"kiln on {args.device} vs onnxruntime {ort.__version__} (CPU execution provider); run = median of {args.iters}")
    print(f"{'model':22s} {'nodes':>5s} | {'kiln import':>11s} {'compile':>8s} {'run us':>9s} {'kernels':>7s} | "
          f"{'ort session':>11s} {'1st run':>8s} {'run us':>9s} | {'run ratio':>9s}")
    for name, path in paths.items():
        nodes = len(onnx.load(path).graph.node)
        k = kiln[name]
        session_ms, first_ms, run_us = ort_times(path, args.iters)
        print(f"{name:22s} {nodes:5d} | {k['import_ms']:9.1f}ms {k['compile_ms']:6.1f}ms {k['run_us_median']:9.1f} "
              f"{k['kernels_per_call']:7.1f} | {session_ms:9.1f}ms {first_ms:6.1f}ms {run_us:9.1f} | "
              f"{run_us / k['run_us_median']:8.2f}x")
        if args.results:
            with open(args.results, "a") as f:
                f.write(json.dumps({**k, "nodes": nodes, "runtime": "kiln"}) + "\n")
                f.write(json.dumps({"model": name, "nodes": nodes, "runtime": f"onnxruntime {ort.__version__} CPU EP",
                                    "session_ms": session_ms, "first_run_ms": first_ms, "run_us_median": run_us}) + "\n")


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""The PyTorch models of bench/onnx/export_torch_models.py timed in PyTorch on the GPU machine, at
the shapes they were exported with: eager, and torch.compile (mode "reduce-overhead": CUDA
graphs), median wall time per call up to the result being ready (synchronized), beside
onnx_bench's numbers for the same .onnx files (bench/gpu/onnx_run.sh runs both in one call).
onnxruntime has no wheel there; PyTorch is the anchor.

    python3 bench/onnx/torch_speed.py [--device cuda] [--iters 200] [--results FILE]
"""
import argparse
import json
import os
import statistics
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from export_torch_models import Cnn, Encoder, Mlp  # noqa: E402


def timed(fn, x, iters, device):
    def call():
        y = fn(*x)
        if device == "cuda":
            torch.cuda.synchronize()
        return y
    t0 = time.perf_counter()
    call()
    first_ms = (time.perf_counter() - t0) * 1e3
    for _ in range(3):
        call()
    runs = []
    for _ in range(iters):
        t0 = time.perf_counter()
        call()
        runs.append((time.perf_counter() - t0) * 1e6)
    return first_ms, statistics.median(runs)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--iters", type=int, default=200)
    ap.add_argument("--results")
    args = ap.parse_args()
    torch.manual_seed(7)
    models = {"torch_mlp": (Mlp(), [torch.randn(4, 32)]),
              "torch_resnet_cnn": (Cnn(), [torch.randn(2, 3, 16, 16)]),
              "torch_encoder_layer": (Encoder(), [torch.randn(2, 8, 32)])}
    print(f"torch {torch.__version__} on {args.device}; run = median of {args.iters} synchronized calls")
    print(f"{'model':22s} | {'eager run us':>12s} | {'compile 1st ms':>14s} {'compiled run us':>15s}")
    for name, (m, x) in models.items():
        m = m.eval().to(args.device)
        x = [t.to(args.device) for t in x]
        with torch.no_grad():
            _, eager_us = timed(m, x, args.iters, args.device)
            compiled = torch.compile(m, mode="reduce-overhead")
            first_ms, compiled_us = timed(compiled, x, args.iters, args.device)
        print(f"{name:22s} | {eager_us:12.1f} | {first_ms:14.1f} {compiled_us:15.1f}")
        if args.results:
            with open(args.results, "a") as f:
                f.write(json.dumps({"model": name, "runtime": f"torch {torch.__version__} eager", "device": args.device,
                                    "run_us_median": eager_us}) + "\n")
                f.write(json.dumps({"model": name, "runtime": f"torch {torch.__version__} compile reduce-overhead",
                                    "device": args.device, "first_call_ms": first_ms, "run_us_median": compiled_us}) + "\n")


if __name__ == "__main__":
    main()

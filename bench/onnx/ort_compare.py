#!/usr/bin/env python3
"""kiln's ONNX importer against onnxruntime (an independent reference) on small real-world graphs.

Builds, with onnx.helper and random weights, an MLP (Gemm, Relu, Softmax) and a transformer
encoder layer (LayerNormalization, multi-head attention with the head split done by
Shape/Gather/Concat/Reshape/Transpose as exporters write it, erf-GELU MLP, residuals), runs each
through onnxruntime's CPU provider and through `kilnc run model.onnx` (kiln::onnx::load, compiled
for the device), and compares the outputs (rtol 1e-3, atol 1e-4). Prints one line per model with
the largest difference and the wall times (kilnc: one process, import + compile + run).

    python3 -m venv /tmp/ort && /tmp/ort/bin/pip install onnx onnxruntime numpy
    /tmp/ort/bin/python bench/onnx/ort_compare.py build/tools/kilnc/kilnc [--device cpu] [--keep DIR]

Exits 1 when an output differs.
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper, numpy_helper

rng = np.random.default_rng(12)


def init(name, shape, scale=0.1):
    return numpy_helper.from_array((rng.standard_normal(shape) * scale).astype(np.float32), name)


def i64(name, values):
    return numpy_helper.from_array(np.array(values, dtype=np.int64), name)


def mlp():
    batch, d_in, hidden, d_out = 32, 64, 128, 10
    nodes = [
        helper.make_node("Gemm", ["x", "w1", "b1"], ["h1"], name="fc1", transB=1),
        helper.make_node("Relu", ["h1"], ["a1"], name="relu1"),
        helper.make_node("Gemm", ["a1", "w2", "b2"], ["h2"], name="fc2"),
        helper.make_node("Relu", ["h2"], ["a2"], name="relu2"),
        helper.make_node("MatMul", ["a2", "w3"], ["h3"], name="fc3"),
        helper.make_node("Add", ["h3", "b3"], ["logits"], name="bias3"),
        helper.make_node("Softmax", ["logits"], ["probs"], name="softmax", axis=-1),
    ]
    inits = [init("w1", (hidden, d_in)), init("b1", (hidden,)), init("w2", (hidden, hidden)), init("b2", (hidden,)),
             init("w3", (hidden, d_out)), init("b3", (d_out,))]
    g = helper.make_graph(nodes, "mlp", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [batch, d_in])],
                          [helper.make_tensor_value_info("probs", TensorProto.FLOAT, [batch, d_out])], inits)
    return g, {"x": rng.standard_normal((batch, d_in)).astype(np.float32)}


def encoder_layer():
    B, S, D, H, F = 2, 16, 64, 4, 256
    Dh = D // H
    n = []
    inits = [init("ln1_s", (D,), 1.0), init("ln1_b", (D,)), init("ln2_s", (D,), 1.0), init("ln2_b", (D,))]
    for w in ["q", "k", "v", "o"]:
        inits += [init(f"w{w}", (D, D)), init(f"b{w}", (D,))]
    inits += [init("wf1", (D, F)), init("bf1", (F,)), init("wf2", (F, D)), init("bf2", (D,))]
    inits += [i64("i0", [0]), i64("i1", [1]), i64("heads", [H, Dh]), i64("flat", [D])]
    inits += [numpy_helper.from_array(np.array(1.0 / np.sqrt(Dh), dtype=np.float32), "scale"),
              numpy_helper.from_array(np.array(1.0 / np.sqrt(2.0), dtype=np.float32), "inv_sqrt2"),
              numpy_helper.from_array(np.array(0.5, dtype=np.float32), "half"),
              numpy_helper.from_array(np.array(1.0, dtype=np.float32), "one")]
    n.append(helper.make_node("LayerNormalization", ["x", "ln1_s", "ln1_b"], ["ln1"], name="ln1", axis=-1, epsilon=1e-5))
    # [B, S] from the input's shape, as exporters compute it: Shape -> Gather -> Concat.
    n.append(helper.make_node("Shape", ["x"], ["xs"], name="shape"))
    n.append(helper.make_node("Gather", ["xs", "i0"], ["b"], name="batch", axis=0))
    n.append(helper.make_node("Gather", ["xs", "i1"], ["s"], name="seq", axis=0))
    n.append(helper.make_node("Concat", ["b", "s", "heads"], ["split_shape"], name="split_shape", axis=0))
    n.append(helper.make_node("Concat", ["b", "s", "flat"], ["merge_shape"], name="merge_shape", axis=0))
    for w in ["q", "k", "v"]:
        n.append(helper.make_node("MatMul", ["ln1", f"w{w}"], [f"{w}0"], name=f"{w}_proj"))
        n.append(helper.make_node("Add", [f"{w}0", f"b{w}"], [f"{w}1"], name=f"{w}_bias"))
        n.append(helper.make_node("Reshape", [f"{w}1", "split_shape"], [f"{w}2"], name=f"{w}_split"))
        perm = [0, 2, 3, 1] if w == "k" else [0, 2, 1, 3]
        n.append(helper.make_node("Transpose", [f"{w}2"], [f"{w}h"], name=f"{w}_heads", perm=perm))
    n.append(helper.make_node("MatMul", ["qh", "kh"], ["scores0"], name="qk"))
    n.append(helper.make_node("Mul", ["scores0", "scale"], ["scores"], name="scale"))
    n.append(helper.make_node("Softmax", ["scores"], ["attn"], name="attn", axis=-1))
    n.append(helper.make_node("MatMul", ["attn", "vh"], ["ctx0"], name="av"))
    n.append(helper.make_node("Transpose", ["ctx0"], ["ctx1"], name="ctx_t", perm=[0, 2, 1, 3]))
    n.append(helper.make_node("Reshape", ["ctx1", "merge_shape"], ["ctx"], name="ctx_merge"))
    n.append(helper.make_node("MatMul", ["ctx", "wo"], ["o0"], name="o_proj"))
    n.append(helper.make_node("Add", ["o0", "bo"], ["o1"], name="o_bias"))
    n.append(helper.make_node("Add", ["x", "o1"], ["r1"], name="residual1"))
    n.append(helper.make_node("LayerNormalization", ["r1", "ln2_s", "ln2_b"], ["ln2"], name="ln2", axis=-1, epsilon=1e-5))
    n.append(helper.make_node("MatMul", ["ln2", "wf1"], ["f0"], name="ff1"))
    n.append(helper.make_node("Add", ["f0", "bf1"], ["f1"], name="ff1_bias"))
    # GELU as exporters write it: 0.5 * x * (1 + erf(x / sqrt(2)))
    n.append(helper.make_node("Mul", ["f1", "inv_sqrt2"], ["g0"], name="gelu_scale"))
    n.append(helper.make_node("Erf", ["g0"], ["g1"], name="gelu_erf"))
    n.append(helper.make_node("Add", ["g1", "one"], ["g2"], name="gelu_add"))
    n.append(helper.make_node("Mul", ["f1", "g2"], ["g3"], name="gelu_mul"))
    n.append(helper.make_node("Mul", ["g3", "half"], ["g4"], name="gelu_half"))
    n.append(helper.make_node("MatMul", ["g4", "wf2"], ["f2"], name="ff2"))
    n.append(helper.make_node("Add", ["f2", "bf2"], ["f3"], name="ff2_bias"))
    n.append(helper.make_node("Add", ["r1", "f3"], ["y"], name="residual2"))
    g = helper.make_graph(n, "encoder_layer", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [B, S, D])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [B, S, D])], inits)
    return g, {"x": rng.standard_normal((B, S, D)).astype(np.float32)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kilnc")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--keep", help="write the models, inputs and outputs here")
    args = ap.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="kiln_ort_")
    os.makedirs(work, exist_ok=True)
    failed = False
    for name, build in [("mlp", mlp), ("encoder_layer", encoder_layer)]:
        graph, inputs = build()
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="kiln ort_compare")
        onnx.checker.check_model(model)
        path = os.path.join(work, f"{name}.onnx")
        onnx.save(model, path)
        t0 = time.perf_counter()
        sess = ort.InferenceSession(path, providers=["CPUExecutionProvider"])
        want = sess.run(None, inputs)
        t_ort = time.perf_counter() - t0
        cmd = [args.kilnc, "run", path, "--device", args.device, "--output-dir", os.path.join(work, name)]
        for k, v in inputs.items():
            np.save(os.path.join(work, f"{name}_{k}.npy"), v)
            cmd += ["--input", f"{k}={os.path.join(work, f'{name}_{k}.npy')}"]
        t0 = time.perf_counter()
        r = subprocess.run(cmd, capture_output=True, text=True)
        t_kiln = time.perf_counter() - t0
        if r.returncode != 0:
            print(f"{name}: kilnc failed:\n{r.stdout}{r.stderr}")
            failed = True
            continue
        worst = 0.0
        ok = True
        for out, ref in zip(sess.get_outputs(), want):
            got = np.load(os.path.join(work, name, f"{out.name}.npy"))
            ok = ok and got.shape == ref.shape and np.allclose(got, ref, rtol=1e-3, atol=1e-4)
            worst = max(worst, float(np.max(np.abs(got.astype(np.float64) - ref))))
        failed = failed or not ok
        print(f"{name:14s} {'match' if ok else 'DIFFER'}  largest difference {worst:.2e}  "
              f"onnxruntime {t_ort * 1e3:7.1f} ms (session + run)  kilnc run {t_kiln * 1e3:7.1f} ms (process, import, compile, run)")
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""kiln's ONNX importer against onnxruntime (an independent reference) on small real-world graphs.

Builds, with onnx.helper and random weights, an MLP (Gemm, Relu, Softmax), a small ResNet-style
CNN (Conv with groups and auto_pad, BatchNormalization, MaxPool, AveragePool, residuals), a transformer
encoder layer (LayerNormalization, multi-head attention with the head split done by
Shape/Gather/Concat/Reshape/Transpose as exporters write it, erf-GELU MLP, residuals) and a stack
of --layers of them (default 12, ~500 nodes: import and compile time), runs each
through onnxruntime's CPU provider and through `kilnc run model.onnx` (kiln::onnx::load, compiled
for the device), and compares the outputs (rtol 1e-3, atol 1e-4). Prints one line per model with
the largest difference and the wall times (kilnc: one process, import + compile + run). Then the
models a framework exported (tests/onnx/models/: PyTorch's MLP, ResNet-style CNN and encoder
layer, with PyTorch's outputs), checked against onnxruntime and against the framework's outputs.

    python3 -m venv /tmp/ort && /tmp/ort/bin/pip install onnx onnxruntime numpy
    /tmp/ort/bin/python bench/onnx/ort_compare.py build/tools/kilnc/kilnc [--device cpu] [--keep DIR]

Exits 1 when an output differs.
"""
import argparse
import glob
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


B, S, D, H, F = 2, 16, 64, 4, 256


def encoder_nodes(p, x, y):
    """One encoder layer reading `x` and writing `y`; names prefixed by `p`."""
    Dh = D // H
    n = []
    inits = [init(p + "ln1_s", (D,), 1.0), init(p + "ln1_b", (D,)), init(p + "ln2_s", (D,), 1.0), init(p + "ln2_b", (D,))]
    for w in ["q", "k", "v", "o"]:
        inits += [init(f"{p}w{w}", (D, D)), init(f"{p}b{w}", (D,))]
    inits += [init(p + "wf1", (D, F)), init(p + "bf1", (F,)), init(p + "wf2", (F, D)), init(p + "bf2", (D,))]
    inits += [i64(p + "i0", [0]), i64(p + "i1", [1]), i64(p + "heads", [H, Dh]), i64(p + "flat", [D])]
    inits += [numpy_helper.from_array(np.array(1.0 / np.sqrt(Dh), dtype=np.float32), p + "scale"),
              numpy_helper.from_array(np.array(1.0 / np.sqrt(2.0), dtype=np.float32), p + "inv_sqrt2"),
              numpy_helper.from_array(np.array(0.5, dtype=np.float32), p + "half"),
              numpy_helper.from_array(np.array(1.0, dtype=np.float32), p + "one")]

    def node(op, ins, outs, name, **kw):
        n.append(helper.make_node(op, [i if i == x else p + i for i in ins], [o if o == y else p + o for o in outs],
                                  name=p + name, **kw))

    node("LayerNormalization", [x, "ln1_s", "ln1_b"], ["ln1"], "ln1", axis=-1, epsilon=1e-5)
    # [B, S] from the input's shape, as exporters compute it: Shape -> Gather -> Concat.
    node("Shape", [x], ["xs"], "shape")
    node("Gather", ["xs", "i0"], ["b"], "batch", axis=0)
    node("Gather", ["xs", "i1"], ["s"], "seq", axis=0)
    node("Concat", ["b", "s", "heads"], ["split_shape"], "split_shape", axis=0)
    node("Concat", ["b", "s", "flat"], ["merge_shape"], "merge_shape", axis=0)
    for w in ["q", "k", "v"]:
        node("MatMul", ["ln1", f"w{w}"], [f"{w}0"], f"{w}_proj")
        node("Add", [f"{w}0", f"b{w}"], [f"{w}1"], f"{w}_bias")
        node("Reshape", [f"{w}1", "split_shape"], [f"{w}2"], f"{w}_split")
        node("Transpose", [f"{w}2"], [f"{w}h"], f"{w}_heads", perm=[0, 2, 3, 1] if w == "k" else [0, 2, 1, 3])
    node("MatMul", ["qh", "kh"], ["scores0"], "qk")
    node("Mul", ["scores0", "scale"], ["scores"], "scale")
    node("Softmax", ["scores"], ["attn"], "attn", axis=-1)
    node("MatMul", ["attn", "vh"], ["ctx0"], "av")
    node("Transpose", ["ctx0"], ["ctx1"], "ctx_t", perm=[0, 2, 1, 3])
    node("Reshape", ["ctx1", "merge_shape"], ["ctx"], "ctx_merge")
    node("MatMul", ["ctx", "wo"], ["o0"], "o_proj")
    node("Add", ["o0", "bo"], ["o1"], "o_bias")
    node("Add", [x, "o1"], ["r1"], "residual1")
    node("LayerNormalization", ["r1", "ln2_s", "ln2_b"], ["ln2"], "ln2", axis=-1, epsilon=1e-5)
    node("MatMul", ["ln2", "wf1"], ["f0"], "ff1")
    node("Add", ["f0", "bf1"], ["f1"], "ff1_bias")
    # GELU as exporters write it: 0.5 * x * (1 + erf(x / sqrt(2)))
    node("Mul", ["f1", "inv_sqrt2"], ["g0"], "gelu_scale")
    node("Erf", ["g0"], ["g1"], "gelu_erf")
    node("Add", ["g1", "one"], ["g2"], "gelu_add")
    node("Mul", ["f1", "g2"], ["g3"], "gelu_mul")
    node("Mul", ["g3", "half"], ["g4"], "gelu_half")
    node("MatMul", ["g4", "wf2"], ["f2"], "ff2")
    node("Add", ["f2", "bf2"], ["f3"], "ff2_bias")
    node("Add", ["r1", "f3"], [y], "residual2")
    return n, inits


def encoder(layers):
    def build():
        nodes, inits = [], []
        for k in range(layers):
            n, i = encoder_nodes(f"l{k}_", "x" if k == 0 else f"h{k}", "y" if k == layers - 1 else f"h{k + 1}")
            nodes += n
            inits += i
        g = helper.make_graph(nodes, f"encoder_x{layers}", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [B, S, D])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [B, S, D])], inits)
        return g, {"x": rng.standard_normal((B, S, D)).astype(np.float32)}
    return build


def decoder_layer():
    """A causal self-attention block the way decoder exporters write it: positions sliced from a
    table by the sequence length (Shape -> Gather -> Unsqueeze -> Slice), a causal mask from Range
    and a comparison, Where with -inf, Gemm-free MatMuls, Expand of the mask over the heads."""
    Bt, S, D, Hn = 2, 12, 32, 4
    Dh = D // Hn
    inits = [init("pos", (64, D)), init("wq", (D, D)), init("wk", (D, D)), init("wv", (D, D)), i64("i1", [1]), i64("zero1", [0]),
             i64("axes0", [0]), i64("heads", [Hn, Dh]), i64("flat", [D]),
             numpy_helper.from_array(np.array(0, dtype=np.int64), "zero"), numpy_helper.from_array(np.array(1, dtype=np.int64), "one"),
             numpy_helper.from_array(np.array(-np.inf, dtype=np.float32), "neg_inf"),
             numpy_helper.from_array(np.array(1.0 / np.sqrt(Dh), dtype=np.float32), "scale")]
    n = [
        helper.make_node("Shape", ["x"], ["xs"]),
        helper.make_node("Gather", ["xs", "i1"], ["s1"], axis=0),             # [S]
        helper.make_node("Slice", ["pos", "zero1", "s1", "axes0"], ["p"]),    # pos[:S]
        helper.make_node("Add", ["x", "p"], ["h"]),
        helper.make_node("Squeeze", ["s1", "axes0"], ["s"]),                  # scalar S
        helper.make_node("Range", ["zero", "s", "one"], ["r"]),
        helper.make_node("Unsqueeze", ["r", "axes0"], ["cols"]),              # [1, S]
        helper.make_node("Unsqueeze", ["r", "i1"], ["rows"]),                 # [S, 1]
        helper.make_node("LessOrEqual", ["cols", "rows"], ["causal"]),        # [S, S]
        helper.make_node("Gather", ["xs", "zero1"], ["b1"], axis=0),
        helper.make_node("Concat", ["b1", "s1", "heads"], ["split_shape"], axis=0),
        helper.make_node("Concat", ["b1", "s1", "flat"], ["merge_shape"], axis=0),
    ]
    for w in ["q", "k", "v"]:
        n += [helper.make_node("MatMul", ["h", f"w{w}"], [f"{w}0"]),
              helper.make_node("Reshape", [f"{w}0", "split_shape"], [f"{w}1"]),
              helper.make_node("Transpose", [f"{w}1"], [f"{w}h"], perm=[0, 2, 3, 1] if w == "k" else [0, 2, 1, 3])]
    n += [
        helper.make_node("MatMul", ["qh", "kh"], ["sc0"]),
        helper.make_node("Mul", ["sc0", "scale"], ["sc1"]),
        helper.make_node("Where", ["causal", "sc1", "neg_inf"], ["sc2"]),
        helper.make_node("Softmax", ["sc2"], ["attn"], axis=-1),
        helper.make_node("MatMul", ["attn", "vh"], ["ctx0"]),
        helper.make_node("Transpose", ["ctx0"], ["ctx1"], perm=[0, 2, 1, 3]),
        helper.make_node("Reshape", ["ctx1", "merge_shape"], ["ctx"]),
        helper.make_node("Add", ["h", "ctx"], ["y"]),
    ]
    g = helper.make_graph(n, "decoder_layer", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [Bt, S, D])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [Bt, S, D])], inits)
    return g, {"x": rng.standard_normal((Bt, S, D)).astype(np.float32)}


def recurrent():
    """A bidirectional LSTM with peepholes and initial states, a reverse GRU with
    linear_before_reset and clip, and a forward RNN with sequence lengths, on one input."""
    T, Bt, I, Hd = 7, 3, 5, 6
    inits = [init("lw", (2, 4 * Hd, I), 0.3), init("lr", (2, 4 * Hd, Hd), 0.3), init("lb", (2, 8 * Hd), 0.1),
             init("lh0", (2, Bt, Hd), 0.5), init("lc0", (2, Bt, Hd), 0.5), init("lp", (2, 3 * Hd), 0.2),
             init("gw", (1, 3 * Hd, I), 0.3), init("gr", (1, 3 * Hd, Hd), 0.3), init("gb", (1, 6 * Hd), 0.1),
             init("rw", (1, Hd, I), 0.3), init("rr", (1, Hd, Hd), 0.3),
             numpy_helper.from_array(np.array([7, 4, 1], dtype=np.int32), "lens")]
    nodes = [
        helper.make_node("LSTM", ["x", "lw", "lr", "lb", "", "lh0", "lc0", "lp"], ["ly", "lyh", "lyc"], name="lstm",
                         hidden_size=Hd, direction="bidirectional"),
        helper.make_node("GRU", ["x", "gw", "gr", "gb"], ["gy", "gyh"], name="gru", hidden_size=Hd, direction="reverse",
                         linear_before_reset=1, clip=2.0),
        helper.make_node("RNN", ["x", "rw", "rr", "", "lens"], ["ry", "ryh"], name="rnn", hidden_size=Hd),
    ]
    shapes = {"ly": [T, 2, Bt, Hd], "lyh": [2, Bt, Hd], "lyc": [2, Bt, Hd], "gy": [T, 1, Bt, Hd], "gyh": [1, Bt, Hd],
              "ry": [T, 1, Bt, Hd], "ryh": [1, Bt, Hd]}
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, sh) for n, sh in shapes.items()]
    g = helper.make_graph(nodes, "recurrent", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [T, Bt, I])], outs, inits)
    return g, {"x": rng.standard_normal((T, Bt, I)).astype(np.float32)}


def cnn():
    """A small ResNet-style CNN: a stem (Conv, BatchNormalization, Relu, MaxPool), a basic residual
    block, a strided block with a 1x1 projection shortcut, a depthwise (group = C) convolution with
    SAME_UPPER padding, an AveragePool, then GlobalAveragePool, Flatten and a Gemm classifier."""
    n, c0, hw = 2, 3, 17
    inits, nodes = [], []

    def conv_bn(name, x, cin, cout, k, stride=1, group=1, relu=True, **attrs):
        inits.extend([init(f"{name}_w", (cout, cin // group, k, k), 0.3), init(f"{name}_b", (cout,)),
                      numpy_helper.from_array((1 + rng.random(cout) * 0.2).astype(np.float32), f"{name}_s"),
                      init(f"{name}_beta", (cout,)), init(f"{name}_m", (cout,)),
                      numpy_helper.from_array((0.5 + rng.random(cout)).astype(np.float32), f"{name}_v")])
        if "auto_pad" not in attrs:
            attrs["pads"] = [k // 2] * 4
        nodes.append(helper.make_node("Conv", [x, f"{name}_w", f"{name}_b"], [f"{name}_c"], name=name,
                                      kernel_shape=[k, k], strides=[stride, stride], group=group, **attrs))
        nodes.append(helper.make_node("BatchNormalization", [f"{name}_c", f"{name}_s", f"{name}_beta", f"{name}_m",
                                                             f"{name}_v"], [f"{name}_n"], name=f"{name}_bn"))
        if not relu:
            return f"{name}_n"
        nodes.append(helper.make_node("Relu", [f"{name}_n"], [f"{name}_r"], name=f"{name}_relu"))
        return f"{name}_r"

    h = conv_bn("stem", "x", c0, 8, 3)
    nodes.append(helper.make_node("MaxPool", [h], ["pool"], name="pool", kernel_shape=[3, 3], strides=[2, 2],
                                  pads=[1, 1, 1, 1]))
    a = conv_bn("b1a", "pool", 8, 8, 3)
    b = conv_bn("b1b", a, 8, 8, 3, relu=False)
    nodes += [helper.make_node("Add", [b, "pool"], ["s1"], name="res1"), helper.make_node("Relu", ["s1"], ["r1"], name="r1")]
    a = conv_bn("b2a", "r1", 8, 16, 3, stride=2)
    b = conv_bn("b2b", a, 16, 16, 3, relu=False)
    p = conv_bn("b2p", "r1", 8, 16, 1, stride=2, relu=False)
    nodes += [helper.make_node("Add", [b, p], ["s2"], name="res2"), helper.make_node("Relu", ["s2"], ["r2"], name="r2")]
    d = conv_bn("dw", "r2", 16, 16, 3, group=16, auto_pad="SAME_UPPER")
    nodes += [helper.make_node("AveragePool", [d], ["ap"], name="avgpool", kernel_shape=[2, 2], strides=[1, 1],
                               pads=[0, 0, 1, 1]),
              helper.make_node("GlobalAveragePool", ["ap"], ["gap"], name="gap"),
              helper.make_node("Flatten", ["gap"], ["flat"], name="flatten"),
              helper.make_node("Gemm", ["flat", "fc_w", "fc_b"], ["logits"], name="fc", transB=1)]
    inits += [init("fc_w", (10, 16)), init("fc_b", (10,))]
    g = helper.make_graph(nodes, "cnn", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [n, c0, hw, hw])],
                          [helper.make_tensor_value_info("logits", TensorProto.FLOAT, [n, 10])], inits)
    return g, {"x": rng.standard_normal((n, c0, hw, hw)).astype(np.float32)}


def compare(args, work, name, path, inputs, nodes, also=None):
    """Runs `path` through onnxruntime and through kilnc; True when every output matches
    onnxruntime (and `also`, reference outputs from the exporting framework, when given)."""
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
        return False
    worst = 0.0
    ok = True
    for i, (out, ref) in enumerate(zip(sess.get_outputs(), want)):
        got = np.load(os.path.join(work, name, f"{out.name}.npy"))
        for expected in [ref] + ([also[i]] if also else []):
            ok = ok and got.shape == expected.shape and np.allclose(got, expected, rtol=1e-3, atol=1e-4)
            worst = max(worst, float(np.max(np.abs(got.astype(np.float64) - expected))))
    print(f"{name:20s} {nodes:5d} nodes  {'match' if ok else 'DIFFER'}  largest difference {worst:.2e}  "
          f"onnxruntime {t_ort * 1e3:7.1f} ms (session + run)  kilnc run {t_kiln * 1e3:7.1f} ms (process, import, compile, run)")
    return ok


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("kilnc")
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--keep", help="write the models, inputs and outputs here")
    ap.add_argument("--layers", type=int, default=12, help="also a stack of this many encoder layers (import and compile time)")
    ap.add_argument("--exported", default=os.path.join(os.path.dirname(__file__), "..", "..", "tests", "onnx", "models"),
                    help="models exported by a framework, in the ONNX test-case layout (also compared with its outputs)")
    args = ap.parse_args()
    work = args.keep or tempfile.mkdtemp(prefix="kiln_ort_")
    os.makedirs(work, exist_ok=True)
    failed = False
    models = [("mlp", mlp), ("cnn", cnn), ("encoder_layer", encoder(1)), ("decoder_layer", decoder_layer), ("recurrent", recurrent)]
    if args.layers > 1:
        models.append((f"encoder_x{args.layers}", encoder(args.layers)))
    for name, build in models:
        graph, inputs = build()
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], producer_name="kiln ort_compare")
        onnx.checker.check_model(model)
        path = os.path.join(work, f"{name}.onnx")
        onnx.save(model, path)
        failed = not compare(args, work, name, path, inputs, len(graph.node)) or failed
    for d in sorted(glob.glob(os.path.join(args.exported, "*", "model.onnx"))):
        model = onnx.load(d)
        data = os.path.join(os.path.dirname(d), "test_data_set_0")
        names = [i.name for i in model.graph.input if i.name not in {t.name for t in model.graph.initializer}]
        inputs = {n: numpy_helper.to_array(onnx.load_tensor(os.path.join(data, f"input_{k}.pb"))) for k, n in enumerate(names)}
        outputs = [numpy_helper.to_array(onnx.load_tensor(os.path.join(data, f"output_{k}.pb")))
                   for k in range(len(model.graph.output))]
        name = os.path.basename(os.path.dirname(d))
        failed = not compare(args, work, name, d, inputs, len(model.graph.node), also=outputs) or failed
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()

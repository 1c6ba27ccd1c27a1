"""Frameworks' side of kiln benchmark workload W10: a device-side loop with a stopping test.
  W10  up to 1000 iterations of x_new = tanh(x @ W + b), x [64x1024], W [1024x1024], b [1024], float32, stopping early
       when max|x_new - x| < 1e-6 (computed on the device). Metric: wall time per whole loop (start to the synchronized
       final x, median of 10 after one warm-up loop) and the number of iterations actually run.
Inputs are integer hashes (uniform() below, the same in anchor_bench --w10): x0 in [-1,1), W in [-1,1) / scale
(default 32), b in [-0.1,0.1), all float32,
identical in every framework. TF32 is off everywhere, so the numbers are plain float32 like kiln's.
  torch-eager            Python loop; d = max|x_new - x| read with .item() every iteration (one host sync each).
  torch-graph            one iteration (matmul, tanh, difference into a device scalar, in-place x_new -> x) captured
                         into a CUDAGraph; replayed from Python with an .item() check after each replay.
  torch-graph-unchecked  the same graph replayed 1000 times, no check, one sync at the end (a lower bound that
                         ignores the stopping test).
  jax                    jax.jit of a lax.while_loop with carry (x, i, done), the whole loop on the device.
Run one framework per process:
  python3 w10_anchor.py torch-eager|torch-graph|torch-graph-unchecked|jax [--scale S]
Prints one human line and one RESULT json line."""
import argparse
import json
import statistics
import time

import numpy as np

MAX_IT, TOL = 1000, 1e-6

ap = argparse.ArgumentParser()
ap.add_argument("fw", choices=["torch-eager", "torch-graph", "torch-graph-unchecked", "jax"])
ap.add_argument("--scale", type=float, default=32.0, help="W is divided by this (default 32)")
args = ap.parse_args()

def uniform(shape, mult, lo, hi):
    # Element k is lo + (hi - lo) * ((k * mult) mod 2^32) / 2^32, in float64 then float32: integer
    # hashing that kiln's anchor_bench --w10 computes the same way, so both sides start equal.
    k = np.arange(int(np.prod(shape)), dtype=np.uint64)
    u = ((k * np.uint64(mult)) & np.uint64(0xFFFFFFFF)).astype(np.float64) / 2.0**32
    return (lo + (hi - lo) * u).reshape(shape)


X0 = uniform((64, 1024), 2654435761, -1, 1).astype(np.float32)
W = (uniform((1024, 1024), 2246822519, -1, 1) / args.scale).astype(np.float32)
B = uniform((1024,), 3266489917, -0.1, 0.1).astype(np.float32)


def bench(reset, loop):
    """reset() prepares x and synchronizes; loop() runs one whole loop, synchronizes, returns (x, iterations)."""
    reset()
    loop()  # warm-up loop
    times = []
    for _ in range(10):
        reset()
        t0 = time.perf_counter()
        x, it = loop()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3, x, it


if args.fw.startswith("torch"):
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    dev = torch.cuda.get_device_name(0)
    x0t, Wt, bt = (torch.from_numpy(a).cuda() for a in (X0, W, B))
    sync = torch.cuda.synchronize

    if args.fw == "torch-eager":
        def reset():
            sync()

        def loop():
            x, it = x0t, MAX_IT
            for i in range(1, MAX_IT + 1):
                x_new = torch.tanh(torch.addmm(bt, x, Wt))
                d = (x_new - x).abs().max()
                x = x_new
                if d.item() < TOL:
                    it = i
                    break
            sync()
            return x, it
    else:
        sx = x0t.clone()                                   # static state, updated in place by the graph
        sd = torch.zeros((), device="cuda", dtype=torch.float32)  # static max|x_new - x|

        def step():
            x_new = torch.tanh(torch.addmm(bt, sx, Wt))
            sd.copy_((x_new - sx).abs().max())
            sx.copy_(x_new)

        s = torch.cuda.Stream()  # warm up on a side stream before capture, as torch's docs require
        s.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(s):
            for _ in range(3):
                step()
        torch.cuda.current_stream().wait_stream(s)
        g = torch.cuda.CUDAGraph()
        with torch.cuda.graph(g):
            step()
        sync()

        def reset():
            sx.copy_(x0t)
            sync()

        if args.fw == "torch-graph":
            def loop():
                it = MAX_IT
                for i in range(1, MAX_IT + 1):
                    g.replay()
                    if sd.item() < TOL:
                        it = i
                        break
                sync()
                return sx, it
        else:
            def loop():
                for _ in range(MAX_IT):
                    g.replay()
                sync()
                return sx, MAX_IT

    ms, x, it = bench(reset, loop)
    xf = x.double().cpu().numpy()
else:
    import jax
    import jax.numpy as jnp
    dev = jax.devices()[0].device_kind
    HI = jax.lax.Precision.HIGHEST  # exact float32 dot (no TF32 / bf16 passes)

    @jax.jit
    def run(x0, w, b):
        def cond(c):
            _, i, done = c
            return jnp.logical_and(i < MAX_IT, jnp.logical_not(done))

        def body(c):
            x, i, _ = c
            x_new = jnp.tanh(jnp.dot(x, w, precision=HI) + b)
            return x_new, i + 1, jnp.max(jnp.abs(x_new - x)) < TOL

        return jax.lax.while_loop(cond, body, (x0, jnp.int32(0), jnp.bool_(False)))

    x0j, Wj, bj = (jax.device_put(a) for a in (X0, W, B))
    jax.block_until_ready(run(x0j, Wj, bj))  # compile (excluded from timing)

    def reset():
        jax.block_until_ready((x0j, Wj, bj))

    def loop():
        x, i, _ = jax.block_until_ready(run(x0j, Wj, bj))
        return x, i

    ms, x, it = bench(reset, loop)
    xf = np.asarray(x).astype(np.float64)

it = int(it)
us = ms * 1e3 / it
label = args.fw + (" (unchecked lower bound: 1000 replays, stopping test ignored)" if args.fw.endswith("unchecked") else "")
print(f"W10 {label}: {ms:.3f} ms per loop ({it} iterations, {us:.1f} us per iteration), "
      f"max|x| {np.abs(xf).max():.4g}", flush=True)
print("RESULT " + json.dumps({"sec": "W10", "wl": "W10", "fw": args.fw, "ms": ms, "iterations": it,
                              "us_per_iter": us, "checksum": float(xf.sum()), "device": dev}), flush=True)

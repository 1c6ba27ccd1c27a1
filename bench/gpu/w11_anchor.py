"""The frameworks' side of W11 (BENCH.md; kiln's side: anchor_bench --only W11): the W8-style MLP block in bf16,
y = x + gelu_tanh(layer_norm(x) @ W1 + b1) @ W2 + b2 with d = 2048 and a 4x hidden layer, called at batch sizes 1, 7,
64 and 1000 in sequence in this fresh process. For each new size: the time to its first result (call to synchronized
output, compiles included) and then the steady time of one more call (median of 20). One framework per process:

  python3 w11_anchor.py torch-compile   # torch.compile(dynamic=True): one graph for every batch size
  python3 w11_anchor.py torch-eager
  python3 w11_anchor.py jax             # jax.jit: a trace and compile per new shape

Prints one line and one RESULT json per (framework, size)."""
import json
import statistics
import sys
import time

FW = sys.argv[1] if len(sys.argv) > 1 else "torch-compile"
SIZES = [1, 7, 64, 1000]
D, H = 2048, 8192


def report(size, first_s, steady_s, device):
    print(f"W11 {FW} batch {size}: first result {first_s * 1e3:.1f} ms, then {steady_s * 1e3:.3f} ms per call", flush=True)
    print("RESULT " + json.dumps({"sec": "W11", "wl": "W11", "fw": FW, "batch": size, "first_ms": first_s * 1e3,
                                  "steady_ms": steady_s * 1e3, "device": device}), flush=True)


if FW.startswith("torch"):
    import torch
    import torch.nn.functional as F

    torch.manual_seed(0)
    dev = torch.cuda.get_device_name(0)
    bf = torch.bfloat16
    W1 = ((torch.rand(D, H, device="cuda") * 2 - 1) / 64).to(bf)
    W2 = ((torch.rand(H, D, device="cuda") * 2 - 1) / 128).to(bf)
    b1 = ((torch.rand(H, device="cuda") - 0.5) / 10).to(bf)
    b2 = ((torch.rand(D, device="cuda") - 0.5) / 10).to(bf)
    g = torch.ones(D, device="cuda", dtype=bf)
    beta = torch.zeros(D, device="cuda", dtype=bf)

    def block(x):
        h = F.layer_norm(x, (D,), g, beta)
        return x + F.gelu(h @ W1 + b1, approximate="tanh") @ W2 + b2

    fn = torch.compile(block, dynamic=True) if FW == "torch-compile" else block
    for size in SIZES:
        x = (torch.rand(size, D, device="cuda") * 2 - 1).to(bf)
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        fn(x)
        torch.cuda.synchronize()
        first = time.perf_counter() - t0
        times = []
        for _ in range(20):
            t0 = time.perf_counter()
            fn(x)
            torch.cuda.synchronize()
            times.append(time.perf_counter() - t0)
        report(size, first, statistics.median(times), dev)
else:
    import jax
    import jax.numpy as jnp

    dev = str(jax.devices()[0].device_kind)
    key = jax.random.PRNGKey(0)
    k1, k2, k3, k4, kx = jax.random.split(key, 5)
    bf = jnp.bfloat16
    W1 = (jax.random.uniform(k1, (D, H), minval=-1, maxval=1) / 64).astype(bf)
    W2 = (jax.random.uniform(k2, (H, D), minval=-1, maxval=1) / 128).astype(bf)
    b1 = (jax.random.uniform(k3, (H,), minval=-0.05, maxval=0.05)).astype(bf)
    b2 = (jax.random.uniform(k4, (D,), minval=-0.05, maxval=0.05)).astype(bf)

    @jax.jit
    def block(x):
        xf = x.astype(jnp.float32)
        mu = xf.mean(-1, keepdims=True)
        var = ((xf - mu) ** 2).mean(-1, keepdims=True)
        h = ((xf - mu) * jax.lax.rsqrt(var + 1e-5)).astype(bf)
        return x + jax.nn.gelu(h @ W1 + b1, approximate=True) @ W2 + b2

    for size in SIZES:
        x = jax.random.uniform(jax.random.fold_in(kx, size), (size, D), minval=-1, maxval=1).astype(bf)
        x.block_until_ready()
        t0 = time.perf_counter()
        block(x).block_until_ready()
        first = time.perf_counter() - t0
        times = []
        for _ in range(20):
            t0 = time.perf_counter()
            block(x).block_until_ready()
            times.append(time.perf_counter() - t0)
        report(size, first, statistics.median(times), dev)

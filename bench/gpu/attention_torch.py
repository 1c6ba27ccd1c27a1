"""torch side of kiln's attention workloads (anchor_bench --only W9,W8), timed like the anchors (triton.testing.do_bench
medians, CUDA events, L2 flushed):
  W9  causal attention, bf16, q/k/v [8, 16, 2048, 128]: F.scaled_dot_product_attention(is_causal=True) (its default
      backend choice; the flash backend forced as a second row), and the written-out form under torch.compile.
  W8  a pre-LayerNorm causal transformer block, bf16, x [8, 2048, 2048], 16 heads of 128, MLP 4x with GELU (tanh):
      eager (SDPA inside) and torch.compile.
Prints one line and one RESULT json per (workload, variant)."""
import json
import math
import sys

import torch
import torch.nn.functional as F
import triton.testing

ONLY = sys.argv[1:] or ["W9", "W8"]
torch.manual_seed(0)
dev = torch.cuda.get_device_name(0)


def bench(wl, var, fn, flops):
    try:
        fn()
        torch.cuda.synchronize()
        ms = triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")
        tf = flops / (ms * 1e-3) / 1e12
        print(f"{wl} {var}: {ms:.4f} ms -> {tf:.1f} TFLOP/s", flush=True)
        print("RESULT " + json.dumps({"sec": "ATT", "wl": wl, "fw": "torch", "var": var, "ms": ms, "TFLOPs": tf,
                                      "device": dev}), flush=True)
    except Exception as e:  # one failing variant must not hide the others
        print(f"{wl} {var}: failed: {type(e).__name__}: {e}", flush=True)


def rnd(*shape, lo=-1.0, hi=1.0):
    return ((torch.rand(*shape, device="cuda") * (hi - lo)) + lo).to(torch.bfloat16)


if "W9n" in ONLY:  # the same shape without the causal mask
    B, H, S, D = 8, 16, 2048, 128
    q, k, v = rnd(B, H, S, D), rnd(B, H, S, D), rnd(B, H, S, D)
    bench("W9n", "sdpa", lambda: F.scaled_dot_product_attention(q, k, v), 4 * B * H * S * S * D)

if "W9" in ONLY:
    B, H, S, D = 8, 16, 2048, 128
    q, k, v = rnd(B, H, S, D), rnd(B, H, S, D), rnd(B, H, S, D)
    flops = 4 * B * H * S * S * D / 2
    bench("W9", "sdpa", lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True), flops)
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel

        def flash():
            with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
                return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        bench("W9", "sdpa-flash", flash, flops)

        def cudnn():
            with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
                return F.scaled_dot_product_attention(q, k, v, is_causal=True)
        bench("W9", "sdpa-cudnn", cudnn, flops)
    except ImportError as e:
        print(f"W9 sdpa backends: {e}")
    mask = torch.triu(torch.full((S, S), float("-inf"), device="cuda"), 1)

    def written(q, k, v):
        s = (q @ k.transpose(-2, -1)).float() / math.sqrt(D) + mask
        return torch.softmax(s, -1).to(q.dtype) @ v
    cw = torch.compile(written)
    bench("W9", "compile-written-out", lambda: cw(q, k, v), flops)
    del q, k, v

if "W8" in ONLY:
    B, S, d = 8, 2048, 2048
    H = d // 128
    s = 1 / 45
    x = rnd(B, S, d)
    ln1w, ln1b, ln2w, ln2b = rnd(d, lo=0.5, hi=1.5), rnd(d, lo=-0.1, hi=0.1), rnd(d, lo=0.5, hi=1.5), rnd(d, lo=-0.1, hi=0.1)
    Wqkv, Wo, W1, W2 = rnd(d, 3 * d, lo=-s, hi=s), rnd(d, d, lo=-s, hi=s), rnd(d, 4 * d, lo=-s, hi=s), rnd(4 * d, d, lo=-s / 2, hi=s / 2)

    def block(x):
        h = F.layer_norm(x, (d,), ln1w, ln1b, 1e-5)
        qkv = (h @ Wqkv).view(B, S, 3, H, 128)
        q, k, v = (qkv[:, :, i].transpose(1, 2) for i in range(3))
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True).transpose(1, 2).reshape(B, S, d)
        h = x + a @ Wo
        return h + F.gelu(F.layer_norm(h, (d,), ln2w, ln2b, 1e-5) @ W1, approximate="tanh") @ W2
    flops = B * S * 24 * d * d + 2 * B * S * S * d
    with torch.no_grad():
        bench("W8", "eager", lambda: block(x), flops)
        cb = torch.compile(block)
        bench("W8", "compile", lambda: cb(x), flops)

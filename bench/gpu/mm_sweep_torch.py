"""torch side of kiln's bf16 matmul sweep (anchor_bench --only MM4096,MM16x8192x8192,BMM64x1024x1024x128,...):
torch.mm / torch.bmm on the same shapes, timed like the anchors (triton.testing.do_bench medians, CUDA
events, L2 flushed), and again back to back without a flush, timed as anchor_bench times kiln. Arguments are the workload ids (MM<n>, MM<m>x<n>x<k>, BMM<b>x<m>x<n>x<k>);
prints one line and one RESULT json line per shape. FMM<...> ids: float32 operands, timed exact and
with TF32 allowed (torch.backends.cuda.matmul.allow_tf32); FMMT<...>: the same with the rhs stored
[n x k] and transposed (a @ b.t()); HMM<...>: float16 operands."""
import json
import statistics
import sys

import torch
import triton.testing

ids = sys.argv[1:] or ["MM4096", "MM8192"]
torch.manual_seed(0)
def run(wl, shape_id, dtype, var, rhs_t=False):
    batched = shape_id.startswith("BMM")
    dims = [int(d) for d in shape_id[3 if batched else 2:].split("x")]
    if len(dims) == 1:
        dims = dims * 3
    if not batched:
        dims = [1] + dims
    bs, m, n, k = dims
    shape_a, shape_b = ([bs, m, k], [bs, k, n]) if batched else ([m, k], [k, n])
    a = (torch.rand(*shape_a, device="cuda") * 2 - 1).to(dtype)
    b = (torch.rand(*shape_b, device="cuda") * 2 - 1).to(dtype)
    if rhs_t:
        b = b.t().contiguous().t()  # stored [n x k], used as [k x n]
    fn = (lambda: torch.bmm(a, b)) if batched else (lambda: torch.mm(a, b))
    ms = triton.testing.do_bench(fn, warmup=25, rep=200, return_mode="median")
    tf = 2 * bs * m * n * k / (ms * 1e-3) / 1e12
    op = "bmm" if batched else "mm"
    print(f"torch.{op} {var} {wl}: {ms:.4f} ms -> {tf:.1f} TFLOP/s")
    print("RESULT " + json.dumps({"sec": "MM", "wl": wl, "fw": "torch", "var": op if var == "bf16" else f"{op} {var}", "ms": ms,
                                  "TFLOPs": tf, "device": torch.cuda.get_device_name(0)}))
    # As anchor_bench times kiln (and the anchors' events_median torch): CUDA events around each of
    # back-to-back calls, no L2 flush between them, median. A GPU at its power limit clocks lower
    # when nothing rests between runs, so this is the like-for-like number for kiln's.
    for _ in range(10):
        fn()
    torch.cuda.synchronize()
    reps = 100
    st = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    en = [torch.cuda.Event(enable_timing=True) for _ in range(reps)]
    for i in range(reps):
        st[i].record()
        fn()
        en[i].record()
    torch.cuda.synchronize()
    ms_b2b = statistics.median(s.elapsed_time(e) for s, e in zip(st, en))
    tf_b2b = 2 * bs * m * n * k / (ms_b2b * 1e-3) / 1e12
    print(f"torch.{op} {var} {wl} back-to-back: {ms_b2b:.4f} ms -> {tf_b2b:.1f} TFLOP/s")
    print("RESULT " + json.dumps({"sec": "MM", "wl": wl, "fw": "torch", "var": (op if var == "bf16" else f"{op} {var}") + " back-to-back",
                                  "ms": ms_b2b, "TFLOPs": tf_b2b, "device": torch.cuda.get_device_name(0)}))


for wl in ids:
    if wl.startswith("F"):  # float32 operands: exact and with TF32 allowed
        for tf32 in (False, True):
            torch.backends.cuda.matmul.allow_tf32 = tf32
            rhs_t = wl.startswith("FMMT")
            run(wl, "MM" + wl[4:] if rhs_t else wl[1:], torch.float32, "f32 tf32" if tf32 else "f32 exact", rhs_t)
        torch.backends.cuda.matmul.allow_tf32 = False
    elif wl.startswith("H"):  # float16 operands
        run(wl, wl[1:], torch.float16, "f16")
    else:
        run(wl, wl, torch.bfloat16, "bf16")

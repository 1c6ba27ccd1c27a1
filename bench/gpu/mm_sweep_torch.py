"""torch side of kiln's bf16 matmul sweep (anchor_bench --only MM4096,MM8192): torch.mm on the same shapes,
timed like the anchors (triton.testing.do_bench medians, CUDA events, L2 flushed). Prints one line per shape."""
import json
import sys

import torch
import triton.testing

sizes = [int(a) for a in sys.argv[1:]] or [4096, 8192]
torch.manual_seed(0)
for n in sizes:
    a = (torch.rand(n, n, device="cuda") * 2 - 1).to(torch.bfloat16)
    b = (torch.rand(n, n, device="cuda") * 2 - 1).to(torch.bfloat16)
    ms = triton.testing.do_bench(lambda: torch.mm(a, b), warmup=25, rep=200, return_mode="median")
    tf = 2 * n ** 3 / (ms * 1e-3) / 1e12
    print(f"torch.mm bf16 {n}^3: {ms:.4f} ms -> {tf:.1f} TFLOP/s")
    print("RESULT " + json.dumps({"sec": "MM", "wl": f"MM{n}", "fw": "torch", "var": "mm", "ms": ms, "TFLOPs": tf,
                                  "device": torch.cuda.get_device_name(0)}))

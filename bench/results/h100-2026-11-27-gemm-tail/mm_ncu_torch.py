"""torch.mm on one bf16 shape (MM<n> or MM<m>x<n>x<k>), 30 calls: a process for Nsight Compute to
profile cuBLAS's kernel in (which kernel, its grid and cluster, its tensor-pipe time)."""
import sys

import torch

wl = sys.argv[1] if len(sys.argv) > 1 else "MM4096"
dims = [int(d) for d in wl[2:].split("x")]
m, n, k = dims * 3 if len(dims) == 1 else dims
a = (torch.rand(m, k, device="cuda") * 2 - 1).to(torch.bfloat16)
b = (torch.rand(k, n, device="cuda") * 2 - 1).to(torch.bfloat16)
for _ in range(30):
    torch.mm(a, b)
torch.cuda.synchronize()

"""Frameworks' side of kiln's ragged segment-sum benchmark (anchor_bench --segments; issue 15).
segment_sum of x [N, R] float32 over S segments given by offsets, lengths from integer hashes
(the same as anchor_bench's segment_offsets), x[k] = the hash of k in [-1, 1):
  short   S = 2^18, lengths h % 16
  skewed  S = 2^17, every 512th segment 16384 + h % 16384 rows, the others h % 16
  long    S = 512, lengths 8192 + h % 16384
with h = (s * 2654435761) mod 2^32.
  torch-segment   torch.segment_reduce(x, "sum", offsets=offsets, axis=0)
  torch-index-add torch.zeros(S, R).index_add_(0, segment_ids, x) (atomics; ids precomputed, not timed)
GPU time per call from CUDA events around 200 back-to-back calls (median of 5 batches).
  python3 segment_anchor.py torch-segment|torch-index-add short|skewed|long [--width R]
Prints one human line and one RESULT json line."""
import argparse
import json
import statistics

import numpy as np
import torch

ap = argparse.ArgumentParser()
ap.add_argument("fw", choices=["torch-segment", "torch-index-add"])
ap.add_argument("dist", choices=["short", "skewed", "long"])
ap.add_argument("--width", type=int, default=1)
args = ap.parse_args()

S = {"short": 1 << 18, "skewed": 1 << 17, "long": 512}[args.dist]
s = np.arange(S, dtype=np.uint64)
h = ((s * np.uint64(2654435761)) & np.uint64(0xFFFFFFFF)).astype(np.int64)
lengths = h % 16
if args.dist == "skewed":
    lengths = np.where(s % 512 == 0, 16384 + h % 16384, lengths)
if args.dist == "long":
    lengths = 8192 + h % 16384
offsets = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
N, R = int(offsets[-1]), args.width
k = np.arange(N * R, dtype=np.uint64)
x = (-1 + 2 * ((k * np.uint64(2246822519)) & np.uint64(0xFFFFFFFF)).astype(np.float64) / 2.0**32).astype(np.float32)

dev = torch.device("cuda")
X = torch.from_numpy(x.reshape(N, R)).to(dev)
OFF = torch.from_numpy(offsets).to(dev)
if args.fw == "torch-segment":
    call = lambda: torch.segment_reduce(X, "sum", offsets=OFF, axis=0, unsafe=True)
else:
    ids = torch.repeat_interleave(torch.arange(S, device=dev), torch.from_numpy(lengths).to(dev))
    call = lambda: torch.zeros(S, R, device=dev).index_add_(0, ids, X)

y = call()
torch.cuda.synchronize()
times = []
for _ in range(5):
    a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    a.record()
    for _ in range(200):
        y = call()
    b.record()
    torch.cuda.synchronize()
    times.append(a.elapsed_time(b) / 200)
ms = statistics.median(times)
gbps = (N * R * 4 + (S + 1) * 8 + S * R * 4) / (ms * 1e6)
checksum = float(y.double().sum())
name = torch.cuda.get_device_name()
print(f"SEG {args.dist} R={R} {args.fw}: {ms:.4f} ms GPU per call ({gbps:.1f} GB/s); {N} rows in {S} segments, checksum {checksum:.6g}")
print("RESULT " + json.dumps({"sec": "SEG", "wl": f"SEG-{args.dist}-R{R}", "fw": args.fw, "ms": ms, "gbps": gbps,
                              "rows": N, "segments": S, "checksum": checksum, "device": name}))

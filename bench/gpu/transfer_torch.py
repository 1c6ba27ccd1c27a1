# The anchor of bench/transfer_bench.cc: 64 MiB in, W1, 64 MiB out per iteration in torch, the next
# input copied from pinned memory with non_blocking=True on a side stream while W1 runs, the output
# copied into pinned memory. Prints ms per iteration (median of 5 runs of 20 iterations).
import statistics
import time

import torch


def w1(x, a, b):
    return torch.tanh(x * a + b) * torch.sigmoid(x) + torch.exp(-torch.abs(b)) * 0.5 - x * x


def main():
    n = 1 << 24
    dev = torch.device("cuda")
    host_in = torch.full((n,), 0.5).pin_memory()
    host_out = torch.empty(n).pin_memory()
    a = torch.randn(n, device=dev)
    b = torch.randn(n, device=dev)
    copy = torch.cuda.Stream()
    for pinned in (True, False):
        src = host_in if pinned else torch.full((n,), 0.5)
        dst = host_out if pinned else torch.empty(n)
        times = []
        for _ in range(5):
            nxt = src.to(dev, non_blocking=pinned)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            for _ in range(20):
                cur = nxt
                y = w1(cur, a, b)
                with torch.cuda.stream(copy):
                    nxt = src.to(dev, non_blocking=pinned)
                cur.record_stream(torch.cuda.current_stream())
                dst.copy_(y, non_blocking=pinned)
                torch.cuda.current_stream().synchronize()
                torch.cuda.current_stream().wait_stream(copy)
            torch.cuda.synchronize()
            times.append((time.perf_counter() - t0) / 20 * 1e3)
        ms = statistics.median(times)
        print(f"torch pipeline W1 ({'pinned, non_blocking' if pinned else 'pageable, blocking'}): {ms:.3f} ms/iter, "
              f"{2 * n * 4 / ms / 1e6:.1f} GB/s in+out")


if __name__ == "__main__":
    main()

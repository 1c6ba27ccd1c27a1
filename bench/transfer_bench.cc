// Transfers beside compute (issue 18): an upload-compute-download pipeline on the default device,
// 64 MiB in, W1, 64 MiB out per iteration, the next input uploaded while the current W1 runs.
// Run it twice on cuda to compare uploads on the copy stream (default) with uploads queued on the
// compute stream (KILN_CUDA_COPY_STREAM=0); bench/gpu/transfer_torch.py is the same pipeline in
// torch with pinned memory and non_blocking copies.
#include <benchmark/benchmark.h>

#include <vector>

#include "bench/workloads.h"
#include "kiln/kiln.h"

namespace kiln::bench {
namespace {

constexpr int64_t kN = int64_t(1) << 24;  // floats: 64 MiB

void BM_PipelineW1(benchmark::State& s) {
  std::vector<float> in(size_t(kN), 0.5f), out(static_cast<size_t>(kN));
  Tensor a = randn({kN}, 1).realize(), b = randn({kN}, 2).realize();
  Tensor next = from_vector(in, {kN});
  w1(next, a, b).to_vector<float>();  // compiled once
  for (auto _ : s) {
    Tensor cur = next;
    Tensor y = w1(cur, a, b);
    y.realize();                     // queued
    next = from_vector(in, {kN});    // the next input, while W1 runs
    y.copy_to(out.data(), kN);       // waits for W1, then downloads into memory reused each time
    benchmark::DoNotOptimize(out.data());
  }
  s.counters["GB/s in+out"] = benchmark::Counter(2.0 * double(kN) * 4, benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK(BM_PipelineW1)->Unit(benchmark::kMillisecond)->UseRealTime()->MinTime(1.0);

}  // namespace
}  // namespace kiln::bench

BENCHMARK_MAIN();

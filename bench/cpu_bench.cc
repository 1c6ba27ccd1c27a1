// CPU benchmarks of BENCH.md's W1-W4 and W6, fused and unfused (KILN_FUSION=0), and a 3x3
// convolution beside the matmul of its size.
//
//   build/bench/cpu_bench --benchmark_counters_tabular=true
//
// GB/s counts the minimal traffic (each input read once, each output written once); "copy" is
// the same machine's memcpy bandwidth (bytes read + written) for comparison.
#include <benchmark/benchmark.h>

#include <cstdlib>
#include <cstring>
#include <vector>

#include "bench/workloads.h"

namespace kiln::bench {
namespace {

void set_fusion(bool on) {
  if (on) unsetenv("KILN_FUSION");
  else setenv("KILN_FUSION", "0", 1);
}

// Times a kiln::jit replay of `fn` on `inputs` (traced and compiled before the timing), the
// way jax.jit and torch.compile are timed.
void run(benchmark::State& state, Jit::Fn fn, const std::vector<Tensor>& inputs, double bytes) {
  bool fused = state.range(0) != 0;
  set_fusion(fused);
  Jit f(std::move(fn));
  f(inputs);  // trace + compile outside the timing
  int64_t launched_before = stats().kernels_launched;
  int64_t iters = 0;
  for (auto _ : state) {
    std::vector<Tensor> y = f(inputs);
    benchmark::DoNotOptimize(y);
    ++iters;
  }
  set_fusion(true);
  state.counters["GB/s"] = benchmark::Counter(bytes / 1e9, benchmark::Counter::kIsIterationInvariantRate);
  state.counters["kernels"] = double(stats().kernels_launched - launched_before) / double(std::max<int64_t>(iters, 1));
  state.SetLabel(fused ? "fused" : "unfused");
}

using V = std::vector<Tensor>;

void W1(benchmark::State& s) {
  const int64_t n = int64_t(1) << 24;
  static Tensor x = randn({n}, 1).realize(), a = randn({n}, 2).realize(), b = randn({n}, 3).realize();
  run(s, [](const V& in) { return V{w1(in[0], in[1], in[2])}; }, {x, a, b}, 4.0 * 4 * double(n));
}
void W2(benchmark::State& s) {
  static Tensor x = randn({8192, 8192}, 4).realize();
  run(s, [](const V& in) { return V{w2(in[0])}; }, {x}, 2.0 * 4 * 8192 * 8192);
}
void W3(benchmark::State& s) {
  static Tensor x = randn({16384, 4096}, 5).realize(), w = rand({4096}, 6).realize(), b = randn({4096}, 7).realize();
  run(s, [](const V& in) { return V{w3(in[0], in[1], in[2])}; }, {x, w, b}, 2.0 * 4 * 16384 * 4096);
}
void W4a(benchmark::State& s) {
  static Tensor x = rand({int64_t(1) << 26}, 8).realize();
  run(s, [](const V& in) { return V{w4a(in[0])}; }, {x}, 4.0 * double(int64_t(1) << 26));
}
void W4b(benchmark::State& s) {
  static Tensor x = randn({16384, 4096}, 9).realize();
  run(s, [](const V& in) { return V{w4b(in[0])}; }, {x}, 4.0 * 16384 * 4096);
}
void W6(benchmark::State& s) {
  static Tensor x = randn({4096}, 10).realize();
  run(s, [](const V& in) { return V{w6(in[0])}; }, {x}, 2.0 * 4 * 4096);
}

// A ResNet-style 3x3 convolution, 64 -> 64 channels over 56x56 (padding 1), and the matmul of the
// same size (M = 56*56, K = 64*9, N = 64) for comparison.
void Conv3x3(benchmark::State& s) {
  static Tensor x = randn({1, 64, 56, 56}, 11).realize(), w = randn({64, 64, 3, 3}, 12).realize();
  ConvOptions o;
  o.padding = {{1, 1}, {1, 1}};
  run(s, [o](const V& in) { return V{conv(in[0], in[1], o)}; }, {x, w}, 4.0 * (64 * 56 * 56 * 2 + 64 * 64 * 9));
  s.counters["GFLOP/s"] = benchmark::Counter(2.0 * 56 * 56 * 64 * 64 * 9 / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}
void MatmulOfConvSize(benchmark::State& s) {
  static Tensor a = randn({56 * 56, 64 * 9}, 13).realize(), b = randn({64 * 9, 64}, 14).realize();
  run(s, [](const V& in) { return V{matmul(in[0], in[1])}; }, {a, b}, 4.0 * (56 * 56 * 64 * 10 + 64 * 64 * 9));
  s.counters["GFLOP/s"] = benchmark::Counter(2.0 * 56 * 56 * 64 * 64 * 9 / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

void Copy(benchmark::State& state) {
  const size_t n = size_t(1) << 28;  // 256 MiB
  std::vector<char> src(n, 1), dst(n, 0);
  for (auto _ : state) {
    std::memcpy(dst.data(), src.data(), n);
    benchmark::DoNotOptimize(dst.data());
    benchmark::ClobberMemory();
  }
  state.counters["GB/s"] = benchmark::Counter(2.0 * double(n) / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

BENCHMARK(Copy)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(W1)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(W2)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(W3)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(W4a)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(W4b)->Arg(1)->Arg(0)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(W6)->Arg(1)->Arg(0)->Unit(benchmark::kMicrosecond)->UseRealTime();
BENCHMARK(Conv3x3)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();
BENCHMARK(MatmulOfConvSize)->Arg(1)->Unit(benchmark::kMillisecond)->UseRealTime();

}  // namespace
}  // namespace kiln::bench

BENCHMARK_MAIN();

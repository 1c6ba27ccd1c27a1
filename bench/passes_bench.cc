// How the passes scale with graph size (issue 14): the time for every pass (simplify through the
// Program verifier, no code generation) on graphs of up to 10,000 nodes of three shapes:
//   chain     N dependent elementwise ops on one tensor (fuses into one kernel)
//   mlp       N/4 layers of matmul + bias + relu (a kernel per layer)
//   fanout    N/2 independent small outputs of one input (N/2 kernels, horizontal fusion)
//
//   build/bench/passes_bench [--benchmark_filter=...]
#include <benchmark/benchmark.h>

#include <vector>

#include "frontend/capture.h"
#include "kiln/kiln.h"
#include "passes/pipeline.h"

namespace kiln::bench {
namespace {

ir::TargetInfo target(bool gpu) {
  ir::TargetInfo t;
  t.parallelism = gpu ? 132 : 2;
  t.is_gpu = gpu;
  t.max_workgroup = gpu ? 1024 : 1;
  t.subgroup_size = gpu ? 32 : 1;
  t.max_fused_row = gpu ? 16384 : int64_t(1) << 40;
  return t;
}

std::vector<Tensor> chain(int n) {
  Tensor x = from_vector(std::vector<float>(4096, 0.5f), {4096});
  for (int i = 0; i < n; ++i) x = i % 2 == 0 ? x * 1.0001 + 0.001 : tanh(x);
  return {x};
}

std::vector<Tensor> mlp(int n) {
  Tensor x = from_vector(std::vector<float>(8 * 64, 0.5f), {8, 64});
  Tensor w = from_vector(std::vector<float>(64 * 64, 0.01f), {64, 64});
  Tensor b = from_vector(std::vector<float>(64, 0.1f), {64});
  for (int i = 0; i < n / 4; ++i) x = relu(matmul(x, w) + b);
  return {x};
}

std::vector<Tensor> fanout(int n) {
  Tensor x = from_vector(std::vector<float>(256, 0.5f), {256});
  std::vector<Tensor> outs;
  for (int i = 0; i < n / 2; ++i) outs.push_back(x * double(i + 1));
  return outs;
}

void run(benchmark::State& state, std::vector<Tensor> (*make)(int), bool gpu) {
  std::vector<std::shared_ptr<runtime::Buffer>> bufs;
  ir::Graph g = detail::capture(make(int(state.range(0))), &bufs);
  passes::Options o;
  size_t kernels = 0;
  for (auto _ : state) {
    auto c = passes::compile_graph(g, target(gpu), o);
    if (!c.ok()) {
      state.SkipWithError(std::string(c.status().message()).c_str());
      return;
    }
    kernels = c->program.kernels.size();
  }
  state.counters["nodes"] = double(g.size());
  state.counters["kernels"] = double(kernels);
}

void Chain(benchmark::State& s) { run(s, chain, false); }
void Mlp(benchmark::State& s) { run(s, mlp, false); }
void Fanout(benchmark::State& s) { run(s, fanout, false); }
void MlpGpu(benchmark::State& s) { run(s, mlp, true); }

BENCHMARK(Chain)->Arg(100)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);
BENCHMARK(Mlp)->Arg(100)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);
BENCHMARK(Fanout)->Arg(100)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);
BENCHMARK(MlpGpu)->Arg(1000)->Arg(10000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace kiln::bench

BENCHMARK_MAIN();

// The host path (issue 17's targets, on this CPU): what recording an op, a cached realize and a
// kiln::jit replay cost the host before any device work. BM_Record* record ops without
// realizing; BM_CachedLookupW6 records W6 and finds its executable the long way (build the
// graph, hash it, find and compare the cached executable: what a realize pays when its walk
// matches no shortcut); BM_RealizeW6 and BM_JitW6 are whole calls on the default device (on the
// CPU they include the fused kernel's own time; BM_KernelW6 is that kernel alone, replayed
// through its executable), on 4096 elements and on 16 (where the kernel's time all but
// vanishes); BM_RealizeW6NewScalarEachCall is BM_RealizeW6 times a scalar that changes every
// call (a param: no compile); BM_TraceHooksWhenOff is what the profiler's hooks cost a replay when no profile is on.
#include <benchmark/benchmark.h>

#include "bench/workloads.h"
#include "frontend/capture.h"
#include "kiln/kiln.h"
#include "replay/compile_or_replay.h"
#include "replay/executable_cache.h"
#include "frontend/lazy.h"
#include "support/trace.h"

namespace kiln::bench {
namespace {

void BM_RecordElementwiseOp(benchmark::State& s) {
  Tensor x = randn({4096}, 1).realize();
  for (auto _ : s) {
    Tensor y = x;
    for (int i = 0; i < 64; ++i) y = y * 1.0001;
    benchmark::DoNotOptimize(y);
  }
  s.SetItemsProcessed(int64_t(s.iterations()) * 64);
}

void BM_RecordW6(benchmark::State& s) {
  Tensor x = randn({4096}, 2).realize();
  for (auto _ : s) benchmark::DoNotOptimize(w6(x));
}

void BM_CachedLookupW6(benchmark::State& s) {
  Tensor x = randn({4096}, 3).realize();
  w6(x).realize();  // compiled once
  runtime::Device* device = detail::node_of(x)->device;
  for (auto _ : s) {
    Tensor y = w6(x);
    std::vector<std::shared_ptr<runtime::Buffer>> inputs;
    ir::Graph g = detail::capture({y}, &inputs);
    auto e = replay::compile_graph(device, g);
    if (!e.ok()) s.SkipWithError(std::string(e.status().message()).c_str());
    benchmark::DoNotOptimize(e);
  }
}

// On s.range(0) elements: at 16 the kernel's own time all but vanishes, leaving the host path
// (record, walk, shortcut check, output allocation, launch) and the backend's dispatch.
void BM_RealizeW6(benchmark::State& s) {
  Tensor x = randn({s.range(0)}, 4).realize();
  w6(x).realize();
  for (auto _ : s) benchmark::DoNotOptimize(w6(x).realize());
  default_device().synchronize();
}

// W6 scaled by a value that changes every call (a learning-rate schedule): the value is a param
// (ir/params.h), so each call replays the one executable like BM_RealizeW6 instead of compiling.
void BM_RealizeW6NewScalarEachCall(benchmark::State& s) {
  Tensor x = randn({s.range(0)}, 7).realize();
  double lr = 0.0123;  // not one of w6's own constants (an equal value would be the same param)
  (w6(x) * lr).realize();
  reset_stats();
  for (auto _ : s) {
    lr += 1e-7;
    benchmark::DoNotOptimize((w6(x) * lr).realize());
  }
  default_device().synchronize();
  s.counters["executables_built"] = double(stats().executables_built);
}

void BM_JitW6(benchmark::State& s) {
  Tensor x = randn({s.range(0)}, 5).realize();
  auto f = jit([](const std::vector<Tensor>& in) { return std::vector<Tensor>{w6(in[0])}; });
  f({x});
  for (auto _ : s) benchmark::DoNotOptimize(f({x}));
  default_device().synchronize();
}

void BM_KernelW6(benchmark::State& s) {
  Tensor x = randn({s.range(0)}, 6).realize();
  Tensor y = w6(x);
  runtime::Device* device = detail::node_of(x)->device;
  std::vector<std::shared_ptr<runtime::Buffer>> inputs;
  ir::Graph g = detail::capture({y}, &inputs);
  auto e = replay::compile_graph(device, g);
  if (!e.ok()) {
    s.SkipWithError(std::string(e.status().message()).c_str());
    return;
  }
  for (auto _ : s) benchmark::DoNotOptimize(replay::run_compiled(**e, inputs));
  default_device().synchronize();
}

// What profiling costs a replay when no profile is on: the spans and the run record every
// replay creates (realize, lookup, run), each one relaxed atomic load.
void BM_TraceHooksWhenOff(benchmark::State& s) {
  for (auto _ : s) {
    support::TraceSpan realize("realize");
    support::TraceSpan lookup("hash + executable cache lookup");
    support::TraceSpan run("run (bind + launch)");
    support::TraceRun record(1, "cpu", 1);
    benchmark::DoNotOptimize(&record);
  }
}

BENCHMARK(BM_TraceHooksWhenOff);
BENCHMARK(BM_RecordElementwiseOp);
BENCHMARK(BM_RecordW6)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_CachedLookupW6)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RealizeW6)->Arg(4096)->Arg(16)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_RealizeW6NewScalarEachCall)->Arg(4096)->Arg(16)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_JitW6)->Arg(4096)->Arg(16)->Unit(benchmark::kMicrosecond);
BENCHMARK(BM_KernelW6)->Arg(4096)->Arg(16)->Unit(benchmark::kMicrosecond);
}  // namespace
}  // namespace kiln::bench

BENCHMARK_MAIN();

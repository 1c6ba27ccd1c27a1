// Side-by-side benchmark of BENCH.md's W1-W7 on any kiln device (cuda, vulkan, cpu).
//
//   gpu_bench --device cuda [--json out.jsonl] [--only W1,W2]
//   gpu_bench --device cuda --compile W1     (W7: one cold or warm start; run in a fresh process)
//
// Times are pipelined wall time per call of a kiln::jit replay (back-to-back calls, one device
// synchronize per batch, median of 5 batches), the same method as the JAX anchors. GB/s counts
// the minimal traffic (each input read once, each output written once).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <string>
#include <vector>

#include "bench/workloads.h"
#include "kiln/kiln.h"
#include <cmath>
#include <functional>

namespace kiln::bench {
namespace {

using V = std::vector<Tensor>;
using Clock = std::chrono::steady_clock;

struct Workload {
  const char* id;
  std::function<V()> inputs;
  Jit::Fn fn;
  double bytes;  // minimal traffic
  double flops;  // for W5
};

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Median pipelined seconds per call.
double time_calls(Jit& f, const V& in, const Device& dev) {
  f(in);
  dev.synchronize();
  // Calibrate a batch of about 100 ms.
  int n = 1;
  for (;;) {
    auto t0 = Clock::now();
    for (int i = 0; i < n; ++i) f(in);
    dev.synchronize();
    double s = seconds_since(t0);
    if (s > 0.1 || n >= (1 << 20)) break;
    n = s <= 0 ? n * 10 : std::max(n * 2, int(double(n) * 0.12 / s));
  }
  std::vector<double> per;
  for (int b = 0; b < 5; ++b) {
    auto t0 = Clock::now();
    for (int i = 0; i < n; ++i) f(in);
    dev.synchronize();
    per.push_back(seconds_since(t0) / n);
  }
  std::sort(per.begin(), per.end());
  return per[2];
}

std::vector<Workload> workloads(const Device& dev) {
  std::vector<Workload> w;
  const int64_t n1 = int64_t(1) << 24;
  w.push_back({"W1", [=] { return V{randn({n1}, 1, float32, dev), randn({n1}, 2, float32, dev), randn({n1}, 3, float32, dev)}; },
               [](const V& i) { return V{w1(i[0], i[1], i[2])}; }, 4.0 * 4 * double(n1), 0});
  w.push_back({"W2", [=] { return V{randn({8192, 8192}, 4, float32, dev)}; }, [](const V& i) { return V{w2(i[0])}; },
               2.0 * 4 * 8192 * 8192, 0});
  w.push_back({"W3", [=] { return V{randn({16384, 4096}, 5, float32, dev), rand({4096}, 6, float32, dev), randn({4096}, 7, float32, dev)}; },
               [](const V& i) { return V{w3(i[0], i[1], i[2])}; }, 2.0 * 4 * 16384 * 4096, 0});
  w.push_back({"W4a", [=] { return V{rand({int64_t(1) << 26}, 8, float32, dev)}; }, [](const V& i) { return V{w4a(i[0])}; },
               4.0 * double(int64_t(1) << 26), 0});
  w.push_back({"W4b", [=] { return V{randn({16384, 4096}, 9, float32, dev)}; }, [](const V& i) { return V{w4b(i[0])}; },
               4.0 * 16384 * 4096, 0});
  const int64_t d = 4096;
  w.push_back({"W5",
               [=] {
                 double s = 1.0 / std::sqrt(double(d));
                 return V{randn({d, d}, 11, bfloat16, dev), (randn({d, d}, 12, float32, dev) * s).cast(bfloat16),
                          randn({d}, 13, bfloat16, dev), (randn({d, d}, 14, float32, dev) * s).cast(bfloat16),
                          randn({d}, 15, bfloat16, dev)};
               },
               [](const V& i) { return V{w5(i[0], i[1], i[2], i[3], i[4])}; }, 0, 2.0 * 2 * double(d) * d * d});
  w.push_back({"W6", [=] { return V{randn({4096}, 16, float32, dev)}; }, [](const V& i) { return V{w6(i[0])}; },
               2.0 * 4 * 4096, 0});
  return w;
}

int compile_mode(const Device& dev, const std::string& id) {
  // W7: the first realize in this process (cold or warm disk cache, chosen by the caller).
  for (Workload& w : workloads(dev)) {
    if (id != w.id) continue;
    V in = w.inputs();
    realize(in);
    dev.synchronize();
    reset_stats();
    auto t0 = Clock::now();
    Jit f(w.fn);
    V out = f(in);
    dev.synchronize();
    double ms = seconds_since(t0) * 1e3;
    Stats s = stats();
    std::printf("{\"workload\": \"W7-%s\", \"device\": \"%s\", \"first_call_ms\": %.2f, \"kernels_compiled\": %lld, "
                "\"kernel_disk_cache_hits\": %lld}\n",
                w.id, dev.name().c_str(), ms, (long long)s.kernels_compiled, (long long)s.kernel_disk_cache_hits);
    return 0;
  }
  std::fprintf(stderr, "unknown workload %s\n", id.c_str());
  return 2;
}

}  // namespace
}  // namespace kiln::bench

int main(int argc, char** argv) {
  using namespace kiln;
  std::string device = "cpu", json, only, compile;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string a = argv[i];
    if (a == "--device") device = argv[i + 1];
    else if (a == "--json") json = argv[i + 1];
    else if (a == "--only") only = argv[i + 1];
    else if (a == "--compile") compile = argv[i + 1];
  }
  auto dev = Device::get(device);
  if (!dev.ok()) {
    std::fprintf(stderr, "gpu_bench: %s\n", std::string(dev.status().message()).c_str());
    return 1;
  }
  try {
    if (!compile.empty()) return bench::compile_mode(*dev, compile);
    std::FILE* out = json.empty() ? nullptr : std::fopen(json.c_str(), "a");
    std::printf("device: %s\n%-5s %12s %10s %10s %8s\n", dev->description().c_str(), "id", "us/call", "GB/s", "TFLOP/s", "kernels");
    for (bench::Workload& w : bench::workloads(*dev)) {
      if (!only.empty() && ("," + only + ",").find(std::string(",") + w.id + ",") == std::string::npos) continue;
      std::vector<Tensor> in = w.inputs();
      realize(in);
      Jit f(w.fn);
      reset_stats();
      f(in);
      int64_t kernels = stats().kernels_launched;
      double s = bench::time_calls(f, in, *dev);
      double gbs = w.bytes > 0 ? w.bytes / s / 1e9 : 0, tf = w.flops > 0 ? w.flops / s / 1e12 : 0;
      std::printf("%-5s %12.2f %10.1f %10.1f %8lld\n", w.id, s * 1e6, gbs, tf, (long long)kernels);
      if (out)
        std::fprintf(out, "{\"workload\": \"%s\", \"device\": \"%s\", \"us_per_call\": %.3f, \"GBps\": %.2f, \"TFLOPs\": %.2f, \"kernels\": %lld}\n",
                     w.id, dev->name().c_str(), s * 1e6, gbs, tf, (long long)kernels);
    }
    if (out) std::fclose(out);
  } catch (const Error& e) {
    std::fprintf(stderr, "gpu_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}

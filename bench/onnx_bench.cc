// ONNX models end to end (issue 12's speed bench): for each model, the import
// (kiln::onnx::load: parse, check, fold shapes, upload initializers), the first call (trace,
// every pass, code generation and the device compiler, then one run) and steady-state calls
// (replays), on any device. Run times are wall time per call up to the results being ready
// (the device is synchronized after each call), the median of --iters calls.
//
//   onnx_bench [--device NAME] [--iters N] [--dim N] [--results FILE] model.onnx...
//
// Inputs are random values of the declared shapes (a symbolic dimension takes --dim, default 1;
// integer inputs are zeros). Prints one line per model and, with --results, appends one JSON
// object per model to FILE. bench/onnx/speed.py runs it beside onnxruntime; on the GPU machine
// bench/onnx/torch_speed.py times the same PyTorch models.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include "kiln/kiln.h"
#include "kiln/onnx.h"

namespace {

double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

kiln::Tensor input_for(const kiln::onnx::ValueSpec& v, int64_t dim, const kiln::Device& device, uint64_t seed) {
  kiln::Shape shape = v.shape;
  for (int64_t& d : shape)
    if (d < 0) d = dim;
  if (kiln::is_float(v.dtype)) return kiln::randn(shape, seed, v.dtype, device).realize();
  return kiln::zeros(shape, v.dtype, device).realize();
}

int usage() {
  std::fprintf(stderr, "usage: onnx_bench [--device NAME] [--iters N] [--dim N] [--results FILE] model.onnx...\n");
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  std::string device_name, results;
  int iters = 50;
  int64_t dim = 1;
  std::vector<std::string> models;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto next = [&]() -> const char* { return i + 1 < argc ? argv[++i] : nullptr; };
    const char* v = nullptr;
    if (a == "--device" && (v = next())) device_name = v;
    else if (a == "--iters" && (v = next())) iters = std::max(1, std::atoi(v));
    else if (a == "--dim" && (v = next())) dim = std::max<int64_t>(1, std::atoll(v));
    else if (a == "--results" && (v = next())) results = v;
    else if (!a.empty() && a[0] != '-') models.push_back(a);
    else return usage();
  }
  if (models.empty()) return usage();
  try {
    kiln::Device device = device_name.empty() ? kiln::default_device() : kiln::Device(device_name);
    std::printf("onnx_bench on %s (%s), median of %d calls\n", device.name().c_str(), device.description().c_str(), iters);
    std::printf("%-40s %10s %12s %12s %12s %8s\n", "model", "import ms", "1st call ms", "compile ms", "run us", "kernels");
    for (const std::string& path : models) {
      auto t0 = std::chrono::steady_clock::now();
      kiln::onnx::Model m = kiln::onnx::load(path, device);
      const double import_ms = ms_since(t0);
      std::vector<kiln::Tensor> in;
      for (size_t k = 0; k < m.inputs().size(); ++k) in.push_back(input_for(m.inputs()[k], dim, device, 1000 + k));
      device.synchronize();
      auto call = [&] {
        std::vector<kiln::Tensor> out = m(in);
        for (kiln::Tensor& t : out) t.realize();
        device.synchronize();
      };
      kiln::reset_stats();
      t0 = std::chrono::steady_clock::now();
      call();
      const double first_ms = ms_since(t0);
      const int64_t compiled = kiln::stats().kernels_compiled;
      call();  // a warm-up replay
      kiln::reset_stats();
      std::vector<double> us;
      for (int i = 0; i < iters; ++i) {
        t0 = std::chrono::steady_clock::now();
        call();
        us.push_back(ms_since(t0) * 1000);
      }
      const double kernels = double(kiln::stats().kernels_launched) / iters;
      std::sort(us.begin(), us.end());
      const double run_us = us[us.size() / 2];
      const double compile_ms = std::max(0.0, first_ms - run_us / 1000);
      std::string name = path.substr(path.find_last_of('/') == std::string::npos ? 0 : path.find_last_of('/') + 1);
      if (name == "model.onnx" && path.find('/') != std::string::npos) {  // tests/onnx/models/<name>/model.onnx
        std::string dir = path.substr(0, path.find_last_of('/'));
        name = dir.substr(dir.find_last_of('/') == std::string::npos ? 0 : dir.find_last_of('/') + 1);
      }
      std::printf("%-40s %10.2f %12.2f %12.2f %12.1f %8.1f\n", name.c_str(), import_ms, first_ms, compile_ms, run_us, kernels);
      if (!results.empty()) {
        std::ofstream f(results, std::ios::app);
        f << "{\"model\": \"" << name << "\", \"device\": \"" << device.name() << "\", \"import_ms\": " << import_ms
          << ", \"first_call_ms\": " << first_ms << ", \"compile_ms\": " << compile_ms << ", \"run_us_median\": " << run_us
          << ", \"run_us_min\": " << us.front() << ", \"kernels_per_call\": " << kernels << ", \"kernels_compiled\": " << compiled
          << ", \"dim\": " << dim << "}\n";
      }
    }
  } catch (const kiln::Error& e) {
    std::fprintf(stderr, "onnx_bench: %s\n", e.what());
    return 1;
  }
  return 0;
}

// Start-up cost on a device (--device cpu|cuda|vulkan, default cpu): loading a .kiln artifact and
// getting the first result, against the JIT's first call with an empty kernel cache (cold:
// passes + LLVM / NVRTC / shaderc) and with a filled one (warm: passes + disk cache reads). On
// CUDA also a section made for an older GPU (cuda:sm_80), which loads through its PTX (the
// driver's JIT). Each start is measured in this process after dropping the
// in-memory executable cache; cold starts get a fresh KILN_CACHE_DIR each time. Medians of
// --repeats (default 15), and the replay of a loaded model alone for scale. Prints a table and
// one JSON line per model.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

#include "artifact/compile.h"
#include "kiln/kiln.h"
#include "replay/compile_or_replay.h"

namespace {

using Clock = std::chrono::steady_clock;
using kiln::Tensor;

struct Model {
  std::string name;
  kiln::Jit::Fn fn;
  std::vector<Tensor> inputs;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

template <typename F>
double ms(F f) {
  auto t0 = Clock::now();
  f();
  return std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  int repeats = 15;
  std::string device = "cpu";
  for (int i = 1; i + 1 < argc; ++i) {
    if (std::string(argv[i]) == "--repeats") repeats = std::atoi(argv[i + 1]);
    if (std::string(argv[i]) == "--device") device = argv[i + 1];
  }
  kiln::Device dev(device);
  if (!kiln::set_default_device(device).ok()) return 1;
  Tensor w1 = kiln::randn({512, 512}, 7) * 0.05;
  w1.realize();  // a buffer, so the export captures it as a 1 MiB constant (not a random node)
  std::vector<Model> models = {
      {"mlp 256x512 -> 512 -> 10 (w1 captured, 1 MiB constant)",
       [w1](const std::vector<Tensor>& in) {
         return std::vector<Tensor>{kiln::softmax(kiln::matmul(kiln::relu(kiln::matmul(in[0], w1) + in[1]), in[2]), -1)};
       },
       {kiln::randn({256, 512}, 1), kiln::randn({512}, 2), kiln::randn({512, 10}, 3) * 0.05}},
      {"softmax 1024x1024", [](const std::vector<Tensor>& in) { return std::vector<Tensor>{kiln::softmax(in[0], -1)}; },
       {kiln::randn({1024, 1024}, 4)}},
      {"layer_norm + gelu 512x1024",
       [](const std::vector<Tensor>& in) {
         return std::vector<Tensor>{kiln::gelu(kiln::layer_norm(in[0], in[1], in[2]))};
       },
       {kiln::randn({512, 1024}, 5), kiln::ones({1024}), kiln::zeros({1024})}},
  };
  std::filesystem::path tmp = std::filesystem::temp_directory_path() / "kiln_aot_load_bench";
  std::filesystem::remove_all(tmp);
  std::filesystem::create_directories(tmp);
  std::printf("%-55s %12s %12s %14s %10s %9s %16s\n", ("model (" + device + ")").c_str(), "jit cold ms", "jit warm ms",
              "kiln::load ms", "replay ms", "compiled", device == "cuda" ? "load sm_80 PTX ms" : "");
  for (const Model& m : models) {
    auto first_result = [&](const std::vector<Tensor>& outs) { outs[0].to_vector<float>(); };
    std::vector<double> cold, warm, load, replay;
    int64_t compiled_by_load = 0;
    std::string warm_dir = (tmp / "warm").string();
    for (int r = 0; r < repeats; ++r) {
      std::string cold_dir = (tmp / ("cold" + std::to_string(r))).string();
      setenv("KILN_CACHE_DIR", cold_dir.c_str(), 1);
      kiln::replay::clear_executable_cache();
      cold.push_back(ms([&] { first_result(kiln::Jit(m.fn)(m.inputs)); }));
      setenv("KILN_CACHE_DIR", warm_dir.c_str(), 1);
      kiln::replay::clear_executable_cache();
      kiln::Jit(m.fn)(m.inputs);  // fills the warm cache on the first round
      kiln::replay::clear_executable_cache();
      warm.push_back(ms([&] { first_result(kiln::Jit(m.fn)(m.inputs)); }));
    }
    std::string path = (tmp / "model.kiln").string();
    auto graph = kiln::ir::parse_exported(kiln::export_graph(m.fn, m.inputs));
    auto art = kiln::artifact::compile(*graph, {{device, ""}});
    if (!art.ok() || !kiln::artifact::write_file(path, *art).ok()) return 1;
    size_t bytes = std::filesystem::file_size(path);
    for (int r = 0; r < repeats; ++r) {
      kiln::reset_stats();
      load.push_back(ms([&] {
        kiln::Model model = kiln::load(path, dev);
        first_result(model(m.inputs));
      }));
      compiled_by_load += kiln::stats().kernels_compiled;
      kiln::Model model = kiln::load(path, dev);
      first_result(model(m.inputs));
      replay.push_back(ms([&] { first_result(model(m.inputs)); }));  // the run alone, for scale
    }
    // CUDA: the same model from a section for an older architecture (the driver compiles its PTX).
    std::vector<double> ptx;
    if (device == "cuda") {
      std::string old = (tmp / "old.kiln").string();
      auto sm80 = kiln::artifact::compile(*graph, {{"cuda", "sm_80"}});
      if (!sm80.ok() || !kiln::artifact::write_file(old, *sm80).ok()) return 1;
      for (int r = 0; r < repeats; ++r)
        ptx.push_back(ms([&] {
          kiln::Model model = kiln::load(old, dev);
          first_result(model(m.inputs));
        }));
    }
    const double ptx_ms = ptx.empty() ? NAN : median(ptx);
    std::printf("%-55s %12.2f %12.2f %14.2f %10.2f %9lld %16.2f\n", m.name.c_str(), median(cold), median(warm), median(load),
                median(replay), (long long)compiled_by_load, ptx_ms);
    std::printf("{\"model\": \"%s\", \"device\": \"%s\", \"repeats\": %d, \"jit_cold_ms\": %.3f, \"jit_warm_ms\": %.3f, "
                "\"load_first_result_ms\": %.3f, \"replay_ms\": %.3f, \"kernels_compiled_by_load\": %lld, "
                "\"artifact_bytes\": %zu, \"load_older_section_via_ptx_ms\": %s}\n",
                m.name.c_str(), device.c_str(), repeats, median(cold), median(warm), median(load), median(replay),
                (long long)compiled_by_load, bytes, ptx.empty() ? "null" : std::to_string(ptx_ms).c_str());
  }
  std::filesystem::remove_all(tmp);
  return 0;
}

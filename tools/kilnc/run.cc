// kilnc run: an artifact (loaded, nothing compiled) or IR text (compiled for the device first)
// on .npy inputs; outputs to DIR/<name>.npy, then kiln's counters on one line.
#include <cstdio>
#include <filesystem>
#include <map>

#include "absl/strings/str_cat.h"
#include "artifact/compile.h"
#include "frontend/lazy.h"
#include "frontend/model_loader.h"
#include "kiln/kiln.h"
#include "runtime/device.h"
#include "tools/kilnc/commands.h"
#include "tools/kilnc/npy.h"

namespace kiln::kilnc {
namespace {

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

Model open_model(const std::string& path, const Device& device, const std::vector<std::string>& input_shapes) {
  if (ends_with(path, ".kiln")) return load(path, device);
  auto graph = read_graph_file(path, input_shapes);
  throw_if_error(graph.status());
  runtime::Device* dev = detail::impl_of(device);
  auto art = artifact::compile(*graph, {{dev->name(), ""}});
  throw_if_error(art.status());
  return detail::load_model(*art, dev, path);
}

Tensor upload(const NpyArray& a, const Device& device) {
  runtime::Device* dev = detail::impl_of(device);
  auto buf = dev->alloc(int64_t(a.data.size()));
  throw_if_error(buf.status());
  throw_if_error(dev->upload(buf->get(), a.data.data(), int64_t(a.data.size())));
  return detail::from_buffer(*std::move(buf), a.dtype, a.shape);
}

NpyArray download(const Tensor& t) {
  t.realize();
  NpyArray a{t.dtype(), t.shape(), std::string(size_t(shape_numel(t.shape()) * dtype_size(t.dtype())), '\0')};
  const auto& node = detail::node_of(t);
  throw_if_error(node->device->download(node->buffer.get(), a.data.data(), int64_t(a.data.size())));
  return a;
}

int run(const Args& a) {
  if (a.positional.size() != 1) return fail("run", absl::InvalidArgumentError("expects one model (.kiln) or IR file"));
  Device device = a.has("device") ? Device(a.get("device")) : default_device();
  Model m = open_model(a.positional[0], device, a.all("input-shape"));
  std::map<std::string, Tensor> inputs;
  for (const std::string& spec : a.all("input")) {
    size_t eq = spec.find('=');
    if (eq == std::string::npos) return fail("run", absl::InvalidArgumentError(absl::StrCat("--input ", spec, ": expected NAME=file.npy")));
    std::string name = spec.substr(0, eq);
    auto arr = read_npy(spec.substr(eq + 1));
    if (!arr.ok()) return fail("run", arr.status());
    if (!inputs.emplace(name, upload(*arr, device)).second)
      return fail("run", absl::InvalidArgumentError(absl::StrCat("--input ", name, " is given twice")));
  }
  std::vector<Tensor> outs = m(inputs);
  std::string dir = a.get("output-dir", ".");
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  for (size_t k = 0; k < outs.size(); ++k) {
    const TensorInfo& info = m.outputs()[k];
    std::string path = (std::filesystem::path(dir) / (info.name + ".npy")).string();
    if (absl::Status s = write_npy(path, download(outs[k])); !s.ok()) return fail("run", s);
    std::printf("output %s : %s%s -> %s\n", info.name.c_str(), dtype_name(info.dtype), shape_str(info.shape).c_str(), path.c_str());
  }
  std::printf("target: %s on %s\nstats: %s\n", m.target().c_str(), m.device().description().c_str(), stats().to_string().c_str());
  return 0;
}

}  // namespace

int run_command(const Args& a) {
  try {
    return run(a);
  } catch (const Error& e) {
    return fail("run", e.status());
  }
}

}  // namespace kiln::kilnc

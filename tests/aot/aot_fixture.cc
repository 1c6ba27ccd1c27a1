#include "aot/aot_fixture.h"

#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "frontend/lazy.h"
#include "runtime/device.h"
#include "testing/reference.h"
#include "testing/temp_dir.h"

namespace kiln::testing {

std::vector<Example> examples() {
  Tensor w1 = random_tensor({16, 32}, float32, 11, -0.5, 0.5);
  Example mlp{"mlp",
              [w1](const std::vector<Tensor>& in) {
                Tensor h = relu(matmul(in[0], w1) + in[1]);
                return std::vector<Tensor>{softmax(matmul(h, in[2]), -1)};
              },
              {random_tensor({8, 16}, float32, 1), random_tensor({32}, float32, 2), random_tensor({32, 10}, float32, 3, -0.5, 0.5)},
              {{"x", "b", "w2"}, {"probs"}}};
  Example sm{"softmax", [](const std::vector<Tensor>& in) { return std::vector<Tensor>{softmax(in[0], -1)}; },
             {random_tensor({64, 100}, float32, 4, -4, 4)},
             {{"logits"}, {"probs"}}};
  return {mlp, sm};
}

std::string scratch_dir(const std::string& name) {
  const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
  return testing::unique_temp_dir(std::string("aot_") + info->test_suite_name() + "_" + info->name() + "_" + name);
}

artifact::Artifact compile_to(const Example& e, const std::string& targets, const std::string& path) {
  auto graph = ir::parse_exported(export_graph(e.fn, e.inputs, e.names, e.dims));
  throw_if_error(graph.status());
  auto specs = artifact::parse_targets(targets);
  throw_if_error(specs.status());
  auto art = artifact::compile(*graph, *specs);
  throw_if_error(art.status());
  throw_if_error(artifact::write_file(path, *art));
  return *art;
}

namespace {

bool executable(const std::filesystem::path& p) {
  std::error_code ec;
  return std::filesystem::is_regular_file(p, ec) && access(p.c_str(), X_OK) == 0;
}

std::string shell_quoted(const std::string& s) {
  std::string q = "'";
  for (char c : s) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

}  // namespace

std::string kilnc_path() {
  std::error_code ec;
  std::filesystem::path self = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec && executable(self.parent_path() / "kilnc")) return (self.parent_path() / "kilnc").string();
  if (const char* env = std::getenv("KILN_KILNC"); env && *env && executable(env)) return env;
  if (executable(KILNC_PATH)) return KILNC_PATH;
  return "";
}

int run_kilnc(const std::string& args, std::string* out) {
  out->clear();
  std::string kilnc = kilnc_path();
  if (kilnc.empty()) {
    const char* env = std::getenv("KILN_KILNC");
    *out = std::string("no kilnc found: not beside this test binary (/proc/self/exe), not at $KILN_KILNC (") +
           (env ? env : "unset") + "), not at the build tree's " + KILNC_PATH;
    return -1;
  }
  std::string cmd = shell_quoted(kilnc) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return -1;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out->append(buf, n);
  int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string no_device_reason() {
  try {
    default_device();
    return "";
  } catch (const Error&) {
  }
  std::string why = "no kiln device is available here:";
  for (const std::string& n : known_devices()) {
    auto d = Device::get(n);
    if (!d.ok()) why += " [" + std::string(d.status().message()) + "]";
  }
  return why;
}

std::string bytes_of(const Tensor& t) {
  t.realize();
  std::string b(size_t(shape_numel(t.shape()) * dtype_size(t.dtype())), '\0');
  const auto& node = detail::node_of(t);
  throw_if_error(node->device->download(node->buffer.get(), b.data(), int64_t(b.size())));
  return b;
}

}  // namespace kiln::testing

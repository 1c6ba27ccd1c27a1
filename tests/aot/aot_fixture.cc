#include "aot/aot_fixture.h"

#include <cstdio>
#include <filesystem>

#include "frontend/lazy.h"
#include "runtime/device.h"
#include "testing/reference.h"

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
  std::filesystem::path p = std::filesystem::temp_directory_path() /
                            (std::string("kiln_aot_") + info->test_suite_name() + "_" + info->name() + "_" + name);
  std::filesystem::remove_all(p);
  std::filesystem::create_directories(p);
  return p.string();
}

artifact::Artifact compile_to(const Example& e, const std::string& targets, const std::string& path) {
  auto graph = ir::parse_exported(export_graph(e.fn, e.inputs, e.names));
  throw_if_error(graph.status());
  auto specs = artifact::parse_targets(targets);
  throw_if_error(specs.status());
  auto art = artifact::compile(*graph, *specs);
  throw_if_error(art.status());
  throw_if_error(artifact::write_file(path, *art));
  return *art;
}

int run_kilnc(const std::string& args, std::string* out) {
  std::string cmd = std::string(KILNC_PATH) + " " + args + " 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return -1;
  out->clear();
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out->append(buf, n);
  int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string bytes_of(const Tensor& t) {
  t.realize();
  std::string b(size_t(shape_numel(t.shape()) * dtype_size(t.dtype())), '\0');
  const auto& node = detail::node_of(t);
  throw_if_error(node->device->download(node->buffer.get(), b.data(), int64_t(b.size())));
  return b;
}

}  // namespace kiln::testing

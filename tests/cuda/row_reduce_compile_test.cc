// Row reductions on GPUs without a GPU (codegen/c_family/renderer.h: row_reduction): rows of at
// most 8 elements per lane take one subgroup each, several rows per workgroup, combined by
// shuffles alone; longer rows take a workgroup each; KILN_GPU_SUBGROUP_ROWS=0 gives every row a
// workgroup. The CUDA module compiles with NVRTC and assembles with ptxas, and a GLSL target with
// 32-wide subgroups takes the same choices where its shuffles reach (not 64-bit argmax indices). (Values on a GPU: ops_test's reduction, softmax and
// layer-norm suites on cuda and vulkan.)
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backends/cuda/nvrtc.h"
#include "backends/cuda/target.h"
#include "codegen/c_family/gpu_program.h"
#include "cuda/ptxas.h"
#include "frontend/capture.h"
#include "kiln/kiln.h"
#include "passes/pipeline.h"
#include "testing/reference.h"
#include "testing/scoped_env.h"
#include "testing/vulkan_target.h"

namespace kiln {
namespace {

using testing::random_tensor;

// A softmax over 64-wide rows, an argmax over 200-wide rows (8 per lane at most: 256), and a sum
// over 4096-wide rows.
ir::Graph rows_graph() {
  Tensor a = random_tensor({1000, 64}, float32, 1), b = random_tensor({1000, 200}, float32, 2);
  Tensor c = random_tensor({512, 4096}, float32, 3);
  std::vector<std::shared_ptr<runtime::Buffer>> bufs;
  return detail::capture({softmax(a, -1), b.argmax(1), c.sum({1})}, &bufs);
}

// Each row-reduction kernel's strategy, by the row length it reduces.
std::vector<std::string> strategies(codegen::gpu::Dialect d, const ir::TargetInfo& t, std::string* module) {
  auto planned = passes::compile_graph(rows_graph(), t, passes::Options{});
  EXPECT_TRUE(planned.ok()) << planned.status();
  if (!planned.ok()) return {};
  auto r = codegen::gpu::render(planned->program, d, t);
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return {};
  std::vector<std::string> out;
  for (const auto& k : r->kernels)
    if (k.strategy.find("row reduction") != std::string::npos) out.push_back(k.strategy);
  if (module) *module = r->module_source;
  return out;
}

int count(const std::vector<std::string>& v, const std::string& what) {
  int n = 0;
  for (const std::string& s : v) n += s.find(what) != std::string::npos;
  return n;
}

TEST(RowReductions, ShortRowsTakeASubgroupEachAndCompile) {
  const ir::TargetInfo h100 = runtime::cuda::cuda_target_info(132, 232448, 90);
  std::string module;
  std::vector<std::string> s = strategies(codegen::gpu::Dialect::kCuda, h100, &module);
  ASSERT_EQ(s.size(), 3u) << ::testing::PrintToString(s);
  EXPECT_EQ(count(s, "one subgroup of 32 per outer index, 8 per workgroup"), 2) << ::testing::PrintToString(s);
  EXPECT_EQ(count(s, "one workgroup of"), 1) << ::testing::PrintToString(s);  // the 4096-wide rows
  auto bin = runtime::cuda::nvrtc_compile(module, h100.compute_capability, /*keep_ptx=*/true, false);
  ASSERT_TRUE(bin.ok()) << bin.status() << "\n" << module;
  std::string log;
  if (testing_ptxas::available()) {
    EXPECT_TRUE(testing_ptxas::assemble(bin->ptx, "sm_90", &log)) << log;
  }

  // GLSL: the softmax the same; the argmax keeps a workgroup (the dialect shuffles no 64-bit
  // indices).
  std::vector<std::string> glsl = strategies(codegen::gpu::Dialect::kGlsl, testing::handwritten_vulkan_target(), nullptr);
  EXPECT_EQ(count(glsl, "one subgroup of 32 per outer index, 8 per workgroup"), 1) << ::testing::PrintToString(glsl);
  EXPECT_EQ(count(glsl, "one workgroup of"), 2) << ::testing::PrintToString(glsl);
}

TEST(RowReductions, SwitchedOffEveryRowTakesAWorkgroup) {
  testing::ScopedEnv env({{"KILN_GPU_SUBGROUP_ROWS", "0"}});
  const ir::TargetInfo h100 = runtime::cuda::cuda_target_info(132, 232448, 90);
  std::vector<std::string> s = strategies(codegen::gpu::Dialect::kCuda, h100, nullptr);
  EXPECT_EQ(count(s, "one workgroup of"), 3) << ::testing::PrintToString(s);
}

}  // namespace
}  // namespace kiln

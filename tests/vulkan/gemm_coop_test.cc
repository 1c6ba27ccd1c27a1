// The Vulkan tensor-core contraction (codegen/c_family/contraction_coop.cc): which contractions
// take it on a target with f16 cooperative matrices (the nvidia-sm90 profile) and which keep the
// SIMT kernel (bf16, f32, operands 16-byte pieces cannot read, devices without cooperative
// matrices such as lavapipe), that its shaders compile to valid SPIR-V without a GPU, and, on a
// Vulkan device that has cooperative matrices, results against the reference interpreter: ragged
// M/N/K, every operand layout, batched and broadcast operands, fused epilogues, more k blocks
// than stages.
#include <gtest/gtest.h>

#include <array>
#include <cstdio>
#include <string>
#include <vector>

#include "backends/vulkan/target.h"
#include "codegen/c_family/gpu_program.h"
#include "kiln/kiln.h"
#include "runtime/registry.h"
#include "testing/planned.h"
#include "testing/reference.h"
#include "testing/scoped_env.h"

namespace kiln {
namespace {

using testing::planned;
using testing::random_tensor;

ir::TargetInfo profile(const std::string& name) {
  auto t = runtime::target_profile("vulkan", name);
  EXPECT_TRUE(t.ok()) << t.status();
  return t.ok() ? *t : ir::TargetInfo{};
}

// The strategy of the contraction kernel `outs` plan into on `target` ("" when there is none).
std::string contraction_strategy(const std::vector<Tensor>& outs, const ir::TargetInfo& target) {
  auto r = codegen::gpu::render(planned(outs, target), codegen::gpu::Dialect::kGlsl, target);
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return "";
  for (const auto& k : r->kernels)
    if (k.strategy.find("contraction") != std::string::npos) return k.strategy;
  return "";
}

class GemmCoopCompile : public testing::NeedsDefaultDevice {};

// Plain, transposed (m-major lhs, k-major rhs), batched, broadcast operands and fused epilogues
// with ragged sizes take the cooperative-matrix kernel, in one kernel each with the layouts its
// strategy names; the Vulkan compiler turns each into SPIR-V that the validator accepts.
TEST_F(GemmCoopCompile, HalfProductsTakeCooperativeMatrices) {
  const ir::TargetInfo nv = profile("nvidia-sm90");
  ASSERT_EQ(nv.coop_n, 16);
  Tensor a = random_tensor({300, 136}, float16, 1), b = random_tensor({136, 200}, float16, 2);
  Tensor at = random_tensor({136, 304}, float16, 3), bt = random_tensor({200, 136}, float16, 4);
  Tensor x3 = random_tensor({3, 130, 72}, float16, 5), w3 = random_tensor({3, 72, 264}, float16, 6);
  Tensor bias = random_tensor({200}, float16, 9);
  struct Case {
    Tensor t;
    const char* layouts;
  };
  auto compiler = runtime::make_compiler("vulkan", nv);
  ASSERT_TRUE(compiler.ok()) << compiler.status();
  const std::vector<Case> cases{{gelu(matmul(a, b) + bias, true), "lhs k-contiguous, rhs n-contiguous"},
                                         {matmul(at.t(), b), "lhs m-contiguous, rhs n-contiguous"},
                                         {matmul(a, bt.t()).cast(float32), "lhs k-contiguous, rhs k-contiguous"},
                                         {matmul(at.t(), bt.t()), "lhs m-contiguous, rhs k-contiguous"},
                                         {matmul(x3, w3), "lhs k-contiguous, rhs n-contiguous"},
                                         {matmul(x3, w3.slice(0, 0, 1).reshape({72, 264})), "lhs k-contiguous, rhs n-contiguous"}};
  // Each shape of the kernel: 4 subgroups and two stages (the default), 8 subgroups, one stage.
  struct Variant {
    const char *warps, *bk, *shape;
  };
  for (const Variant& v : std::vector<Variant>{{"", "", "of 4 subgroups, 32-deep k blocks in 2 shared stages"},
                                               {"8", "", "of 8 subgroups, 32-deep k blocks in 2 shared stages"},
                                               {"", "64", "of 4 subgroups, 64-deep k blocks in 1 shared stage"},
                                               {"8", "64", "of 8 subgroups, 64-deep k blocks in 1 shared stage"}}) {
    testing::ScopedEnv env({{"KILN_VULKAN_COOP_WARPS", v.warps}, {"KILN_VULKAN_COOP_BK", v.bk}});
    for (const Case& c : cases) {
      const std::string s = contraction_strategy({c.t}, nv);
      EXPECT_NE(s.find("contraction coop: cooperative matrices 16x16x16"), std::string::npos) << s;
      EXPECT_NE(s.find(c.layouts), std::string::npos) << s;
      EXPECT_NE(s.find(v.shape), std::string::npos) << s;
      ir::Program p = planned({c.t}, nv);
      EXPECT_EQ(p.kernels.size(), 1u);
      auto compiled = (*compiler)->compile(p);
      EXPECT_TRUE(compiled.ok()) << compiled.status();
    }
  }
  // A device whose matrices are 16 x 8 x 16: twice the matrices across a subgroup's columns.
  ir::TargetInfo narrow = nv;
  narrow.coop_n = 8;
  const std::string s = contraction_strategy({matmul(a, b)}, narrow);
  EXPECT_NE(s.find("cooperative matrices 16x8x16"), std::string::npos) << s;
  auto narrow_compiler = runtime::make_compiler("vulkan", narrow);
  ASSERT_TRUE(narrow_compiler.ok()) << narrow_compiler.status();
  EXPECT_TRUE((*narrow_compiler)->compile(planned({matmul(a, b)}, narrow)).ok());
}

// bf16 (no cooperative-matrix type for it in VK_NV_cooperative_matrix), f32, a contiguous axis
// that is not a whole number of 16-byte pieces (k = 70 with a row-major lhs), a view not 16-byte
// aligned, and any device without cooperative matrices (lavapipe) keep the SIMT kernel.
TEST_F(GemmCoopCompile, OtherProductsKeepTheSimtKernel) {
  const ir::TargetInfo nv = profile("nvidia-sm90");
  Tensor bf_a = random_tensor({128, 64}, bfloat16, 1), bf_b = random_tensor({64, 96}, bfloat16, 2);
  Tensor f = random_tensor({64, 64}, float32, 3);
  Tensor odd_a = random_tensor({64, 70}, float16, 4), odd_b = random_tensor({70, 64}, float16, 5);
  Tensor wide = random_tensor({128, 72}, float16, 6), h = random_tensor({64, 96}, float16, 7);
  Tensor a = random_tensor({128, 64}, float16, 8);
  for (const Tensor& t : {matmul(bf_a, bf_b), matmul(f, f), matmul(odd_a, odd_b), matmul(wide.slice(1, 1, 65), h)}) {
    const std::string s = contraction_strategy({t}, nv);
    EXPECT_NE(s.find("contraction: "), std::string::npos) << s;
    EXPECT_EQ(s.find("coop"), std::string::npos) << s;
  }
  const std::string s = contraction_strategy({matmul(a, h)}, profile("lavapipe"));
  EXPECT_NE(s.find("contraction: "), std::string::npos) << s;
  EXPECT_EQ(s.find("coop"), std::string::npos) << s;
}

// ---------------------------------------------------------------- on a device

// The nvidia-sm90 profile (kilnc --target vulkan:nvidia-sm90) is what an H100 or H200 reports, so
// artifacts compiled for it load there (checked where the Vulkan device is one).
TEST(VulkanProfiles, NvidiaSm90IsWhatAHopperGpuReports) {
  auto d = runtime::get_device("vulkan");
  if (!d.ok()) GTEST_SKIP() << d.status().message();
  const std::string name = (*d)->description();
  if (name.find("H100") == std::string::npos && name.find("H200") == std::string::npos)
    GTEST_SKIP() << "not an H100 or H200: " << name;
  EXPECT_EQ(runtime::vk::target_key((*d)->target()), runtime::vk::target_key(profile("nvidia-sm90")));
}

// Runs on the Vulkan device when it has f16 cooperative matrices (skips elsewhere: lavapipe in CI
// has none), made the default device meanwhile.
class GemmCoopRun : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = runtime::get_device("vulkan");
    if (!d.ok()) GTEST_SKIP() << d.status().message();
    if ((*d)->target().coop_m == 0) GTEST_SKIP() << "the Vulkan device has no f16 cooperative matrices";
    std::printf("vulkan target: %s\n", runtime::vk::target_key((*d)->target()).c_str());
    prev_ = default_device().name();
    ASSERT_TRUE(set_default_device("vulkan").ok());
  }
  void TearDown() override {
    if (!prev_.empty()) (void)set_default_device(prev_);
  }
  std::string prev_;
};

// f16 products of values in [-1, 1] summed in f32, results rounded to f16.
const testing::Tolerance kHalf{3e-2, 3e-2};

TEST_F(GemmCoopRun, RaggedShapesInEveryLayout) {
  uint32_t seed = 100;
  for (auto [m, k, n] : std::vector<std::array<int64_t, 3>>{{128, 32, 128}, {256, 512, 256}, {300, 136, 200},
                                                            {1000, 72, 520}, {64, 1024, 8},  {8, 40, 264},
                                                            {129, 8, 136},  {520, 1000, 776}}) {
    SCOPED_TRACE(::testing::Message() << m << "x" << k << "x" << n);
    Tensor a = random_tensor({m, k}, float16, seed++), b = random_tensor({k, n}, float16, seed++);
    Tensor at = random_tensor({k, m}, float16, seed++), bt = random_tensor({n, k}, float16, seed++);
    EXPECT_MATCHES_REFERENCE({matmul(a, b), matmul(at.t(), b), matmul(a, bt.t()), matmul(at.t(), bt.t())}, kHalf);
  }
}

TEST_F(GemmCoopRun, BatchedBroadcastAndEpilogues) {
  Tensor x3 = random_tensor({4, 130, 72}, float16, 1), w3 = random_tensor({4, 72, 264}, float16, 2);
  Tensor x4 = random_tensor({2, 3, 65, 48}, float16, 4), w4 = random_tensor({2, 3, 48, 80}, float16, 5);
  EXPECT_MATCHES_REFERENCE({matmul(x3, w3), matmul(x3, w3.slice(0, 1, 2).reshape({72, 264})),
                            matmul(w3.transpose(1, 2), x3.transpose(1, 2)), matmul(x4, w4)},
                           kHalf);
  Tensor a = random_tensor({200, 64}, float16, 8), b = random_tensor({64, 304}, float16, 9);
  Tensor bias = random_tensor({304}, float16, 10), res = random_tensor({200, 304}, float16, 11);
  EXPECT_MATCHES_REFERENCE({gelu(matmul(a, b) + bias, true), relu(matmul(a, b)) + res, matmul(a, b).cast(float32) * 0.5f},
                           kHalf);
  // Many tiles and k blocks: the grid walks tiles in groups, the two stages alternate many times.
  Tensor big = random_tensor({24, 256, 512}, float16, 12), bw = random_tensor({512, 384}, float16, 13);
  EXPECT_MATCHES_REFERENCE({matmul(big, bw)}, kHalf);
}

}  // namespace
}  // namespace kiln

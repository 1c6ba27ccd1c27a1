// Autotuning on CUDA (replay/autotune.h with CudaCompiler::tuning_candidates): the Hopper
// contraction and attention kernels offer their tile widths, schedules and clusters; the first
// candidate renders exactly what an untuned compile does, each one renders its variant and
// compiles for sm_90a with NVRTC and ptxas (no GPU needed); other targets and kernels offer
// nothing. On a compute capability 9.0 GPU, KILN_AUTOTUNE=1 times the variants once, keeps the
// winner on disk and gives results that match the reference interpreter.
#include <gtest/gtest.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

#include "backends/cuda/compiler.h"
#include "backends/cuda/nvrtc.h"
#include "backends/cuda/target.h"
#include "codegen/c_family/gpu_program.h"
#include "cuda/contraction_fixtures.h"
#include "cuda/ptxas.h"
#include "kiln/kiln.h"
#include "runtime/registry.h"
#include "testing/reference.h"
#include "testing/scoped_env.h"
#include "testing/temp_dir.h"

namespace kiln {
namespace {

using testing::random_tensor;
using testing::ScopedEnv;

using cudatest::h100;
using cudatest::planned;

AttentionOptions causal() {
  AttentionOptions o;
  o.causal = true;
  return o;
}

class AutotuneSm90Compile : public cudatest::NeedsDefaultDevice {};

// Renders `p` with kernel `k` on each candidate: the first matches the untuned module, each
// one's strategy passes `check`, and each module compiles and assembles for sm_90a.
void expect_candidates_render(ir::Program p, const std::vector<std::string>& candidates,
                              const std::function<void(const std::string& config, const std::string& strategy)>& check) {
  auto plain = codegen::gpu::render(p, codegen::gpu::Dialect::kCuda, h100());
  ASSERT_TRUE(plain.ok()) << plain.status();
  for (size_t i = 0; i < candidates.size(); ++i) {
    SCOPED_TRACE(candidates[i]);
    p.kernels[0].config = candidates[i];
    auto r = codegen::gpu::render(p, codegen::gpu::Dialect::kCuda, h100());
    ASSERT_TRUE(r.ok()) << r.status();
    if (i == 0) EXPECT_EQ(r->module_source, plain->module_source);
    else EXPECT_NE(r->module_source, plain->module_source);
    check(candidates[i], r->kernels[0].strategy);
    auto bin = runtime::cuda::nvrtc_compile(r->module_source, 90, /*keep_ptx=*/true, /*arch_specific=*/true);
    ASSERT_TRUE(bin.ok()) << bin.status();
    if (testing_ptxas::available()) {
      std::string log;
      EXPECT_TRUE(testing_ptxas::assemble(bin->ptx, "sm_90a", &log)) << log;
    }
  }
}

TEST_F(AutotuneSm90Compile, ContractionCandidatesRenderTheirVariant) {
  Tensor a = random_tensor({1024, 512}, bfloat16, 1), b = random_tensor({512, 2048}, bfloat16, 2);
  ir::Program p = planned({matmul(a, b)}, h100());
  ASSERT_EQ(p.kernels.size(), 1u);
  runtime::cuda::CudaCompiler compiler(h100());
  std::string cls;
  std::vector<std::string> candidates = compiler.tuning_candidates(p, 0, &cls);
  // Widths 256/128/64 cooperative, 128/64 ping-pong, 256/128 in clusters of 2.
  EXPECT_EQ(candidates.size(), 7u);
  EXPECT_EQ(cls, "sm_90 cuda sm_90a contraction bf16 batch 1 m 1024 n 2048 k 512 lhs k-major rhs n-major staged 2 tma");
  expect_candidates_render(p, candidates, [](const std::string& config, const std::string& strategy) {
    for (const char* bn : {"64", "128", "256"}) {
      if (config.find(absl::StrCat("bn=", bn, " ")) != std::string::npos) {
        EXPECT_NE(strategy.find(absl::StrCat("wgmma m64n", bn, "k16")), std::string::npos) << strategy;
      }
    }
    EXPECT_EQ(config.find("pingpong") != std::string::npos, strategy.find("ping-pong") != std::string::npos) << strategy;
    EXPECT_EQ(config.find("cluster=2") != std::string::npos, strategy.find("clusters of 2") != std::string::npos)
        << strategy;
  });
  // One m-tile (a decode-like product): no clusters to pair; a pre-Hopper target, an f32 SIMT
  // contraction and an elementwise kernel: nothing to choose.
  Tensor x = random_tensor({16, 512}, bfloat16, 3);
  for (const std::string& c : compiler.tuning_candidates(planned({matmul(x, b)}, h100()), 0, &cls))
    EXPECT_EQ(c.find("cluster=2"), std::string::npos) << c;
  runtime::cuda::CudaCompiler a100(runtime::cuda::cuda_target_info(108, 166912, 80));
  EXPECT_TRUE(a100.tuning_candidates(planned({matmul(a, b)}, a100.target()), 0, &cls).empty());
  Tensor f = random_tensor({64, 64}, float32, 4);
  EXPECT_TRUE(compiler.tuning_candidates(planned({matmul(f, f)}, h100()), 0, &cls).empty());
  EXPECT_TRUE(compiler.tuning_candidates(planned({f.exp()}, h100()), 0, &cls).empty());
}

TEST_F(AutotuneSm90Compile, AttentionCandidatesRenderTheirSchedule) {
  Tensor q = random_tensor({1, 2, 512, 64}, bfloat16, 1), k = random_tensor({1, 2, 512, 64}, bfloat16, 2),
         v = random_tensor({1, 2, 512, 64}, bfloat16, 3);
  ir::Program p = planned({scaled_dot_product_attention(q, k, v, causal())}, h100());
  ASSERT_EQ(p.kernels.size(), 1u);
  runtime::cuda::CudaCompiler compiler(h100());
  std::string cls;
  std::vector<std::string> candidates = compiler.tuning_candidates(p, 0, &cls);
  ASSERT_EQ(candidates.size(), 6u);  // 3 schedules x {1, 2} blocks per cluster (4 query tiles)
  EXPECT_EQ(candidates[0], "schedule=pingpong cluster=1");
  EXPECT_EQ(cls, "sm_90 cuda sm_90a attention bf16 batch 2 sq 512 sk 512 d 64 causal");
  expect_candidates_render(p, candidates, [](const std::string& config, const std::string& strategy) {
    for (const char* s : {"plain", "pipelined", "pingpong"}) {
      if (config.find(absl::StrCat("schedule=", s)) != std::string::npos) {
        EXPECT_NE(strategy.find(absl::StrCat(s, " schedule")), std::string::npos) << strategy;
      }
    }
    EXPECT_EQ(config.find("cluster=2") != std::string::npos, strategy.find("clusters of 2") != std::string::npos)
        << strategy;
  });
}

// ---------------------------------------------------------------- on an sm_90 GPU

class AutotuneSm90Run : public cudatest::OnSm90Gpu {};

const testing::Tolerance kHalf{3e-2, 3e-2};

TEST_F(AutotuneSm90Run, TimesEachShapeClassOnceAndKeepsTheWinnerOnDisk) {
  const std::string dir = testing::unique_temp_dir("autotune_sm90");
  ScopedEnv env({{"KILN_AUTOTUNE", "1"}, {"KILN_CACHE_DIR", dir}, {"KILN_DISK_CACHE", ""}});
  Tensor a = random_tensor({520, 264}, bfloat16, 1), b = random_tensor({264, 776}, bfloat16, 2);
  Tensor q = random_tensor({2, 2, 512, 64}, bfloat16, 3), k = random_tensor({2, 2, 512, 64}, bfloat16, 4),
         v = random_tensor({2, 2, 512, 64}, bfloat16, 5);
  auto outputs = [&] {
    return std::vector<Tensor>{gelu(matmul(a, b), true), scaled_dot_product_attention(q, k, v, causal())};
  };
  const Stats s0 = stats();
  EXPECT_MATCHES_REFERENCE(outputs(), kHalf);
  const Stats s1 = stats();
  EXPECT_EQ(s1.kernels_autotuned - s0.kernels_autotuned, 2);
  EXPECT_TRUE(std::filesystem::exists(dir + "/autotune")) << dir;
  // A new executable of the same shapes (the cache emptied): the winners, nothing timed.
  {
    ScopedEnv again({{"KILN_AUTOTUNE", "1"}});
    EXPECT_MATCHES_REFERENCE(outputs(), kHalf);
  }
  const Stats s2 = stats();
  EXPECT_EQ(s2.kernels_autotuned, s1.kernels_autotuned);
  EXPECT_EQ(s2.autotune_cache_hits - s1.autotune_cache_hits, 2);
}

}  // namespace
}  // namespace kiln

// The pipelined mma.sync contraction (codegen/c_family/contraction_sm80.cc): which contractions
// take it on an A100 / L4 target and which keep the register-staged kernel, that its modules
// compile with NVRTC and assemble with ptxas for sm_80 and sm_89 (no GPU needed), and, on any
// CUDA GPU (the sm_90a path switched off on Hopper), results against the reference interpreter:
// ragged M/N/K, every operand layout, batched and broadcast operands, f16, fused epilogues, more
// k blocks than stages.
#include <gtest/gtest.h>

#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "backends/cuda/nvrtc.h"
#include "codegen/c_family/gpu_program.h"
#include "absl/strings/str_cat.h"
#include "cuda/contraction_fixtures.h"
#include "cuda/ptxas.h"
#include "kiln/kiln.h"
#include "runtime/registry.h"
#include "testing/reference.h"
#include "testing/scoped_env.h"

namespace kiln {
namespace {

using testing::random_tensor;
using testing::ScopedEnv;

using cudatest::a100;
using cudatest::l4;

codegen::gpu::RenderedProgram render(const std::vector<Tensor>& outs, const ir::TargetInfo& target) {
  auto r = codegen::gpu::render(cudatest::planned(outs, target), codegen::gpu::Dialect::kCuda, target);
  EXPECT_TRUE(r.ok()) << r.status();
  return r.ok() ? *std::move(r) : codegen::gpu::RenderedProgram{};
}

// The strategy of the program's contraction kernel ("" when there is none).
std::string contraction_strategy(const codegen::gpu::RenderedProgram& r) {
  for (const auto& k : r.kernels)
    if (k.strategy.find("contraction") != std::string::npos) return k.strategy;
  return "";
}

class GemmSm80Compile : public cudatest::NeedsDefaultDevice {};

// Row-major, transposed (m-major lhs, k-major rhs), batched, broadcast and f16 operands with
// ragged sizes take the cp.async kernel in one kernel (no copy of a transposed view), each with
// the layouts its strategy names; the module compiles for sm_80 and sm_89 and assembles.
TEST_F(GemmSm80Compile, CopyableOperandsTakeThePipelinedKernel) {
  Tensor a = random_tensor({300, 136}, bfloat16, 1), b = random_tensor({136, 200}, bfloat16, 2);
  Tensor at = random_tensor({136, 304}, bfloat16, 3), bt = random_tensor({200, 136}, bfloat16, 4);
  Tensor x3 = random_tensor({3, 130, 72}, bfloat16, 5), w3 = random_tensor({3, 72, 264}, bfloat16, 6);
  Tensor h = random_tensor({200, 64}, float16, 7), g = random_tensor({64, 304}, float16, 8);
  Tensor bias = random_tensor({200}, bfloat16, 9);
  struct Case {
    Tensor t;
    const char* layouts;
  };
  for (const Case& c : std::vector<Case>{{gelu(matmul(a, b) + bias, true), "lhs k-contiguous, rhs n-contiguous"},
                                         {matmul(at.t(), b), "lhs m-contiguous, rhs n-contiguous"},
                                         {matmul(a, bt.t()), "lhs k-contiguous, rhs k-contiguous"},
                                         {matmul(at.t(), bt.t()), "lhs m-contiguous, rhs k-contiguous"},
                                         {matmul(x3, w3), "lhs k-contiguous, rhs n-contiguous"},
                                         {matmul(x3, w3.slice(0, 0, 1).reshape({72, 264})), "lhs k-contiguous, rhs n-contiguous"},
                                         {matmul(h, g).cast(float16), "lhs k-contiguous, rhs n-contiguous"}}) {
    for (const ir::TargetInfo* target : {&a100(), &l4()}) {
      codegen::gpu::RenderedProgram r = render({c.t}, *target);
      ASSERT_EQ(r.kernels.size(), 1u);
      const std::string s = contraction_strategy(r);
      EXPECT_NE(s.find("contraction sm_80: cp.async"), std::string::npos) << s;
      EXPECT_NE(s.find(c.layouts), std::string::npos) << s;
      EXPECT_FALSE(r.arch_specific);
      auto bin = runtime::cuda::nvrtc_compile(r.module_source, target->compute_capability, /*keep_ptx=*/true);
      ASSERT_TRUE(bin.ok()) << bin.status() << "\n" << r.module_source;
      EXPECT_NE(bin->ptx.find("cp.async.cg.shared.global"), std::string::npos);
      EXPECT_NE(bin->ptx.find("ldmatrix.sync.aligned.m8n8.x4"), std::string::npos);
      EXPECT_NE(bin->ptx.find("mma.sync.aligned.m16n8k16"), std::string::npos);
      if (testing_ptxas::available()) {
        std::string log;
        const std::string arch = absl::StrCat("sm_", target->compute_capability);
        EXPECT_TRUE(testing_ptxas::assemble(bin->ptx, arch, &log)) << log;
      }
    }
  }
}

// 128 columns per tile, or 64 where 128-wide tiles would leave multiprocessors idle (a
// decode-like product: twice the blocks streaming the rhs).
TEST_F(GemmSm80Compile, TileWidthFollowsTheShape) {
  Tensor w = random_tensor({512, 8192}, bfloat16, 1);
  EXPECT_NE(contraction_strategy(render({matmul(random_tensor({16, 512}, bfloat16, 2), w)}, a100())).find("128x64x32"),
            std::string::npos);
  EXPECT_NE(contraction_strategy(render({matmul(random_tensor({2048, 512}, bfloat16, 3), w)}, a100())).find("128x128x32"),
            std::string::npos);
}

// Float32 products allowed TF32 in every operand layout take the same kernel (m16n8k8, operands
// rounded); on Hopper those wgmma cannot read (an n-major rhs or an m-major lhs) come here too.
TEST_F(GemmSm80Compile, Tf32InEveryLayoutTakesThePipelinedKernel) {
  const MatmulPrecision tf32 = MatmulPrecision::kTf32;
  Tensor a = random_tensor({300, 136}, float32, 1), b = random_tensor({136, 200}, float32, 2);
  Tensor at = random_tensor({136, 300}, float32, 3), bt = random_tensor({200, 136}, float32, 4);
  struct Case {
    Tensor t;
    const char* layouts;
    bool hopper;  // sm_90a takes it (both operands k-major)
  };
  for (const Case& c : std::vector<Case>{{matmul(a, b, tf32), "lhs k-contiguous, rhs n-contiguous", false},
                                         {matmul(at.t(), b, tf32), "lhs m-contiguous, rhs n-contiguous", false},
                                         {matmul(a, bt.t(), tf32), "lhs k-contiguous, rhs k-contiguous", true},
                                         {relu(matmul(at.t(), bt.t(), tf32)), "lhs m-contiguous, rhs k-contiguous", false}}) {
    for (const ir::TargetInfo* target : {&a100(), &cudatest::h100()}) {
      codegen::gpu::RenderedProgram r = render({c.t}, *target);
      ASSERT_EQ(r.kernels.size(), 1u);
      const std::string s = contraction_strategy(r);
      if (target->compute_capability == 90 && c.hopper) {
        EXPECT_NE(s.find("sm_90a"), std::string::npos) << s;
        continue;
      }
      EXPECT_NE(s.find("contraction sm_80: cp.async"), std::string::npos) << s;
      EXPECT_NE(s.find("m16n8k8 in TF32"), std::string::npos) << s;
      EXPECT_NE(s.find(c.layouts), std::string::npos) << s;
      auto bin = runtime::cuda::nvrtc_compile(r.module_source, target->compute_capability, /*keep_ptx=*/true);
      ASSERT_TRUE(bin.ok()) << bin.status() << "\n" << r.module_source;
      EXPECT_NE(bin->ptx.find("mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"), std::string::npos);
      EXPECT_NE(bin->ptx.find("cvt.rna.tf32.f32"), std::string::npos);
      if (testing_ptxas::available()) {
        std::string log;
        EXPECT_TRUE(testing_ptxas::assemble(bin->ptx, absl::StrCat("sm_", target->compute_capability), &log)) << log;
      }
    }
  }
  // Exact float32 keeps the SIMT kernel.
  EXPECT_EQ(contraction_strategy(render({matmul(a, b)}, a100())).find("TF32"), std::string::npos);
}

// A contiguous axis that is not a whole number of 16-byte pieces (k = 70 with a row-major lhs),
// a view that does not start 16-byte aligned, float32 operands and KILN_CUDA_CP_ASYNC=0 keep the register-staged
// kernels; so does everything on a GPU older than sm_80.
TEST_F(GemmSm80Compile, OtherOperandsKeepTheRegisterStagedKernel) {
  Tensor odd_a = random_tensor({64, 70}, bfloat16, 1), odd_b = random_tensor({70, 64}, bfloat16, 2);
  Tensor a = random_tensor({128, 64}, bfloat16, 3), b = random_tensor({64, 96}, bfloat16, 4);
  Tensor wide = random_tensor({128, 72}, bfloat16, 6);
  Tensor f = random_tensor({64, 64}, float32, 5);
  for (const Tensor& t : {matmul(odd_a, odd_b), matmul(wide.slice(1, 1, 65), b)}) {
    const std::string s = contraction_strategy(render({t}, a100()));
    EXPECT_NE(s.find("tensor cores (mma.sync"), std::string::npos) << s;
  }
  EXPECT_EQ(contraction_strategy(render({matmul(f, f)}, a100())).find("sm_80"), std::string::npos);
  {
    ScopedEnv env({{"KILN_CUDA_CP_ASYNC", "0"}});
    const std::string s = contraction_strategy(render({matmul(a, b)}, a100()));
    EXPECT_NE(s.find("tensor cores (mma.sync"), std::string::npos) << s;
  }
  const ir::TargetInfo t4 = runtime::cuda::cuda_target_info(40, 65536, 75);
  EXPECT_EQ(contraction_strategy(render({matmul(a, b)}, t4)).find("mma"), std::string::npos);
}

// ---------------------------------------------------------------- on a GPU

class GemmSm80Run : public cudatest::OnCudaGpu {
 protected:
  // On Hopper, contractions the sm_90a path would take come here instead.
  ScopedEnv env_{{"KILN_CUDA_SM90_GEMM", "0"}};
};

const testing::Tolerance kHalf{3e-2, 3e-2};

TEST_F(GemmSm80Run, RaggedShapesInEveryLayout) {
  uint32_t seed = 100;
  for (auto [m, k, n] : std::vector<std::array<int64_t, 3>>{{128, 32, 128},  {256, 512, 256}, {300, 136, 200},
                                                            {1000, 72, 520}, {64, 1024, 8},   {8, 40, 264},
                                                            {129, 8, 136},   {520, 1000, 776}}) {
    SCOPED_TRACE(::testing::Message() << m << "x" << k << "x" << n);
    Tensor a = random_tensor({m, k}, bfloat16, seed++), b = random_tensor({k, n}, bfloat16, seed++);
    Tensor at = random_tensor({k, m}, bfloat16, seed++), bt = random_tensor({n, k}, bfloat16, seed++);
    EXPECT_MATCHES_REFERENCE({matmul(a, b), matmul(at.t(), b), matmul(a, bt.t()), matmul(at.t(), bt.t())}, kHalf);
  }
}

TEST_F(GemmSm80Run, BatchedBroadcastAndHalf) {
  Tensor x3 = random_tensor({4, 130, 72}, bfloat16, 1), w3 = random_tensor({4, 72, 264}, bfloat16, 2);
  Tensor x4 = random_tensor({2, 3, 65, 48}, bfloat16, 4), w4 = random_tensor({2, 3, 48, 80}, bfloat16, 5);
  EXPECT_MATCHES_REFERENCE({matmul(x3, w3), matmul(x3, w3.slice(0, 1, 2).reshape({72, 264})), matmul(w3.transpose(1, 2), x3.transpose(1, 2)),
                            matmul(x4, w4)},
                           kHalf);
  Tensor h = random_tensor({200, 64}, float16, 8), g = random_tensor({64, 304}, float16, 9);
  EXPECT_MATCHES_REFERENCE({matmul(h, g), matmul(g.t(), h.t())}, kHalf);
  // Many tiles and k blocks: the grid walks tiles in groups, the stage ring wraps many times.
  Tensor big = random_tensor({24, 256, 512}, bfloat16, 10), bw = random_tensor({512, 384}, bfloat16, 11);
  EXPECT_MATCHES_REFERENCE({matmul(big, bw)}, kHalf);
}

// TF32 rounds each operand to 10 mantissa bits (cvt.rna): a product of values in [-1, 1] is off
// by at most 2 * 2^-11, an output by K * 2^-10 (plus f32 sums), as in the MatmulPrecision tests.
TEST_F(GemmSm80Run, Tf32InEveryLayout) {
  const MatmulPrecision tf32 = MatmulPrecision::kTf32;
  uint32_t seed = 300;
  for (auto [m, k, n] : std::vector<std::array<int64_t, 3>>{{128, 16, 128}, {300, 136, 200}, {8, 1000, 264}, {520, 72, 776}}) {
    SCOPED_TRACE(::testing::Message() << m << "x" << k << "x" << n);
    Tensor a = random_tensor({m, k}, float32, seed++, -1, 1), b = random_tensor({k, n}, float32, seed++, -1, 1);
    Tensor at = random_tensor({k, m}, float32, seed++, -1, 1), bt = random_tensor({n, k}, float32, seed++, -1, 1);
    const testing::Tolerance bound{0.0, double(k) * std::ldexp(1.0, -10)};
    EXPECT_MATCHES_REFERENCE({matmul(a, b, tf32), matmul(at.t(), b, tf32), matmul(a, bt.t(), tf32),
                              matmul(at.t(), bt.t(), tf32)},
                             bound);
  }
}

TEST_F(GemmSm80Run, FusedEpilogues) {
  Tensor a = random_tensor({300, 136}, bfloat16, 1), b = random_tensor({136, 200}, bfloat16, 2, -0.3, 0.3);
  Tensor bias = random_tensor({200}, bfloat16, 3), res = random_tensor({300, 200}, float32, 4);
  Tensor mm = matmul(a, b);
  EXPECT_MATCHES_REFERENCE({gelu(mm + bias, true).cast(bfloat16), silu(mm) + res, relu(mm - bias) * 0.25,
                            (mm * 0.125 + res).cast(float16)},
                           kHalf);
}

}  // namespace
}  // namespace kiln

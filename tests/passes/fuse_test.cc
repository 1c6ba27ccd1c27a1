// Kernel counts of the fused workloads (BENCH.md W1-W6), with values against the interpreter.
#include <gtest/gtest.h>

#include "passes/helpers.h"
#include "testing/reference.h"

namespace kiln {
namespace {

using testing::program_of;
using testing::random_tensor;

Tensor w1(const Tensor& x, const Tensor& a, const Tensor& b) {
  return tanh(x * a + b) * sigmoid(x) + exp(-abs(b)) * 0.5 - x * x;
}

Tensor w6(Tensor x) {
  for (int i = 0; i < 64; ++i) x = i % 2 == 0 ? x * 1.0001 + 0.001 : tanh(x);
  return x;
}

int64_t kernels_run(const std::vector<Tensor>& outs) {
  reset_stats();
  realize(outs);
  return stats().kernels_launched;
}

TEST(Fuse, ElementwiseChainIsOneKernel) {
  Tensor x = random_tensor({1 << 16}, float32, 1), a = random_tensor({1 << 16}, float32, 2),
         b = random_tensor({1 << 16}, float32, 3);
  EXPECT_EQ(program_of({w1(x, a, b)}).kernels.size(), 1u);
  EXPECT_EQ(program_of({w1(x, a, b)}, testing::gpu_target()).kernels.size(), 1u);
  EXPECT_MATCHES_REFERENCE({w1(x, a, b)});
  EXPECT_EQ(kernels_run({w1(x, a, b)}), 1);
}

TEST(Fuse, SixtyFourDependentOpsAreOneKernel) {
  Tensor x = random_tensor({4096}, float32, 4);
  EXPECT_EQ(program_of({w6(x)}).kernels.size(), 1u);
  EXPECT_MATCHES_REFERENCE({w6(x)});
  EXPECT_EQ(kernels_run({w6(x)}), 1);
}

// A 1,500-op chain: kernels hold expressions at most a few hundred ops deep (lowering and code
// generation recurse over them), so it runs as a handful of kernels instead of overflowing the
// stack, with the interpreter's values.
TEST(Fuse, VeryLongChainsSplitIntoBoundedKernels) {
  Tensor x = random_tensor({256}, float32, 4);
  Tensor y = x;
  for (int i = 0; i < 1000; ++i) y = i % 2 == 0 ? y * 1.0001 + 0.001 : tanh(y);
  const size_t kernels = program_of({y}).kernels.size();
  EXPECT_GE(kernels, 2u);
  EXPECT_LE(kernels, 1500u / 256 + 1);
  EXPECT_MATCHES_REFERENCE({y});
}

TEST(Fuse, RowNormalizationsAreOneKernelEach) {
  for (int64_t cols : {7, 33, 1000, 4096}) {
    SCOPED_TRACE(cols);
    Tensor x = random_tensor({9, cols}, float32, 5);
    Tensor w = random_tensor({cols}, float32, 6), b = random_tensor({cols}, float32, 7);
    auto cases = [&] {
      return std::vector<Tensor>{softmax(x, -1), log_softmax(x, -1), layer_norm(x, w, b), rms_norm(x, w)};
    };
    std::vector<Tensor> fresh = cases();
    for (const Tensor& c : cases()) {
      EXPECT_EQ(program_of({c}).kernels.size(), 1u);
      EXPECT_EQ(program_of({c}, testing::gpu_target()).kernels.size(), 1u);
      EXPECT_MATCHES_REFERENCE({c});
    }
    for (const Tensor& c : fresh) EXPECT_EQ(kernels_run({c}), 1);
  }
}

TEST(Fuse, RowsLongerThanTheTargetLimitAreNotForcedIntoOneKernel) {
  Tensor x = random_tensor({2, 20000}, float32, 8);
  EXPECT_GT(program_of({softmax(x, -1)}, testing::gpu_target()).kernels.size(), 1u);
  EXPECT_EQ(program_of({softmax(x, -1)}).kernels.size(), 1u);
}

TEST(Fuse, FullSumOfSixteenMillionIsAtMostTwoKernels) {
  Tensor x = rand({1 << 24}, 9);
  EXPECT_LE(program_of({x.sum()}).kernels.size(), 2u);
  EXPECT_LE(program_of({x.sum()}, testing::gpu_target()).kernels.size(), 2u);
  Tensor s = x.sum();
  double got = s.item();
  EXPECT_NEAR(got / double(1 << 24), 0.5, 1e-3);
  Tensor small = random_tensor({1 << 18}, float32, 10, 0, 1);
  EXPECT_MATCHES_REFERENCE({small.sum()}, {1e-5, 0});
}

TEST(Fuse, MlpBlockIsTwoKernels) {
  Tensor x = random_tensor({64, 96}, float32, 11);
  Tensor W1 = random_tensor({96, 128}, float32, 12, -0.1, 0.1), b1 = random_tensor({128}, float32, 13);
  Tensor W2 = random_tensor({128, 32}, float32, 14, -0.1, 0.1), b2 = random_tensor({32}, float32, 15);
  Tensor y = matmul(gelu(matmul(x, W1) + b1, true), W2) + b2;
  ir::Program p = program_of({y});
  EXPECT_EQ(p.kernels.size(), 2u);
  for (const ir::Kernel& k : p.kernels) EXPECT_GE(k.contraction.reduce, 0) << ir::kernel_to_string(k);
  EXPECT_MATCHES_REFERENCE({y});
  EXPECT_EQ(kernels_run({matmul(gelu(matmul(x, W1) + b1, true), W2) + b2}), 2);
}

TEST(Fuse, ExpensiveProducersAreNeverRecomputed) {
  Tensor x = random_tensor({16, 32}, float32, 16);
  Tensor w = random_tensor({32, 32}, float32, 17);
  Tensor m = matmul(x, w);
  Tensor s = x.sum({1}, true);
  // Two consumers each of a matmul and of a reduction.
  std::vector<Tensor> outs = {m.exp() + s, m * 2 - s, m.sum({0})};
  ir::Program p = program_of(outs);
  int dots = 0, reductions = 0;
  for (const ir::Kernel& k : p.kernels) {
    if (k.contraction.reduce >= 0) ++dots;
    for (const ir::KNode& n : k.nodes)
      if (ir::is_reduce(n.op) && k.contraction.reduce < 0) ++reductions;
  }
  EXPECT_EQ(dots, 1);        // the matmul once, though three outputs read it
  EXPECT_EQ(reductions, 2);  // x.sum once (read twice) and m.sum
  EXPECT_MATCHES_REFERENCE(outs);
}

TEST(Fuse, IndependentKernelsOverTheSameSpaceFuseHorizontally) {
  Tensor x = random_tensor({64, 64}, float32, 18);
  Tensor y = random_tensor({64, 64}, float32, 19);
  std::vector<Tensor> outs = {x.exp(), y.log(), x.sum({1}), y.max({1})};
  ir::Program p = program_of(outs);
  EXPECT_EQ(p.kernels.size(), 1u);  // one launch: two maps, two row reductions over [64,64]
  EXPECT_MATCHES_REFERENCE(outs);
}

TEST(Fuse, ReductionAbsorbsProducersAndConsumersOfItsOutputShape) {
  Tensor x = random_tensor({32, 48}, float32, 20);
  Tensor bias = random_tensor({32}, float32, 21);
  Tensor y = ((x * x + 1).sum({1}) + bias).sqrt();
  EXPECT_EQ(program_of({y}).kernels.size(), 1u);
  EXPECT_MATCHES_REFERENCE({y});
}

TEST(Fuse, DisablingFusionGivesOneKernelPerPrimitive) {
  Tensor x = random_tensor({256}, float32, 22), a = random_tensor({256}, float32, 23),
         b = random_tensor({256}, float32, 24);
  ir::Program p = program_of({w1(x, a, b)}, testing::cpu_target(), /*fusion=*/false);
  EXPECT_GE(p.kernels.size(), 10u);
  setenv("KILN_FUSION", "0", 1);
  int64_t launched = kernels_run({w1(x, a, b)});
  unsetenv("KILN_FUSION");
  EXPECT_EQ(launched, int64_t(p.kernels.size()));
  EXPECT_MATCHES_REFERENCE({w1(x, a, b)});
}

TEST(Fuse, MovementOpsProduceNoCopyKernels) {
  Tensor x = random_tensor({8, 12}, float32, 25);
  Tensor y = x.t().reshape({4, 24}).slice(1, 0, 24, 2).exp() + x.reshape({4, 24}).slice(1, 1, 24, 2);
  EXPECT_EQ(program_of({y}).kernels.size(), 1u);
  EXPECT_MATCHES_REFERENCE({y});
}

TEST(Fuse, ReductionReadWhereItIsComputedFusesThroughViewsThatCancel) {
  // A matmul and a row sum, each reshaped to another shape of the same size and reversed twice:
  // every element is read where the reduction's loop computes it, so the consumer joins the
  // reduction's kernel. Lowering once kept the undone reversal as a second view and refused
  // the map it had asked for (kiln_fuzz --seed 429093906707 --index 29).
  Tensor x = random_tensor({8, 5}, float32, 26), w = random_tensor({5, 16}, float32, 27);
  Tensor s = random_tensor({}, float64, 28);
  auto twice_reversed = [](const Tensor& t) { return t.slice(1, 7, -9, -1).slice(1, 7, -9, -1); };
  Tensor y = twice_reversed(matmul(x, w).reshape({16, 8})).cast(float64) * s;
  Tensor z = twice_reversed(x.sum({1}).reshape({1, 8})).exp();
  for (const Tensor& t : {y, z}) {
    EXPECT_EQ(program_of({t}).kernels.size(), 1u);
    EXPECT_EQ(program_of({t}, testing::gpu_target()).kernels.size(), 1u);
    EXPECT_MATCHES_REFERENCE({t}, {1e-5, 1e-6});  // f32 sums in another order, widened to f64
  }
}

TEST(Fuse, ReductionReadElsewhereThanItIsComputedIsStored) {
  // Reversed once, each element of the consumer reads one the reduction's loop computes at
  // another index: the reduction is stored and read by a second kernel.
  Tensor x = random_tensor({8, 5}, float32, 29), w = random_tensor({5, 16}, float32, 30);
  Tensor y = matmul(x, w).reshape({16, 8}).slice(1, 7, -9, -1).cast(float64) * 2.0;
  Tensor z = x.sum({1}).reshape({2, 4}).slice(1, 3, -5, -1).exp();
  for (const Tensor& t : {y, z}) {
    EXPECT_EQ(program_of({t}).kernels.size(), 2u);
    EXPECT_EQ(program_of({t}, testing::gpu_target()).kernels.size(), 2u);
    EXPECT_MATCHES_REFERENCE({t}, {1e-5, 1e-6});  // f32 sums in another order, widened to f64
  }
}

}  // namespace
}  // namespace kiln

// Kernel cost estimates (ir/cost.h) on Programs the passes make: bytes each buffer once, flops
// per arithmetic node evaluation, 2 * M * N * K for a contraction, 16-bit matrix math flagged,
// and each kernel's list of the graph nodes it computes.
#include <gtest/gtest.h>

#include "ir/cost.h"
#include "passes/helpers.h"
#include "testing/reference.h"

namespace kiln {
namespace {

using testing::program_of;
using testing::random_tensor;

TEST(KernelCost, ElementwiseChainReadsEachInputOnceAndCountsEachOp) {
  Tensor x = random_tensor({1024}, float32, 1), y = random_tensor({1024}, float32, 2);
  Tensor z = (x + y) * x - 1.0;  // add, mul, sub: three ops per element
  ir::Program p = program_of({z});
  ASSERT_EQ(p.kernels.size(), 1u);
  const ir::KernelCost c = ir::kernel_cost(p, p.kernels[0]);
  EXPECT_EQ(c.bytes, 3 * 1024 * 4);  // x and y read once each (x twice in the code), z written
  EXPECT_EQ(c.flops, 3 * 1024);
  EXPECT_FALSE(c.tensor_math);
  EXPECT_NE(p.kernels[0].computes.find("add"), std::string::npos) << p.kernels[0].computes;
  EXPECT_NE(p.kernels[0].computes.find("mul"), std::string::npos);
  EXPECT_NE(p.kernels[0].computes.find("sub"), std::string::npos);
  EXPECT_EQ(p.kernels[0].sources.size(), 4u) << p.kernels[0].computes;  // add, mul, const 1, sub
}

TEST(KernelCost, BroadcastOperandCountsOnce) {
  Tensor x = random_tensor({256, 512}, float32, 3), b = random_tensor({512}, float32, 4);
  ir::Program p = program_of({x + b});
  ASSERT_EQ(p.kernels.size(), 1u);
  EXPECT_EQ(ir::kernel_cost(p, p.kernels[0]).bytes, (2 * 256 * 512 + 512) * 4);
}

TEST(KernelCost, ContractionIsTwoMNKAndBf16IsMatrixMath) {
  Tensor a = random_tensor({64, 128}, float32, 5), w = random_tensor({128, 32}, float32, 6);
  ir::Program p = program_of({matmul(a, w)});
  ASSERT_EQ(p.kernels.size(), 1u);
  ir::KernelCost c = ir::kernel_cost(p, p.kernels[0]);
  EXPECT_EQ(c.flops, 2 * 64 * 128 * 32);
  EXPECT_EQ(c.bytes, (64 * 128 + 128 * 32 + 64 * 32) * 4);
  EXPECT_FALSE(c.tensor_math);
  ir::Program h = program_of({matmul(a.cast(bfloat16), w.cast(bfloat16))}, testing::gpu_target());
  bool matrix = false;
  for (const ir::Kernel& k : h.kernels) matrix |= ir::kernel_cost(h, k).tensor_math;
  EXPECT_TRUE(matrix);
}

TEST(KernelCost, ReductionCountsEveryFoldedElement) {
  Tensor x = random_tensor({32, 1000}, float32, 7);
  ir::Program p = program_of({x.sum({1})});
  ASSERT_EQ(p.kernels.size(), 1u);
  const ir::KernelCost c = ir::kernel_cost(p, p.kernels[0]);
  EXPECT_EQ(c.flops, 32 * 1000);
  EXPECT_EQ(c.bytes, (32 * 1000 + 32) * 4);
}

}  // namespace
}  // namespace kiln

// Where attention runs as one kernel: on a target with the fused kernel, the op and the
// written-out form are one kernel (with an elementwise epilogue fused in); elsewhere, and for
// shapes the kernel does not take, the expanded primitives. Values on the test's device.
#include <gtest/gtest.h>

#include <cmath>

#include "passes/helpers.h"
#include "testing/reference.h"

namespace kiln {
namespace {

using testing::program_of;
using testing::random_tensor;

ir::TargetInfo attention_target() {
  ir::TargetInfo t = testing::gpu_target();
  t.name = "cuda";
  t.compute_capability = 90;
  t.fused_attention = true;
  return t;
}

int attention_kernels(const ir::Program& p) {
  int n = 0;
  for (const ir::Kernel& k : p.kernels)
    for (const ir::KNode& x : k.nodes) n += x.op == ir::Op::kAttention;
  return n;
}

TEST(AttentionPlacement, FusedTargetRunsOneKernel) {
  Tensor q = random_tensor({2, 4, 128, 64}, bfloat16, 1, -1, 1), k = random_tensor({2, 4, 128, 64}, bfloat16, 2, -1, 1),
         v = random_tensor({2, 4, 128, 64}, bfloat16, 3);
  AttentionOptions causal;
  causal.causal = true;
  for (const Tensor& out : {scaled_dot_product_attention(q, k, v), scaled_dot_product_attention(q, k, v, causal),
                            scaled_dot_product_attention(q, k, v) * 0.5 + 1.0}) {
    ir::Program p = program_of({out}, attention_target());
    EXPECT_EQ(p.kernels.size(), 1u);
    EXPECT_EQ(attention_kernels(p), 1);
    // No buffer for scores: the kernel reads q, k, v and writes the output.
    EXPECT_EQ(p.arena_bytes, 0);
    EXPECT_MATCHES_REFERENCE({out});
  }
}

TEST(AttentionPlacement, WrittenOutFormIsRecognized) {
  const int64_t S = 128, D = 128;
  Tensor q = random_tensor({2, S, D}, bfloat16, 4, -1, 1), k = random_tensor({2, S, D}, bfloat16, 5, -1, 1),
         v = random_tensor({2, S, D}, bfloat16, 6);
  Tensor mask = random_tensor({S, S}, float32, 7);
  Tensor s = matmul(q, k.transpose(-2, -1)).cast(float32) / std::sqrt(double(D)) + mask;
  Tensor out = matmul(softmax(s, -1).cast(bfloat16), v);
  ir::Program fused = program_of({out}, attention_target());
  EXPECT_EQ(fused.kernels.size(), 1u);
  EXPECT_EQ(attention_kernels(fused), 1);
  // Without the fused kernel: scores, the softmax and the second matmul are separate kernels.
  ir::Program plain = program_of({out}, testing::gpu_target());
  EXPECT_EQ(attention_kernels(plain), 0);
  EXPECT_EQ(plain.kernels.size(), 3u);
  EXPECT_MATCHES_REFERENCE({out});
}

TEST(AttentionPlacement, OtherTargetsAndShapesExpand) {
  Tensor q = random_tensor({3, 50, 40}, bfloat16, 8, -1, 1), k = random_tensor({3, 60, 40}, bfloat16, 9, -1, 1),
         v = random_tensor({3, 60, 40}, bfloat16, 10);
  Tensor out = scaled_dot_product_attention(q, k, v);
  // Head dim 40: no fused kernel even where one exists.
  ir::Program p = program_of({out}, attention_target());
  EXPECT_EQ(attention_kernels(p), 0);
  EXPECT_EQ(p.kernels.size(), 3u);  // q k^T, softmax (one row kernel), p v with the cast
  // The CPU: expanded too.
  Tensor q64 = random_tensor({3, 50, 64}, bfloat16, 11, -1, 1);
  Tensor k64 = random_tensor({3, 60, 64}, bfloat16, 12, -1, 1), v64 = random_tensor({3, 60, 64}, bfloat16, 13);
  Tensor out64 = scaled_dot_product_attention(q64, k64, v64);
  EXPECT_EQ(attention_kernels(program_of({out64})), 0);
  EXPECT_EQ(attention_kernels(program_of({out64}, attention_target())), 1);
  EXPECT_MATCHES_REFERENCE({out, out64});
}

}  // namespace
}  // namespace kiln

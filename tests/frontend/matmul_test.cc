#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "kiln/kiln.h"
#include "testing/error_of.h"
#include "testing/reference.h"

namespace kiln {
namespace {

using testing::random_tensor;

TEST(Matmul, OddSizes) {
  uint32_t seed = 1;
  for (int64_t m : {1, 7, 33, 129})
    for (int64_t k : {1, 7, 33, 129})
      for (int64_t n : {1, 7, 33, 129}) {
        if ((m * n * k) % 5 != 0 && !(m == 129 && n == 129)) continue;  // a spread of combinations
        SCOPED_TRACE(::testing::Message() << m << "x" << k << "x" << n);
        Tensor a = random_tensor({m, k}, float32, seed++);
        Tensor b = random_tensor({k, n}, float32, seed++);
        EXPECT_MATCHES_REFERENCE({matmul(a, b)});
      }
}

// Shapes around the CPU kernel's blocking (4 x 16 blocks; up to 16 row blocks share one packed
// rhs panel while it fits 128 KiB, i.e. K <= 2048 in f32): a last group of one row block, ragged
// columns, a batch, a K too long to pack, and integers.
TEST(Matmul, RowBlockGroupsAndLongK) {
  Tensor a = random_tensor({2, 67, 50}, float32, 50), b = random_tensor({2, 50, 45}, float32, 51);
  Tensor c = random_tensor({9, 2100}, float32, 52), d = random_tensor({2100, 18}, float32, 53);
  Tensor i = random_tensor({70, 33}, int32, 54, -4, 4), j = random_tensor({33, 17}, int32, 55, -4, 4);
  EXPECT_MATCHES_REFERENCE({matmul(a, b), matmul(c, d), matmul(i, j)}, {1e-4, 1e-4});
}

// Large tiles with a long k (on GPUs whose multiprocessors these shapes give two 128 x 128 tiles
// each, lavapipe's included: threads on runs of 4 rows and columns): ragged edges, a batch, an
// epilogue, integers.
TEST(Matmul, LargeTilesWithLongK) {
  Tensor a = random_tensor({2, 300, 264}, float32, 60), b = random_tensor({264, 520}, float32, 61);
  Tensor bias = random_tensor({520}, float32, 62);
  Tensor i = random_tensor({300, 264}, int32, 63, -4, 4), j = random_tensor({264, 390}, int32, 64, -4, 4);
  EXPECT_MATCHES_REFERENCE({relu(matmul(a, b) + bias), matmul(i, j)}, {1e-4, 1e-4});
}

// Decode-like products (few output rows, long k): on a GPU split along k (passes/split_reduce.h)
// into partial products and their sum, here with a bias and an activation after it and a batch;
// ragged k is padded. The same values as the reference on every device.
TEST(Matmul, FewOutputTilesAndLongK) {
  Tensor x = random_tensor({8, 4100}, float32, 60), w = random_tensor({4100, 200}, float32, 61);
  Tensor bias = random_tensor({200}, float32, 62);
  Tensor xb = random_tensor({3, 4, 2048}, float64, 63), wb = random_tensor({3, 2048, 96}, float64, 64);
  EXPECT_MATCHES_REFERENCE({gelu(matmul(x, w) + bias), matmul(xb, wb)}, {1e-4, 1e-4});
}

TEST(Matmul, OneDimensionalOperands) {
  Tensor v = random_tensor({7}, float32, 1);
  Tensor w = random_tensor({7}, float32, 2);
  Tensor m = random_tensor({7, 5}, float32, 3);
  Tensor n = random_tensor({3, 7}, float32, 4);
  EXPECT_EQ(matmul(v, w).shape(), Shape{});
  EXPECT_EQ(matmul(v, m).shape(), (Shape{5}));
  EXPECT_EQ(matmul(n, v).shape(), (Shape{3}));
  EXPECT_MATCHES_REFERENCE({matmul(v, w), matmul(v, m), matmul(n, v)});
}

TEST(Matmul, BatchedWithBroadcast) {
  Tensor a = random_tensor({2, 1, 4, 7}, float32, 5);
  Tensor b = random_tensor({3, 7, 6}, float32, 6);
  Tensor c = random_tensor({7, 6}, float32, 7);
  EXPECT_EQ(matmul(a, b).shape(), (Shape{2, 3, 4, 6}));
  EXPECT_EQ(matmul(a, c).shape(), (Shape{2, 1, 4, 6}));
  Tensor v = random_tensor({7}, float32, 8);
  EXPECT_EQ(matmul(a, v).shape(), (Shape{2, 1, 4}));
  EXPECT_MATCHES_REFERENCE({matmul(a, b), matmul(a, c), matmul(a, v), matmul(b.transpose(1, 2), a.transpose(-1, -2))});
}

TEST(Matmul, DtypesAndTransposedOperands) {
  Tensor a = random_tensor({9, 17}, float64, 9);
  Tensor b = random_tensor({17, 5}, float64, 10);
  Tensor i = random_tensor({4, 6}, int32, 11, -5, 5);
  Tensor j = random_tensor({6, 3}, int32, 12, -5, 5);
  Tensor h = random_tensor({8, 16}, bfloat16, 13);
  Tensor g = random_tensor({16, 8}, bfloat16, 14);
  EXPECT_MATCHES_REFERENCE({matmul(a, b), matmul(b.t(), a.t()), matmul(i, j)});
  EXPECT_MATCHES_REFERENCE({matmul(h, g), matmul(h.cast(float16), g.cast(float16))}, {3e-2, 3e-2});
}

TEST(Matmul, HalfPrecisionTilesWithEpilogues) {
  // Shapes that fill whole 128x64x32 tiles (GPU tensor-core kernels take their vectorized path)
  // and ones that do not, transposed operands, and an epilogue.
  Tensor a = random_tensor({256, 96}, bfloat16, 20), b = random_tensor({96, 128}, bfloat16, 21);
  Tensor bias = random_tensor({128}, bfloat16, 22);
  Tensor c = random_tensor({130, 40}, float16, 23), d = random_tensor({40, 70}, float16, 24);
  Tensor bt = random_tensor({128, 96}, bfloat16, 25);
  EXPECT_MATCHES_REFERENCE({gelu(matmul(a, b) + bias, true), matmul(c, d), matmul(a, bt.t())}, {3e-2, 3e-2});
}

TEST(Matmul, EpilogueAndPrologueValues) {
  Tensor x = random_tensor({33, 64}, float32, 15);
  Tensor w1 = random_tensor({64, 48}, float32, 16, -0.2, 0.2);
  Tensor b1 = random_tensor({48}, float32, 17);
  Tensor w2 = random_tensor({48, 10}, float32, 18, -0.2, 0.2);
  Tensor b2 = random_tensor({10}, float32, 19);
  Tensor h = gelu(matmul(x, w1) + b1, true);
  Tensor y = matmul(h, w2) + b2;
  EXPECT_MATCHES_REFERENCE({y, relu(matmul(x * 2, w1.exp()))});
}

// The process's matmul precision for one test, restored after it.
struct PrecisionScope {
  explicit PrecisionScope(MatmulPrecision p) : saved(matmul_precision()) { set_matmul_precision(p); }
  ~PrecisionScope() { set_matmul_precision(saved); }
  MatmulPrecision saved;
};

// TF32 is a permission recorded in the graph: the IR says so, exact and TF32 graphs compile
// apart (the cache key differs), and results stay within TF32's error bound of the exact
// reference (K products, each operand rounded to 10 mantissa bits) on every device.
TEST(MatmulPrecision, Tf32IsRecordedInTheGraphAndStaysWithinItsBound) {
  const int64_t M = 77, K = 53, N = 45;  // sizes no other test compiles, not multiples of a tile
  Tensor a = random_tensor({M, K}, float32, 31), b = random_tensor({K, N}, float32, 32);
  auto fn = [](const std::vector<Tensor>& x) { return std::vector<Tensor>{matmul(x[0], x[1]) * 0.5 + 1.0}; };
  EXPECT_EQ(matmul_precision(), MatmulPrecision::kExact);
  EXPECT_EQ(export_graph(fn, {a, b}).find("precision="), std::string::npos);
  Tensor exact = fn({a, b})[0];
  exact.realize();
  int64_t built = stats().executables_built;
  {
    PrecisionScope scope(MatmulPrecision::kTf32);
    EXPECT_NE(export_graph(fn, {a, b}).find("dot %0, %1 precision=tf32 : f32[77,45]"), std::string::npos)
        << export_graph(fn, {a, b});
    Tensor fast = fn({a, b})[0];
    fast.realize();
    EXPECT_EQ(stats().executables_built, built + 1);  // not the exact graph's executable
    // |a|, |b| <= 1: each product is off by at most 2 * 2^-11 (plus f32 sums) before the 0.5.
    EXPECT_MATCHES_REFERENCE({fast}, {0.0, 0.5 * K * std::ldexp(1.0, -10)});
    // A float64 matmul is unaffected by the default (and stays exact).
    Tensor d = matmul(a.cast(float64), b.cast(float64));
    EXPECT_EQ(export_graph([](const std::vector<Tensor>& x) { return std::vector<Tensor>{matmul(x[0], x[1])}; },
                           {a.cast(float64), b.cast(float64)})
                  .find("precision="),
              std::string::npos);
    EXPECT_MATCHES_REFERENCE({d});
  }
  built = stats().executables_built;
  Tensor again = fn({a, b})[0];
  again.realize();
  EXPECT_EQ(stats().executables_built, built);  // the exact graph's executable again
  std::vector<float> e = exact.to_vector<float>(), g = again.to_vector<float>();
  EXPECT_EQ(e, g);
}

TEST(MatmulPrecision, Tf32ForOtherDtypesIsAnError) {
  Tensor h = random_tensor({4, 8}, bfloat16, 33), g = random_tensor({8, 2}, bfloat16, 34);
  EXPECT_EQ(testing::error_of([&] { (void)matmul(h, g, MatmulPrecision::kTf32); }),
            "matmul: TF32 precision applies to float32 operands; these multiply as bf16");
  EXPECT_EQ(testing::error_of([&] { (void)matmul(h, g, MatmulPrecision(7)); }), "matmul: unknown precision 7");
  EXPECT_EQ(testing::error_of([&] { set_matmul_precision(MatmulPrecision(7)); }), "set_matmul_precision: unknown precision 7");
  // Explicit exact beside a TF32 default.
  PrecisionScope scope(MatmulPrecision::kTf32);
  Tensor a = random_tensor({5, 6}, float32, 35), b = random_tensor({6, 7}, float32, 36);
  EXPECT_MATCHES_REFERENCE({matmul(a, b, MatmulPrecision::kExact), matmul(h, g)}, {3e-2, 3e-2});
}

}  // namespace
}  // namespace kiln

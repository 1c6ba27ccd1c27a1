#include <gtest/gtest.h>

#include <cmath>

#include "kiln/kiln.h"
#include "testing/reference.h"

namespace kiln {
namespace {

using testing::random_tensor;

TEST(Reduce, EveryAxisSubsetOfA4DTensorWithAndWithoutKeepdim) {
  Tensor x = random_tensor({3, 4, 5, 6}, float32, 1, 0.5, 1.5);
  for (int mask = 0; mask < 16; ++mask) {
    std::vector<int64_t> axes;
    for (int d = 0; d < 4; ++d)
      if (mask & (1 << d)) axes.push_back(d);
    for (bool keep : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "mask " << mask << " keepdim " << keep);
      std::vector<Tensor> outs = {x.sum(axes, keep), x.max(axes, keep), x.min(axes, keep), x.mean(axes, keep)};
      if (axes.size() <= 2) outs.push_back(x.prod(axes, keep));
      EXPECT_MATCHES_REFERENCE(outs);
    }
  }
}

TEST(Reduce, NegativeAxesAndEveryDtype) {
  uint32_t seed = 3;
  for (DType dt : {float32, float64, float16, bfloat16, int32, int64, int8, uint8, bool_}) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor x = random_tensor({5, 7}, dt, seed++, -4, 4);
    Tensor s = x.sum({-1});
    EXPECT_EQ(s.shape(), (Shape{5}));
    EXPECT_EQ(s.dtype(), is_float(dt) || dt == int64 ? dt : int64);
    EXPECT_MATCHES_REFERENCE({s, x.max({-2}, true), x.min({0}), x.prod({1}), x.argmax(-1), x.argmin(0, true)});
  }
}

TEST(Reduce, ArgmaxTakesTheFirstMaximumAndNanWins) {
  Tensor x = from_vector<float>({1, 5, 5, 2, NAN, 3, NAN, 0}, {2, 4});
  EXPECT_EQ(x.argmax(1).to_vector<int64_t>(), (std::vector<int64_t>{1, 0}));
  Tensor y = from_vector<float>({1, 5, 5, 2, 7, NAN, 3, 0}, {2, 4});
  EXPECT_EQ(y.argmax(1).to_vector<int64_t>(), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(y.argmin(1).to_vector<int64_t>(), (std::vector<int64_t>{0, 1}));
  EXPECT_EQ(from_vector<int32_t>({3, 9, 9, 1}, {4}).argmax().to_vector<int64_t>(), (std::vector<int64_t>{1}));
  Tensor z = random_tensor({3, 4, 5}, float32, 9);
  EXPECT_MATCHES_REFERENCE({z.argmax(), z.argmin(), z.argmax(1, true), z.argmin(2)});
}

TEST(Reduce, ArgReductionsOfLongRowsOfEveryDtype) {
  // Rows long enough for the GPU's workgroup-per-row kernels: values and indices are combined
  // across threads (int64 values once shared the indices' scratch memory; kiln_fuzz found it).
  uint32_t seed = 30;
  for (DType dt : {int64, int32, float32, float64, int8}) {
    SCOPED_TRACE(dtype_name(dt));
    for (int64_t n : {68, 1000, 5000}) {
      Tensor x = random_tensor({3, n}, dt, seed++, -100, 100);
      std::vector<Tensor> outs = {x.argmin(1), x.argmax(1), x.argmin(0), x.reshape({-1}).argmax()};
      EXPECT_MATCHES_REFERENCE(outs);
    }
  }
}

TEST(Reduce, MaxPropagatesNanAndEmptySumIsZero) {
  Tensor x = from_vector<float>({1, NAN, 3, 4}, {2, 2});
  auto m = x.max({1}).to_vector<float>();
  EXPECT_TRUE(std::isnan(m[0]));
  EXPECT_EQ(m[1], 4.0f);
  Tensor e = zeros({3, 0});
  EXPECT_EQ(e.sum({1}).to_vector<float>(), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(e.prod({1}).to_vector<float>(), (std::vector<float>{1, 1, 1}));
}

TEST(Reduce, LargeReductionsSplitAndStayAccurate) {
  Tensor x = random_tensor({1 << 20}, float32, 5, 0, 1);
  EXPECT_MATCHES_REFERENCE({x.sum(), x.max(), x.mean()}, {1e-4, 1e-6});
  Tensor y = random_tensor({4096, 256}, float32, 6, -1, 1);
  EXPECT_MATCHES_REFERENCE({y.mean({0}), y.sum({1})}, {1e-4, 1e-5});
}

// Column reductions (the reduced rows strided in memory, the outputs contiguous) take a workgroup
// per 32 outputs on GPUs, the rows split among its groups (codegen/c_family/columns.cc): output
// counts that leave a partial last tile, several phases (a softmax over axis 0 writes at every
// position), argmax ties and NaNs, non-float dtypes, and reduce axes on both sides of a kept one.
TEST(Reduce, ColumnReductionsInOnePass) {
  Tensor x = random_tensor({3000, 1000}, float32, 11, -1, 1);
  EXPECT_MATCHES_REFERENCE({x.sum({0}), x.mean({0}), x.max({0}), x.min({0}, true)}, {1e-4, 1e-5});
  EXPECT_MATCHES_REFERENCE({softmax(x, 0)}, {1e-4, 1e-6});
  // Ties: rounded values repeat down a column, so the first row of the maximum must win.
  Tensor t = (random_tensor({700, 333}, float32, 12, 0, 4) * 0.5f).floor();
  EXPECT_MATCHES_REFERENCE({t.argmax(0), t.argmin(0)});
  std::vector<float> nan_col(600 * 70, 1.0f);
  nan_col[size_t(421) * 70 + 5] = NAN;
  nan_col[size_t(599) * 70 + 69] = 2.0f;
  Tensor n = from_vector<float>(nan_col, {600, 70});
  EXPECT_MATCHES_REFERENCE({n.max({0}), n.argmax(0), n.sum({0})});
  EXPECT_MATCHES_REFERENCE({random_tensor({2048, 96}, int32, 13, -50, 50).sum({0}),
                            random_tensor({1024, 130}, float64, 14).mean({0}),
                            random_tensor({512, 100}, int64, 15, -9, 9).max({0})});
  Tensor y = random_tensor({40, 50, 60}, float32, 16);
  EXPECT_MATCHES_REFERENCE({y.sum({0, 2}), y.sum({0}), (y * y).sum({0, 1})}, {1e-4, 1e-5});
}

// Long contiguous rows (more than 16 elements per thread of a 1024-wide workgroup) read 16 bytes
// at a time on GPUs (renderer.h: row_vec4_loads), the other loads of the row an element at a
// time: a sum, a softmax (two passes and a store at every position) and a product with a
// transposed operand.
TEST(Reduce, LongRowsWithVectorLoads) {
  // 288 rows: enough outputs that a GPU does not split them (2 per multiprocessor on an H100).
  Tensor x = random_tensor({288, 20480}, float32, 21, -1, 1);
  EXPECT_MATCHES_REFERENCE({x.sum({1}), x.max({1}), x.argmax(1)}, {1e-4, 1e-5});
  EXPECT_MATCHES_REFERENCE({softmax(x.slice(0, 0, 8), -1)}, {1e-4, 1e-7});
  Tensor w = random_tensor({20480, 288}, float32, 22, -1, 1);
  EXPECT_MATCHES_REFERENCE({(x * w.transpose(0, 1)).sum({1})}, {1e-4, 1e-5});
}

}  // namespace
}  // namespace kiln

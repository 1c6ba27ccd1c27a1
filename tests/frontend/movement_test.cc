#include <gtest/gtest.h>

#include "kiln/kiln.h"
#include "testing/reference.h"

namespace kiln {
namespace {

using testing::random_tensor;

TEST(Movement, ChainsFoldIntoViews) {
  Tensor x = random_tensor({4, 6, 5}, float32, 1);
  Tensor a = x.permute({2, 0, 1}).reshape({5, 24}).slice(1, 1, -2, 3).transpose(0, 1);
  Tensor b = x.slice(0, -1, -5, -1).slice(2, 4, 0, -2).flatten().reshape({2, -1});
  Tensor c = x.reshape({24, 5}).t().reshape({5, 4, 6}).permute({1, 2, 0}).slice(1, 0, 6, 4);
  Tensor d = x.unsqueeze(1).expand({4, 3, 6, 5}).squeeze(1).sum({1});
  EXPECT_MATCHES_REFERENCE({a, b, c, d});
  EXPECT_MATCHES_REFERENCE({a.exp() + 1, b * b, c - 2});
}

TEST(Movement, SliceWithStepsAndNegativeIndices) {
  Tensor x = arange(10, int32);
  auto v = [](const Tensor& t) { return t.to_vector<int64_t>(); };
  EXPECT_EQ(v(x.slice(0, 1, 8, 3)), (std::vector<int64_t>{1, 4, 7}));
  EXPECT_EQ(v(x.slice(0, -3, 10)), (std::vector<int64_t>{7, 8, 9}));
  EXPECT_EQ(v(x.slice(0, 8, 1, -3)), (std::vector<int64_t>{8, 5, 2}));
  EXPECT_EQ(v(x.slice(0, -1, -11, -1)), (std::vector<int64_t>{9, 8, 7, 6, 5, 4, 3, 2, 1, 0}));
  EXPECT_EQ(v(x.slice(0, 100, 200)), (std::vector<int64_t>{}));
  EXPECT_EQ(v(x.slice(0, -100, 2)), (std::vector<int64_t>{0, 1}));
}

TEST(Movement, PadWithValuesAndCropping) {
  Tensor x = random_tensor({3, 4}, float32, 2);
  Tensor p = x.pad({{1, 2}, {0, 3}}, -1.5);
  EXPECT_EQ(p.shape(), (Shape{6, 7}));
  Tensor q = x.pad({{-1, 1}, {2, -2}});
  EXPECT_EQ(q.shape(), (Shape{3, 4}));
  Tensor nested = x.pad({{1, 1}, {1, 1}}, 2.0).pad({{2, 0}, {0, 2}}, 3.0).exp();
  Tensor ints = from_vector<int32_t>({1, 2, 3}, {3}).pad({{2, 1}}, 7);
  EXPECT_EQ(ints.to_vector<int64_t>(), (std::vector<int64_t>{7, 7, 1, 2, 3, 7}));
  EXPECT_MATCHES_REFERENCE({p, q, nested, p.slice(0, 5, 0, -2), x.pad({{0, 0}, {1, 1}}).sum({1})});
}

TEST(Movement, ConcatAndStack) {
  Tensor a = random_tensor({2, 3}, float32, 3);
  Tensor b = random_tensor({2, 5}, float32, 4);
  Tensor c = random_tensor({2, 1}, int32, 5, -3, 3);
  Tensor cat = concat({a, b, c}, 1);
  EXPECT_EQ(cat.shape(), (Shape{2, 9}));
  EXPECT_EQ(cat.dtype(), float32);
  Tensor st = stack({a, a * 2, a + 1}, 1);
  EXPECT_EQ(st.shape(), (Shape{2, 3, 3}));
  EXPECT_MATCHES_REFERENCE({cat, st, concat({a.t(), b.t()}, 0).exp(), concat({a, a}, -2).sum({0})});
}

TEST(Movement, RealizingAViewOfARealizedTensorCopies) {
  Tensor x = random_tensor({3, 4}, float32, 6);
  x.realize();
  Tensor t = x.t();
  EXPECT_MATCHES_REFERENCE({t, x.reshape({12}), x.slice(1, 0, 4, 2)});
}

}  // namespace
}  // namespace kiln

// Every user error is reported at record time, naming the op and the shapes.
#include <gtest/gtest.h>

#include "kiln/kiln.h"
#include "testing/error_of.h"

namespace kiln {
namespace {

using testing::error_of;

TEST(Errors, ShapeAndAxisErrorsNameTheOpAndShapes) {
  Tensor a = zeros({2, 3}), b = zeros({4}), c = zeros({4, 5});
  EXPECT_EQ(error_of([&] { (void)(a + b); }), "add: shapes [2,3] and [4] cannot be broadcast together");
  EXPECT_EQ(error_of([&] { (void)matmul(a, c); }), "matmul: shapes [2,3] and [4,5] are not aligned (3 != 4)");
  EXPECT_EQ(error_of([&] { (void)a.sum({2}); }), "sum: axis 2 out of range for a tensor of rank 2");
  EXPECT_EQ(error_of([&] { (void)a.sum({-3}); }), "sum: axis -3 out of range for a tensor of rank 2");
  EXPECT_EQ(error_of([&] { (void)a.sum({1, -1}); }), "sum: axis -1 appears twice");
  EXPECT_EQ(error_of([&] { (void)a.reshape({4, 2}); }), "reshape: cannot reshape [2,3] (6 elements) to [4,2]");
  EXPECT_EQ(error_of([&] { (void)a.reshape({-1, -1}); }), "reshape: only one -1 is allowed in [-1,-1]");
  EXPECT_EQ(error_of([&] { (void)a.permute({0, 0}); }), "permute: axis 0 appears twice in [0,0]");
  EXPECT_EQ(error_of([&] { (void)a.expand({3, 3}); }), "expand: cannot expand [2,3] to [3,3]");
  EXPECT_EQ(error_of([&] { (void)a.slice(1, 0, 3, 0); }), "slice: step must not be zero");
  EXPECT_EQ(error_of([&] { (void)a.pad({{1, 1}}); }), "pad: needs one (lo, hi) pair per axis: got 1 for shape [2,3]");
  EXPECT_EQ(error_of([&] { (void)concat({a, c}, 0); }), "concat: shapes [2,3] and [4,5] differ outside axis 0");
  EXPECT_EQ(error_of([&] { (void)matmul(zeros({2, 2, 3}), zeros({3, 3, 4})); }),
            "matmul: batch dimensions of [2,2,3] and [3,3,4] cannot be broadcast together");
  EXPECT_EQ(error_of([&] { (void)where(zeros({4}, bool_), a, a); }),
            "where: shapes [4] and [2,3] cannot be broadcast together");
  EXPECT_EQ(error_of([&] { (void)zeros({0, 3}).max({0}); }), "max: cannot reduce over axis 0 of size 0 in shape [0,3]");
  EXPECT_EQ(error_of([&] { (void)a.argmax(5); }), "argmax: axis 5 out of range for a tensor of rank 2");
  EXPECT_EQ(error_of([&] { (void)(-zeros({2}, bool_)); }), "neg: not supported for bool tensors; use logical_not");
  EXPECT_EQ(error_of([&] { (void)a.item(); }), "item: tensor of shape [2,3] has 6 elements, not 1");
  EXPECT_EQ(error_of([&] { (void)from_vector<float>({1, 2, 3}, {2, 2}); }),
            "from_vector: 3 values do not fill shape [2,2] (4 elements)");
  EXPECT_EQ(error_of([&] { (void)clamp(a, 2, 1); }), "clamp: lower bound 2 is above upper bound 1");
}

TEST(Errors, HugeShapesAreRejectedAtRecordTime) {
  EXPECT_EQ(error_of([&] { (void)zeros({int64_t(1) << 40, int64_t(1) << 40}); }),
            "full: shape [1099511627776,1099511627776] has too many elements");
  Tensor big = zeros({int64_t(1) << 31, 4});
  EXPECT_EQ(error_of([&] { (void)big.reshape({int64_t(1) << 31, 2, 2}).expand({int64_t(1) << 31, 2, 2}).reshape({-1}).unsqueeze(0).expand({int64_t(1) << 31, int64_t(1) << 33}); }),
            "expand: shape [2147483648,8589934592] has too many elements");
}

TEST(Errors, UnknownAndUnavailableDevicesAreStatuses) {
  auto d = Device::get("tpu");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().message(), "unknown device 'tpu'; known devices: cpu, vulkan, cuda, hip, metal");
  // Off macOS the Metal backend is built, and says why there is no Metal device.
#ifndef __APPLE__
  auto m = Device::get("metal");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message().rfind("metal: no Metal framework (kiln's Metal backend runs on macOS with a Metal 3 GPU): ", 0), 0u)
      << m.status();
  EXPECT_THROW(Device("metal"), Error);
#endif
  EXPECT_FALSE(set_default_device("tpu").ok());
}

TEST(Errors, UndefinedTensorsAreReported) {
  Tensor t;
  EXPECT_EQ(error_of([&] { (void)t.shape(); }), "shape: undefined tensor");
  EXPECT_EQ(error_of([&] { realize({t}); }), "realize: undefined tensor");
}

}  // namespace
}  // namespace kiln

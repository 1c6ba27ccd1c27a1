// Scatters on the test's device: every reduction with duplicate indices (values written out and
// against the interpreter), negative and out-of-range indices, scatter_nd, and record-time
// errors.
#include <gtest/gtest.h>

#include "kiln/kiln.h"
#include "testing/error_of.h"
#include "testing/reference.h"

namespace kiln {
namespace {

using testing::error_of;
using testing::random_tensor;

Tensor ints(std::vector<int64_t> v, Shape s, DType t = int64) { return from_vector(v, std::move(s), t); }

TEST(Scatter, EveryReductionWithDuplicates) {
  Tensor data = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  // Row 0 updates column 1 twice and column -1 (= 2) once; row 1 updates column 0 three times.
  Tensor idx = ints({1, 1, -1, 0, 0, 0}, {2, 3});
  Tensor upd = from_vector<float>({10, 20, 30, 7, 8, 9}, {2, 3});
  struct Case {
    ScatterReduction r;
    std::vector<float> want;
  };
  const Case cases[] = {
      {ScatterReduction::kNone, {1, 20, 30, 9, 5, 6}},  // the last duplicate along the axis wins
      {ScatterReduction::kAdd, {1, 32, 33, 28, 5, 6}},
      {ScatterReduction::kMul, {1, 400, 90, 2016, 5, 6}},
      {ScatterReduction::kMax, {1, 20, 30, 9, 5, 6}},
      {ScatterReduction::kMin, {1, 2, 3, 4, 5, 6}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(int(c.r));
    Tensor y = scatter(data, 1, idx, upd, c.r);
    EXPECT_EQ(y.to_vector<float>(), c.want);
    EXPECT_MATCHES_REFERENCE({y});
  }
}

TEST(Scatter, OutOfRangeUpdatesAreDropped) {
  Tensor data = from_vector<int32_t>({1, 2, 3, 4}, {4});
  Tensor y = scatter(data, 0, ints({4, -5, 1000000000000, -1}, {4}), from_vector<int32_t>({9, 9, 9, 7}, {4}));
  EXPECT_EQ(y.to_vector<int32_t>(), (std::vector<int32_t>{1, 2, 3, 7}));
  EXPECT_MATCHES_REFERENCE({y});
}

TEST(Scatter, IntegerDtypesAndSmallerIndices) {
  uint32_t seed = 20;
  for (DType dt : {int32, int64, int8, uint8, float16, bfloat16, float64})
    for (ScatterReduction r : {ScatterReduction::kNone, ScatterReduction::kAdd, ScatterReduction::kMul,
                               ScatterReduction::kMax, ScatterReduction::kMin}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " " + std::to_string(int(r)));
      Tensor data = random_tensor({4, 6, 5}, dt, seed++, 0, 5);
      Tensor idx = random_tensor({3, 7, 4}, int32, seed++, -6, 6);
      Tensor upd = random_tensor({3, 7, 4}, dt, seed++, 0, 3);
      EXPECT_MATCHES_REFERENCE({scatter(data, 1, idx, upd, r)});
    }
  Tensor flags = scatter(from_vector<bool>({false, false, false}, {3}), 0, ints({2}, {1}, int32),
                         from_vector<bool>({true}, {1}));
  EXPECT_EQ(flags.to_vector<bool>(), (std::vector<bool>{false, false, true}));
}

TEST(Scatter, ScatterNdRowsAndElements) {
  Tensor data = from_vector<float>({1, 2, 3, 4, 5, 6, 7, 8}, {4, 2});
  Tensor rows = scatter_nd(data, ints({3, 1, 3}, {3, 1}), from_vector<float>({10, 11, 20, 21, 30, 31}, {3, 2}),
                           ScatterReduction::kAdd);
  EXPECT_EQ(rows.to_vector<float>(), (std::vector<float>{1, 2, 23, 25, 5, 6, 47, 50}));
  EXPECT_MATCHES_REFERENCE({rows});
  Tensor elems = scatter_nd(data, ints({0, 1, -1, 0, 9, 0}, {3, 2}), from_vector<float>({-1, -2, -3}, {3}));
  EXPECT_EQ(elems.to_vector<float>(), (std::vector<float>{1, -1, 3, 4, 5, 6, -2, 8}));
  EXPECT_MATCHES_REFERENCE({elems});
  Tensor big = random_tensor({5, 4, 3}, float32, 30);
  EXPECT_MATCHES_REFERENCE({scatter_nd(big, random_tensor({6, 2}, int64, 31, -4, 4), random_tensor({6, 3}, float32, 32),
                                       ScatterReduction::kMax)});
}

TEST(Scatter, RecordTimeErrorsNameTheProblem) {
  Tensor data = zeros({2, 3});
  EXPECT_EQ(error_of([&] { scatter(data, 1, zeros({2, 1}), zeros({2, 1})); }),
            "scatter: indices must have an integer dtype, got f32");
  EXPECT_EQ(error_of([&] { scatter(data, 1, ints({0, 0}, {2, 1}), zeros({2, 2})); }),
            "scatter: updates [2,2] must have the shape of indices [2,1]");
  EXPECT_EQ(error_of([&] { scatter(data, 1, ints({0, 0}, {2, 1}), zeros({2, 1}, int32)); }),
            "scatter: updates are i32, data is f32");
  EXPECT_EQ(error_of([&] { scatter(data, 1, ints({0, 0, 0}, {3, 1}), zeros({3, 1})); }),
            "scatter: indices [3,1] exceed data [2,3] along axis 0");
  EXPECT_EQ(error_of([&] {
              scatter(zeros({2}, bool_), 0, ints({0}, {1}), zeros({1}, bool_), ScatterReduction::kAdd);
            }),
            "scatter: a reduction needs numeric data, got bool");
  EXPECT_EQ(error_of([&] { scatter_nd(data, ints({0}, {1, 1}), zeros({1, 2})); }),
            "scatter_nd: updates [1,2] should be [1,3] for data [2,3] and indices [1,1]");
}

}  // namespace
}  // namespace kiln

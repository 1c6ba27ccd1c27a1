// Gathers (take_along_axis, gather, gather_nd) on the test's device: values written out and
// against the interpreter, kernel counts showing a gather fusing like an elementwise op, the
// out-of-range behaviour, and record-time errors.
#include <gtest/gtest.h>

#include "kiln/kiln.h"
#include "passes/helpers.h"
#include "testing/error_of.h"
#include "testing/reference.h"

namespace kiln {
namespace {

using testing::error_of;
using testing::program_of;
using testing::random_tensor;

int64_t kernels_run(const std::vector<Tensor>& outs) {
  reset_stats();
  realize(outs);
  return stats().kernels_launched;
}

Tensor ints(std::vector<int64_t> v, Shape s, DType t = int64) { return from_vector(v, std::move(s), t); }

TEST(Gather, TakeAlongAxisValues) {
  Tensor x = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor idx = ints({2, 0, 1, 1, -1, -3, 0, 2}, {2, 4});
  Tensor y = take_along_axis(x, idx, 1);
  EXPECT_EQ(y.shape(), (Shape{2, 4}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{3, 1, 2, 2, 6, 4, 4, 6}));
  EXPECT_MATCHES_REFERENCE({y});
  // Along axis 0, with indices smaller than x outside the axis (x is sliced to them).
  Tensor z = take_along_axis(x, ints({1, 0, -1, 0}, {2, 2}, int32), 0);
  EXPECT_EQ(z.to_vector<float>(), (std::vector<float>{4, 2, 4, 2}));
  EXPECT_MATCHES_REFERENCE({z});
}

// ONNX calls these an error; kiln cannot raise one from a kernel, so they read 0 on every
// device and never touch memory outside the tensor (the sanitizer builds run this test too).
TEST(Gather, OutOfRangeIndicesReadZero) {
  Tensor x = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  Tensor idx = ints({3, -4, 1000000000000, -1000000000000, 2, -3}, {2, 3});
  Tensor y = take_along_axis(x, idx, 1);
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0, 0, 0, 0, 6, 4}));
  EXPECT_MATCHES_REFERENCE({y});
  Tensor b = take_along_axis(from_vector<bool>({true, true}, {2}), ints({1, 2}, {2}, int32), 0);
  EXPECT_EQ(b.to_vector<bool>(), (std::vector<bool>{true, false}));
}

TEST(Gather, EveryDtypeAndIndexDtype) {
  const DType kDtypes[] = {float32, float64, float16, bfloat16, int32, int64, int8, uint8, bool_};
  uint32_t seed = 7;
  for (DType dt : kDtypes)
    for (DType it : {int32, int64, uint8}) {
      SCOPED_TRACE(std::string(dtype_name(dt)) + " by " + dtype_name(it));
      Tensor x = random_tensor({5, 9}, dt, seed++, -4, 4);
      Tensor idx = random_tensor({5, 13}, it, seed++, it == uint8 ? 0 : -12, 12);
      EXPECT_MATCHES_REFERENCE({take_along_axis(x, idx, 1)});
    }
}

TEST(Gather, WholeSlicesAlongAnAxis) {
  Tensor x = from_vector<float>({0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11}, {2, 3, 2});
  Tensor idx = ints({2, 0, -1, 1}, {2, 2});
  Tensor y = gather(x, 1, idx);
  EXPECT_EQ(y.shape(), (Shape{2, 2, 2, 2}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{4, 5, 0, 1, 4, 5, 2, 3, 10, 11, 6, 7, 10, 11, 8, 9}));
  EXPECT_MATCHES_REFERENCE({y});
  // A scalar index drops the axis.
  Tensor s = gather(x, 2, ints({1}, {}));
  EXPECT_EQ(s.shape(), (Shape{2, 3}));
  EXPECT_EQ(s.to_vector<float>(), (std::vector<float>{1, 3, 5, 7, 9, 11}));
}

// An embedding lookup, scaled and shifted: the index load, the gathered load of the table and
// the arithmetic are ONE kernel (the table is read from its buffer at run-time rows).
TEST(Gather, EmbeddingLookupFusesWithItsConsumersAndIndexProducers) {
  Tensor table = random_tensor({50, 16}, float32, 1);
  Tensor tokens = random_tensor({4, 7}, int64, 2, 0, 50);
  Tensor pos = random_tensor({4, 7, 16}, float32, 3);
  Tensor y = gather(table, 0, tokens) * 4.0 + pos;
  EXPECT_EQ(program_of({y}).kernels.size(), 1u);
  EXPECT_EQ(program_of({y}, testing::gpu_target()).kernels.size(), 1u);
  EXPECT_EQ(kernels_run({y}), 1);
  EXPECT_MATCHES_REFERENCE({y});
  // Indices computed from other values fuse too: (tokens + 3) % 50 in integer arithmetic.
  Tensor shifted = where(tokens + 3 >= 50.0, tokens + 3 - 50, tokens + 3);
  Tensor z = gather(table, 0, shifted) + 1.0;
  EXPECT_EQ(program_of({z}).kernels.size(), 1u);
  EXPECT_MATCHES_REFERENCE({z});
}

// The gathered-from tensor must be in memory: a computed one is its own kernel; a view of a
// buffer (transpose, slice, broadcast) folds into the gather's load.
TEST(Gather, SourcesAreBuffersOrViewsOfThem) {
  Tensor x = random_tensor({6, 10}, float32, 4);
  Tensor idx = random_tensor({10, 5}, int32, 5, -6, 6);
  Tensor viewed = take_along_axis(transpose(x, 0, 1), idx, 1);
  EXPECT_EQ(program_of({viewed}).kernels.size(), 1u);
  EXPECT_MATCHES_REFERENCE({viewed});
  Tensor sliced = take_along_axis(slice(transpose(x, 0, 1), 1, 5, 0, -1), idx, 1);
  EXPECT_EQ(program_of({sliced}).kernels.size(), 1u);
  EXPECT_MATCHES_REFERENCE({sliced});
  Tensor computed = take_along_axis(exp(x), random_tensor({6, 3}, int64, 6, -10, 10), 1);
  EXPECT_EQ(program_of({computed}).kernels.size(), 2u);
  EXPECT_MATCHES_REFERENCE({computed});
}

// A gather inside a reduction (the index load runs in the reduce loop) and a softmax of
// gathered logits.
TEST(Gather, FusesIntoReductions) {
  Tensor table = random_tensor({30, 64}, float32, 7);
  Tensor tokens = random_tensor({9}, int64, 8, 0, 30);
  Tensor rows = gather(table, 0, tokens);
  Tensor s = sum(rows * rows, {1});
  EXPECT_EQ(program_of({s}).kernels.size(), 1u);
  EXPECT_MATCHES_REFERENCE({s});
  Tensor sm = softmax(rows, -1);
  EXPECT_MATCHES_REFERENCE({sm});
  // Summing over the gathered axis: indices vary along the reduce loop.
  Tensor idx = random_tensor({30, 40}, int32, 9, 0, 64);
  Tensor t = sum(take_along_axis(table, idx, 1), {1});
  EXPECT_MATCHES_REFERENCE({t});
}

TEST(Gather, GatherNdWithBatchDims) {
  Tensor x = from_vector<float>({0, 1, 2, 3, 4, 5, 6, 7}, {2, 2, 2});
  Tensor y = gather_nd(x, ints({0, 1, 1, 0}, {2, 2}));
  EXPECT_EQ(y.shape(), (Shape{2, 2}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{2, 3, 4, 5}));
  EXPECT_MATCHES_REFERENCE({y});
  Tensor b = gather_nd(x, ints({1, 0}, {2, 1}), 1);
  EXPECT_EQ(b.shape(), (Shape{2, 2}));
  EXPECT_EQ(b.to_vector<float>(), (std::vector<float>{2, 3, 4, 5}));
  EXPECT_MATCHES_REFERENCE({b});
  // Full tuples pick elements; one entry out of range zeroes the whole tuple's read.
  Tensor e = gather_nd(x, ints({1, 1, -1, 0, 0, 2, 0, 0, 0, 7, 0, 0}, {4, 3}, int32));
  EXPECT_EQ(e.to_vector<float>(), (std::vector<float>{7, 0, 0, 0}));
  EXPECT_MATCHES_REFERENCE({e});
  Tensor r = random_tensor({3, 4, 5, 6}, float32, 10);
  EXPECT_MATCHES_REFERENCE({gather_nd(r, random_tensor({3, 7, 2}, int64, 11, -4, 4), 1)});
}

TEST(Gather, RecordTimeErrorsNameTheProblem) {
  Tensor x = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(error_of([&] { take_along_axis(x, from_vector<float>({0, 1}, {2, 1}), 1); }),
            "take_along_axis: indices must have an integer dtype, got f32");
  EXPECT_EQ(error_of([&] { take_along_axis(x, ints({0, 1}, {2}), 1); }),
            "take_along_axis: indices [2] must have the rank of [2,3]");
  EXPECT_EQ(error_of([&] { take_along_axis(x, ints({0, 1, 0}, {3, 1}), 1); }),
            "take_along_axis: indices [3,1] exceed [2,3] along axis 0");
  EXPECT_EQ(error_of([&] { take_along_axis(x, ints({0, 1}, {2, 1}), 2); }),
            "take_along_axis: axis 2 out of range for a tensor of rank 2");
  EXPECT_EQ(error_of([&] { gather(x, 0, from_vector<bool>({true}, {1})); }),
            "gather: indices must have an integer dtype, got bool");
  EXPECT_EQ(error_of([&] { gather_nd(x, ints({0, 1, 0}, {1, 3})); }),
            "gather_nd: index tuples of length 3 do not fit data [2,3] after 0 batch dims");
  EXPECT_EQ(error_of([&] { gather_nd(x, ints({0}, {1, 1}), 1); }),
            "gather_nd: batch dims differ: data [2,3], indices [1,1]");
  EXPECT_EQ(error_of([&] { take_along_axis(zeros({2, 0}), ints({0, 0}, {2, 1}), 1); }),
            "take_along_axis: cannot gather from axis 1 of size 0 in [2,0]");
}

}  // namespace
}  // namespace kiln

// Segmented reductions (segment_sum / prod / max / min) on the test's device: ragged segments
// written out and against the interpreter, empty segments holding the identity, offsets outside
// the data clamped, integer dtypes, views of the data read in place, the kernel count of a
// segment reduction with its producers and consumers, replays with new offsets, and the errors
// of bad operands. On CUDA the same tests run under each thread mapping (KILN_GPU_SEGMENTS).
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>

#include "kiln/kiln.h"
#include "testing/error_of.h"
#include "testing/reference.h"

namespace kiln {
namespace {

using testing::error_of;
using testing::random_tensor;

Tensor ints(std::vector<int64_t> v, DType t = int64) {
  const int64_t n = int64_t(v.size());
  return from_vector(v, {n}, t);
}

int64_t kernels_run(const std::vector<Tensor>& outs) {
  reset_stats();
  realize(outs);
  return stats().kernels_launched;
}

TEST(Segment, SumsRaggedRows) {
  Tensor x = from_vector<float>({1, 2, 3, 4, 5, 6, 7}, {7});
  Tensor y = segment_sum(x, ints({0, 2, 2, 5, 7}));
  EXPECT_EQ(y.shape(), (Shape{4}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{3, 0, 12, 13}));
  EXPECT_MATCHES_REFERENCE({y});
}

// A segment reduction read by a reduction (the GPU kernels once read every segment row at the
// segment's first row when the two were fused).
TEST(Segment, SummedAfterwards) {
  Tensor x = arange(0, 40, 1, float32).reshape({2, 20});
  Tensor s = segment_sum(x, ints({8, 4, -2, 3, -1})), m = segment_max(x, ints({0, 1, 2}));
  // offsets clamped to [2, 2, 0, 2, 0]: only segment 2, rows [0, 2), is not empty
  EXPECT_EQ(s.sum().item(), 780.0);
  EXPECT_EQ(m.sum({1}).to_vector<float>(), (std::vector<float>{190, 590}));
  EXPECT_MATCHES_REFERENCE({s.sum(), m.sum({1}), s.max()});
}

// Every fold over rows of three columns; the empty segment holds each fold's identity.
TEST(Segment, EveryModeOverColumnsWithAnEmptySegment) {
  Tensor x = from_vector<float>({1, -2, 3,  4, 5, -6,  0.5f, 2, 2,  -1, -1, 8,  3, 3, 3,  2, 0, -4}, {6, 3});
  Tensor off = ints({0, 1, 4, 4, 6});
  Tensor s = segment_sum(x, off), p = segment_prod(x, off), mx = segment_max(x, off), mn = segment_min(x, off);
  EXPECT_EQ(s.shape(), (Shape{4, 3}));
  const float inf = std::numeric_limits<float>::infinity();
  EXPECT_EQ(s.to_vector<float>(), (std::vector<float>{1, -2, 3, 3.5f, 6, 4, 0, 0, 0, 5, 3, -1}));
  EXPECT_EQ(p.to_vector<float>(), (std::vector<float>{1, -2, 3, -2, -10, -96, 1, 1, 1, 6, 0, -12}));
  EXPECT_EQ(mx.to_vector<float>(), (std::vector<float>{1, -2, 3, 4, 5, 8, -inf, -inf, -inf, 3, 3, 3}));
  EXPECT_EQ(mn.to_vector<float>(), (std::vector<float>{1, -2, 3, -1, -1, -6, inf, inf, inf, 2, 0, -4}));
  EXPECT_MATCHES_REFERENCE({s, p, mx, mn});
}

// Integers fold exactly; an empty max / min holds the dtype's own lowest / highest value.
TEST(Segment, IntegerDtypes) {
  Tensor x = from_vector<int32_t>({5, -7, 9, 1000000, 3}, {5}, int32);
  Tensor off = ints({0, 3, 3, 5}, int32);
  EXPECT_EQ(segment_sum(x, off).to_vector<int32_t>(), (std::vector<int32_t>{7, 0, 1000003}));
  EXPECT_EQ(segment_max(x, off).to_vector<int32_t>(),
            (std::vector<int32_t>{9, std::numeric_limits<int32_t>::min(), 1000000}));
  EXPECT_EQ(segment_min(x, off).to_vector<int32_t>(),
            (std::vector<int32_t>{-7, std::numeric_limits<int32_t>::max(), 3}));
  Tensor b = from_vector<uint8_t>({200, 7, 255}, {3}, uint8);
  EXPECT_EQ(segment_min(b, ints({0, 0, 3})).to_vector<uint8_t>(), (std::vector<uint8_t>{255, 7}));
  Tensor l = from_vector<int64_t>({int64_t(1) << 40, 3, -4}, {3});
  Tensor ls = segment_sum(l, ints({0, 3, 1}));
  EXPECT_EQ(ls.to_vector<int64_t>(), (std::vector<int64_t>{(int64_t(1) << 40) - 1, 0}));
  EXPECT_MATCHES_REFERENCE({segment_prod(x, off), ls});
}

// Offsets are read at run time: outside [0, N] they are clamped, an end before its start is an
// empty segment, and segments may overlap or come in any order.
TEST(Segment, OffsetsOutsideTheDataAreClamped) {
  Tensor x = from_vector<float>({1, 2, 4, 8}, {4});
  Tensor y = segment_sum(x, ints({-5, 3, 1, 100, 2}));
  // [0, 3), [3, 1) empty, [1, 4), [4, 2) empty.
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{7, 0, 14, 0}));
  EXPECT_MATCHES_REFERENCE({y});
}

TEST(Segment, MaxAndMinPropagateNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  Tensor x = from_vector<float>({1, nan, 3, 4}, {4});
  std::vector<float> mx = segment_max(x, ints({0, 2, 4})).to_vector<float>();
  std::vector<float> mn = segment_min(x, ints({0, 2, 4})).to_vector<float>();
  EXPECT_TRUE(std::isnan(mx[0]));
  EXPECT_EQ(mx[1], 4);
  EXPECT_TRUE(std::isnan(mn[0]));
  EXPECT_EQ(mn[1], 3);
}

// The data's producers run in a kernel of their own (segments read rows at run-time
// positions); the offsets' cast and the result's consumers fuse into the segment kernel.
TEST(Segment, FusesOffsetsAndConsumers) {
  Tensor x = random_tensor({50, 4}, float32, 3);
  Tensor off = ints({0, 10, 10, 37, 50}, int32);
  Tensor y = exp(segment_max(x * 2.0, off)) + 1.0;
  EXPECT_EQ(kernels_run({y}), 2);
  EXPECT_MATCHES_REFERENCE({y});
  // A view of an input is read in place: a transposed matrix's rows need no copy.
  Tensor t = random_tensor({4, 50}, float32, 4);
  Tensor z = segment_sum(t.permute({1, 0}), off);
  EXPECT_EQ(kernels_run({z}), 1);
  EXPECT_MATCHES_REFERENCE({z});
}

// Ragged lengths from 0 to thousands of rows, narrow and wide rows: each thread mapping of the
// GPU renderers meets short and long segments (the queue's batches, the block's stride loop).
TEST(Segment, LongAndShortSegmentsAgainstTheInterpreter) {
  std::mt19937 rng(7);
  std::vector<int64_t> off = {0};
  for (int s = 0; s < 300; ++s) {
    int64_t len = s % 37 == 0 ? 2000 + int64_t(rng() % 1000) : int64_t(rng() % 9);
    off.push_back(off.back() + len);
  }
  const int64_t N = off.back();
  for (int64_t R : {1, 5, 8, 40}) {
    Tensor x = random_tensor({N, R}, float32, uint32_t(R));
    Tensor o = ints(off);
    Tensor s = segment_sum(x, o), mx = segment_max(x, o);
    EXPECT_MATCHES_REFERENCE({s, mx}) << R << " columns";
    // A replay of the same executable: a work queue must start from the first batch again.
    Tensor again = segment_sum(x, o);
    EXPECT_EQ(again.to_vector<float>(), s.to_vector<float>()) << R << " columns";
  }
  Tensor h = random_tensor({N}, float16, 9);
  EXPECT_MATCHES_REFERENCE({segment_sum(h, ints(off))});
}

// The offsets' values are data: new offsets of the same shape replay the compiled program.
TEST(Segment, NewOffsetsReplayWithoutCompiling) {
  Tensor x = from_vector<float>({1, 2, 3, 4, 5, 6}, {6});
  EXPECT_EQ(segment_sum(x, ints({0, 1, 6})).to_vector<float>(), (std::vector<float>{1, 20}));
  reset_stats();
  EXPECT_EQ(segment_sum(x, ints({0, 4, 5})).to_vector<float>(), (std::vector<float>{10, 5}));
  EXPECT_EQ(stats().kernels_compiled, 0);
}

TEST(Segment, EmptyShapes) {
  Tensor none = segment_sum(random_tensor({5, 2}, float32, 1), ints({3}));
  EXPECT_EQ(none.shape(), (Shape{0, 2}));
  EXPECT_TRUE(none.to_vector<float>().empty());
  Tensor rows0 = segment_max(zeros({0, 2}, int64), ints({0, 0, 4}));
  EXPECT_EQ(rows0.to_vector<int64_t>(), (std::vector<int64_t>(4, std::numeric_limits<int64_t>::min())));
}

TEST(Segment, BadOperandsAreClearErrors) {
  Tensor x = zeros({4, 2});
  EXPECT_NE(error_of([&] { segment_sum(zeros({4}, bool_), ints({0, 4})); }).find("segment_sum: needs numeric data, got bool"),
            std::string::npos);
  EXPECT_NE(error_of([&] { segment_max(x, zeros({3})); }).find("segment_max: offsets must have an integer dtype, got f32"),
            std::string::npos);
  EXPECT_NE(error_of([&] { segment_min(x, zeros({2, 2}, int64)); }).find("segment_min: offsets must be 1-D"),
            std::string::npos);
  EXPECT_NE(error_of([&] { segment_prod(x, zeros({0}, int64)); }).find("S + 1 >= 1 entries"), std::string::npos);
  EXPECT_NE(error_of([&] { segment_sum(full({}, 1.0), ints({0, 1})); }).find("data must have a row axis"),
            std::string::npos);
}

}  // namespace
}  // namespace kiln

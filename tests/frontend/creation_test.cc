#include <gtest/gtest.h>

#include <cmath>

#include "kiln/kiln.h"
#include "testing/error_of.h"
#include "testing/reference.h"

namespace kiln {
namespace {

TEST(Creation, FullZerosOnesArange) {
  EXPECT_EQ(full({2, 2}, 3.5).to_vector<float>(), (std::vector<float>{3.5, 3.5, 3.5, 3.5}));
  EXPECT_EQ(ones({3}, int8).to_vector<int64_t>(), (std::vector<int64_t>{1, 1, 1}));
  EXPECT_EQ(arange(5).dtype(), int64);
  EXPECT_EQ(arange(5).to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(arange(2, 11, 3, int32).to_vector<int64_t>(), (std::vector<int64_t>{2, 5, 8}));
  EXPECT_EQ(arange(1.0, 0.0, -0.25).to_vector<float>(), (std::vector<float>{1.0, 0.75, 0.5, 0.25}));
  EXPECT_EQ(arange(0).numel(), 0);
  EXPECT_EQ(scalar(2.0).item(), 2.0);
}

TEST(Creation, FromVectorConvertsAndKeepsData) {
  std::vector<double> d = {1.5, -2.25, 1e300};
  Tensor t = from_vector(d, {3});
  EXPECT_EQ(t.dtype(), float64);
  EXPECT_EQ(t.to_vector<double>(), d);
  Tensor h = from_vector(std::vector<float>{1.0f, 0.333333f, 65504.0f, 70000.0f}, {4}, float16);
  auto hv = h.to_vector<float>();
  EXPECT_EQ(hv[0], 1.0f);
  EXPECT_NEAR(hv[1], 0.333333f, 2e-4);
  EXPECT_EQ(hv[2], 65504.0f);
  EXPECT_TRUE(std::isinf(hv[3]));
  std::vector<bool> bits = {true, false, true};
  EXPECT_EQ(from_vector(bits, {3}).to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 1}));
  int32_t raw[4] = {4, 3, 2, 1};
  EXPECT_EQ(from_data(raw, {2, 2}).sum().item(), 10.0);
}

TEST(Creation, RandomIsDeterministicPerSeedAndMatchesTheReference) {
  Tensor a = rand({1000}, 7), b = rand({1000}, 7), c = rand({1000}, 8);
  EXPECT_EQ(a.to_vector<float>(), b.to_vector<float>());
  EXPECT_NE(a.to_vector<float>(), c.to_vector<float>());
  Tensor n = randn({4096}, 3);
  double mean = n.mean().item(), var = (n * n).mean().item();
  EXPECT_NEAR(mean, 0.0, 0.06);
  EXPECT_NEAR(var, 1.0, 0.08);
  EXPECT_MATCHES_REFERENCE({rand({3, 5}, 11), randn({3, 5}, 12), rand({4, 4}, 13, float64).t(), randn({6}, 14, bfloat16)});
  auto u = rand({10000}, 1).to_vector<float>();
  for (float v : u) {
    ASSERT_GE(v, 0.0f);
    ASSERT_LT(v, 1.0f);
  }
}

// copy_to downloads into the caller's memory (reusable between calls) and refuses another
// element type or a wrong count, where to_vector would convert.
TEST(Creation, CopyToFillsTheCallersMemoryAndChecksTypeAndCount) {
  std::vector<float> in = {1.5f, -2.0f, 3.25f, 0.0f, 7.0f, -0.5f};
  Tensor x = from_vector(in, {2, 3}) * 2.0;
  std::vector<float> out(6, 99.0f);
  x.copy_to(out.data(), 6);
  for (size_t i = 0; i < in.size(); ++i) EXPECT_EQ(out[i], 2 * in[i]);
  std::vector<int32_t> ints(6);
  EXPECT_NE(testing::error_of([&] { x.copy_to(ints.data(), 6); }).find("copy_to: the tensor holds f32"), std::string::npos)
      << testing::error_of([&] { x.copy_to(ints.data(), 6); });
  EXPECT_EQ(testing::error_of([&] { x.copy_to(out.data(), 5); }), "copy_to: 5 elements given for a tensor of 6 (shape [2,3])");
  Tensor i = from_vector(std::vector<int64_t>{4, 5, 6}, {3});
  std::vector<int64_t> back(3);
  i.copy_to(back.data(), 3);
  EXPECT_EQ(back, (std::vector<int64_t>{4, 5, 6}));
}

// Several tensors downloaded together (one realize for the lazy ones, every copy queued before
// the host waits): the same values as one to_vector each, converted the same way.
TEST(Creation, ToVectorsDownloadsSeveralTensorsAtOnce) {
  Tensor a = from_vector(std::vector<float>{1.5f, -2.0f, 3.25f}, {3});
  Tensor lazy = a * 2.0 + 1.0;                                      // realized by to_vectors
  Tensor ints = from_vector(std::vector<int64_t>{7, -8, 9, 10}, {2, 2});
  Tensor flags = a > 0.0;                                            // bool, converted
  Tensor half = a.cast(float16);                                     // f16, converted
  Tensor empty = zeros({0, 3});
  Tensor big = arange(3 << 20).cast(float32) * 0.5;                 // 12 MiB: more than one staging buffer
  std::vector<Tensor> all = {lazy, ints, flags, half, empty, big, lazy};
  std::vector<std::vector<float>> got = to_vectors<float>(all);
  ASSERT_EQ(got.size(), all.size());
  for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(got[i], all[i].to_vector<float>()) << "tensor " << i;
  EXPECT_EQ(got[0], (std::vector<float>{4.0f, -3.0f, 7.5f}));
  EXPECT_EQ(got[2], (std::vector<float>{1, 0, 1}));
  EXPECT_TRUE(got[4].empty());
  EXPECT_EQ(got[5][(3 << 20) - 1], 0.5f * float((3 << 20) - 1));
  std::vector<std::vector<int64_t>> as_ints = to_vectors<int64_t>({ints, lazy});
  EXPECT_EQ(as_ints[0], (std::vector<int64_t>{7, -8, 9, 10}));
  EXPECT_EQ(as_ints[1], (std::vector<int64_t>{4, -3, 7}));
  EXPECT_EQ(to_vectors<bool>({flags})[0], (std::vector<bool>{true, false, true}));
  EXPECT_TRUE(to_vectors<float>({}).empty());
  EXPECT_EQ(testing::error_of([&] { to_vectors<float>({a, Tensor()}); }), "to_vectors: undefined tensor");
}

}  // namespace
}  // namespace kiln

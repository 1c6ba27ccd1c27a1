// The executable cache: a second graph of the same structure compiles nothing.
#include <gtest/gtest.h>

#include "kiln/kiln.h"
#include "testing/reference.h"

namespace kiln {
namespace {

Tensor model(const Tensor& x, const Tensor& w) { return softmax(matmul(x, w).tanh() * 2.0, -1); }

TEST(Cache, SameStructureNewDataCompilesNothing) {
  Tensor x1 = testing::random_tensor({8, 16}, float32, 1), w1 = testing::random_tensor({16, 4}, float32, 2);
  std::vector<float> first = model(x1, w1).to_vector<float>();
  reset_stats();
  Tensor x2 = testing::random_tensor({8, 16}, float32, 3), w2 = testing::random_tensor({16, 4}, float32, 4);
  Tensor y2 = model(x2, w2);
  EXPECT_MATCHES_REFERENCE({y2});
  Stats s = stats();
  EXPECT_EQ(s.kernels_compiled, 0);
  EXPECT_EQ(s.executables_built, 0);
  EXPECT_EQ(s.executable_cache_hits, 1);
  EXPECT_EQ(s.graphs_realized, 1);
  EXPECT_GE(s.kernels_launched, 1);
  EXPECT_NE(y2.to_vector<float>(), first);  // new data, new result
}

TEST(Cache, DifferentShapesOrConstantsCompileAgain) {
  Tensor x = testing::random_tensor({5}, float32, 1);
  (x * 3.0).realize();
  reset_stats();
  (x * 4.0).realize();
  EXPECT_EQ(stats().executables_built, 1);
  Tensor y = testing::random_tensor({6}, float32, 2);
  (y * 4.0).realize();
  EXPECT_EQ(stats().executables_built, 2);
}

TEST(Cache, RealizedOutputsAreNeverOverwrittenByLaterRuns) {
  Tensor a = testing::random_tensor({64}, float32, 5);
  Tensor r1 = (a + 1).realize();
  std::vector<float> v1 = r1.to_vector<float>();
  Tensor b = testing::random_tensor({64}, float32, 6);
  Tensor r2 = (b + 1).realize();  // same executable, replayed
  EXPECT_EQ(r1.to_vector<float>(), v1);
  EXPECT_NE(r2.to_vector<float>(), v1);
}

TEST(Cache, SeveralOutputsRealizeAsOneGraph) {
  Tensor x = testing::random_tensor({32, 32}, float32, 7);
  Tensor s = x.sum({1}), m = x.max({1}), e = x.exp();
  reset_stats();
  realize({s, m, e});
  EXPECT_EQ(stats().graphs_realized, 1);
  EXPECT_TRUE(s.is_realized() && m.is_realized() && e.is_realized());
}

}  // namespace
}  // namespace kiln

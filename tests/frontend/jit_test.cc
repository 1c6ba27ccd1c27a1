#include <gtest/gtest.h>

#include "kiln/kiln.h"
#include "testing/reference.h"

namespace kiln {
namespace {

using testing::random_tensor;

std::vector<float> values(const Tensor& t) { return t.to_vector<float>(); }

TEST(Jit, TracesOncePerSignatureAndReplaysWithoutGraphWork) {
  Tensor w = random_tensor({8, 4}, float32, 1);  // captured constant
  int calls = 0;
  Jit f([&](const std::vector<Tensor>& in) {
    ++calls;
    return std::vector<Tensor>{softmax(matmul(in[0], w) + in[1], -1), in[1]};
  });
  Tensor x1 = random_tensor({3, 8}, float32, 2), b1 = random_tensor({4}, float32, 3);
  std::vector<Tensor> r1 = f({x1, b1});
  EXPECT_EQ(calls, 1);
  reset_stats();
  Tensor x2 = random_tensor({3, 8}, float32, 4), b2 = random_tensor({4}, float32, 5);
  std::vector<Tensor> r2 = f({x2, b2});
  EXPECT_EQ(calls, 1);  // replayed, not re-traced
  EXPECT_EQ(stats().executables_built, 0);
  EXPECT_EQ(stats().executable_cache_hits, 0);  // not even a cache lookup
  EXPECT_EQ(stats().graphs_realized, 1);
  EXPECT_EQ(values(r2[0]), values(softmax(matmul(x2, w) + b2, -1)));
  EXPECT_EQ(values(r2[1]), values(b2));
  EXPECT_EQ(values(r1[0]), values(softmax(matmul(x1, w) + b1, -1)));  // earlier results intact
  f({random_tensor({5, 8}, float32, 6), b1});
  EXPECT_EQ(calls, 2);
  EXPECT_EQ(f.traces(), 2);
}

TEST(Jit, LazyInputsAreRealizedFirstAndAliasedArgumentsStayDistinct) {
  Jit f([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] * 2 + in[1]}; });
  Tensor a = random_tensor({16}, float32, 7);
  Tensor lazy = a.exp();
  EXPECT_EQ(values(f({lazy, a})[0]), values(a.exp() * 2 + a));
  EXPECT_EQ(values(f({a, a})[0]), values(a * 2 + a));  // same buffer twice: its own trace
  Tensor b = random_tensor({16}, float32, 8);
  EXPECT_EQ(values(f({a, b})[0]), values(a * 2 + b));
}

TEST(Jit, ErrorsAreReported) {
  Jit none([](const std::vector<Tensor>&) { return std::vector<Tensor>{}; });
  EXPECT_THROW(none({zeros({2})}), Error);
  Jit bad([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] + zeros({3})}; });
  try {
    bad({zeros({2})});
    FAIL();
  } catch (const Error& e) {
    EXPECT_STREQ(e.what(), "add: shapes [2] and [3] cannot be broadcast together");
  }
}

}  // namespace
}  // namespace kiln

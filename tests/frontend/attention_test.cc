// scaled_dot_product_attention against the interpreter on every device: the fused kernel where the
// device has one (CUDA sm_80+, bf16/f16, head dims 64/128), the expanded primitives elsewhere;
// masks, broadcasting, ragged lengths, the written-out form, and bad input.
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/kiln.h"
#include "testing/reference.h"

namespace kiln {
namespace {

using testing::random_tensor;

// Written out as a user would: softmax(q @ k^T * scale + bias) @ v.
Tensor written_out(const Tensor& q, const Tensor& k, const Tensor& v, double scale, const Tensor& bias = Tensor()) {
  Tensor s = matmul(q, k.transpose(-2, -1)).cast(float32) * scale;
  if (bias.defined()) s = s + bias;
  return matmul(softmax(s, -1).cast(q.dtype()), v);
}

TEST(Attention, MatchesReferenceAcrossShapesAndDtypes) {
  for (DType dt : {bfloat16, float16, float32})
    for (int64_t D : {64, 128, 40})
      for (bool causal : {false, true})
        for (auto [Sq, Sk] : std::vector<std::pair<int64_t, int64_t>>{{64, 64}, {70, 129}, {1, 33}, {130, 70}}) {
          SCOPED_TRACE(::testing::Message() << dtype_name(dt) << " D=" << D << " causal=" << causal << " Sq=" << Sq
                                            << " Sk=" << Sk);
          Tensor q = random_tensor({2, 3, Sq, D}, dt, 1, -1, 1), k = random_tensor({2, 3, Sk, D}, dt, 2, -1, 1),
                 v = random_tensor({2, 3, Sk, D}, dt, 3);
          AttentionOptions o;
          o.causal = causal;
          EXPECT_MATCHES_REFERENCE({scaled_dot_product_attention(q, k, v, o)});
        }
}

// More key tiles than the Hopper kernel's ring of stages (so its barriers change phase), queries
// that end inside a tile, and a row layout with padding between rows (a strided view).
TEST(Attention, LongKeysRaggedQueriesAndPaddedRows) {
  for (int64_t D : {64, 128})
    for (bool causal : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "D=" << D << " causal=" << causal);
      Tensor q = random_tensor({1, 2, 300, D}, bfloat16, 30, -1, 1), k = random_tensor({1, 2, 700, D}, bfloat16, 31, -1, 1);
      Tensor v = random_tensor({1, 2, 700, D + 8}, bfloat16, 32).slice(-1, 0, D);  // rows D + 8 apart
      AttentionOptions o;
      o.causal = causal;
      EXPECT_MATCHES_REFERENCE({scaled_dot_product_attention(q, k, v, o)});
    }
}

// Four or more 128-query tiles per head (on Hopper with KILN_CUDA_SM90_ATTENTION_CLUSTER=2, two
// blocks share each k/v tile; under a causal mask the shorter one walks masked tiles too).
TEST(Attention, ManyQueryTiles) {
  for (int64_t D : {64, 128})
    for (bool causal : {false, true}) {
      SCOPED_TRACE(::testing::Message() << "D=" << D << " causal=" << causal);
      Tensor q = random_tensor({1, 3, 1024, D}, bfloat16, 40, -1, 1), k = random_tensor({1, 3, 700, D}, bfloat16, 41, -1, 1),
             v = random_tensor({1, 3, 700, D}, bfloat16, 42);
      AttentionOptions o;
      o.causal = causal;
      EXPECT_MATCHES_REFERENCE({scaled_dot_product_attention(q, k, v, o)});
    }
}

TEST(Attention, MasksBroadcastAndScale) {
  const int64_t S = 80, D = 64;
  Tensor q = random_tensor({2, 4, S, D}, bfloat16, 4, -1, 1);
  Tensor k = random_tensor({2, 1, S, D}, bfloat16, 5, -1, 1);  // one k/v head shared by 4 q heads
  Tensor v = random_tensor({2, 1, S, D}, bfloat16, 6);
  // Bool mask over [Sq, Sk]: attend where (i + j) % 3 != 0, and always to key 0.
  Tensor i = arange(S).reshape({S, 1}), j = arange(S).reshape({1, S});
  Tensor keep = ((i + j) - ((i + j) / 3).floor() * 3 != 0.0) || (j == 0.0);
  AttentionOptions o;
  o.mask = keep;
  EXPECT_MATCHES_REFERENCE({scaled_dot_product_attention(q, k, v, o)});
  o.mask = random_tensor({1, S, S}, float32, 7);  // additive
  o.scale = 0.3;
  EXPECT_MATCHES_REFERENCE({scaled_dot_product_attention(q, k, v, o)});
  o.causal = true;
  EXPECT_MATCHES_REFERENCE({scaled_dot_product_attention(q, k, v, o)});
}

TEST(Attention, RowWithNothingToAttendToIsNaN) {
  const int64_t S = 16, D = 64;
  Tensor q = random_tensor({1, S, D}, bfloat16, 8), k = random_tensor({1, S, D}, bfloat16, 9),
         v = random_tensor({1, S, D}, bfloat16, 10);
  std::vector<uint8_t> m(S * S, 1);
  for (int64_t c = 0; c < S; ++c) m[3 * S + c] = 0;  // row 3 masks every key
  AttentionOptions o;
  o.mask = from_vector(std::vector<bool>(m.begin(), m.end()), {S, S});
  Tensor out = scaled_dot_product_attention(q, k, v, o);
  EXPECT_MATCHES_REFERENCE({out});
  std::vector<float> h = out.cast(float32).to_vector<float>();
  EXPECT_TRUE(std::isnan(h[3 * D]));
  EXPECT_FALSE(std::isnan(h[2 * D]));
}

TEST(Attention, WrittenOutFormMatchesTheOp) {
  const int64_t S = 96, D = 128;
  Tensor q = random_tensor({2, 2, S, D}, bfloat16, 11, -1, 1), k = random_tensor({2, 2, S, D}, bfloat16, 12, -1, 1),
         v = random_tensor({2, 2, S, D}, bfloat16, 13);
  Tensor bias = random_tensor({S, S}, float32, 14);
  const double scale = 1 / std::sqrt(double(D));
  EXPECT_MATCHES_REFERENCE({written_out(q, k, v, scale)});
  EXPECT_MATCHES_REFERENCE({written_out(q, k, v, scale, bias)});
  AttentionOptions o;
  o.mask = bias;
  std::vector<float> a = scaled_dot_product_attention(q, k, v, o).cast(float32).to_vector<float>();
  std::vector<float> b = written_out(q, k, v, scale, bias).cast(float32).to_vector<float>();
  ASSERT_EQ(a.size(), b.size());
  for (size_t x = 0; x < a.size(); ++x) ASSERT_NEAR(a[x], b[x], 0.03) << x;
}

TEST(Attention, EpilogueAfterAttention) {
  Tensor q = random_tensor({4, 64, 64}, bfloat16, 15, -1, 1), k = random_tensor({4, 100, 64}, bfloat16, 16, -1, 1),
         v = random_tensor({4, 100, 64}, bfloat16, 17);
  Tensor r = random_tensor({4, 64, 64}, bfloat16, 18);
  EXPECT_MATCHES_REFERENCE({scaled_dot_product_attention(q, k, v) * 2.0 + r});
}

TEST(Attention, BadInputIsAClearError) {
  Tensor q = random_tensor({2, 8, 64}, bfloat16, 1), k = random_tensor({2, 9, 64}, bfloat16, 2),
         v = random_tensor({2, 9, 32}, bfloat16, 3);
  auto message = [](const std::function<void()>& f) {
    try {
      f();
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message([&] { scaled_dot_product_attention(q, random_tensor({2, 9, 32}, bfloat16, 4), v); })
                .find("differ in the head dim"),
            std::string::npos);
  EXPECT_NE(message([&] { scaled_dot_product_attention(q, k, random_tensor({2, 7, 64}, bfloat16, 5)); })
                .find("differ in the key length"),
            std::string::npos);
  EXPECT_NE(message([&] { scaled_dot_product_attention(q, k.cast(float32), v); }).find("share one floating-point dtype"),
            std::string::npos);
  AttentionOptions o;
  o.mask = random_tensor({8, 10}, float32, 6);
  EXPECT_NE(message([&] { scaled_dot_product_attention(q, k, v, o); }).find("does not broadcast to the scores' shape [2,8,9]"),
            std::string::npos);
  o.mask = random_tensor({8, 9}, int32, 6);
  EXPECT_NE(message([&] { scaled_dot_product_attention(q, k, v, o); }).find("mask must be bool"), std::string::npos);
  AttentionOptions neg;
  neg.scale = -1;
  EXPECT_NE(message([&] { scaled_dot_product_attention(q, k, v, neg); }).find("scale must be finite and positive"),
            std::string::npos);
  EXPECT_NE(message([&] { scaled_dot_product_attention(random_tensor({64}, bfloat16, 7), k, v); })
                .find("at least 2 dims"),
            std::string::npos);
}

}  // namespace
}  // namespace kiln

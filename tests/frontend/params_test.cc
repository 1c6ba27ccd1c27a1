// Params (ir/params.h): scalars and seeds that change between otherwise equal graphs are passed
// to the kernels at run time, so those graphs share one executable; values that choose code stay
// constants. Values are checked against the reference interpreter on every device.
#include <gtest/gtest.h>

#include <cmath>

#include "absl/strings/str_replace.h"
#include "ir/graph.h"
#include "ir/interpreter.h"
#include "ir/params.h"
#include "kiln/kiln.h"
#include "testing/reference.h"

namespace kiln {
namespace {

TEST(Params, TwentyLearningRatesCompileOnce) {
  Tensor w = testing::random_tensor({64, 32}, float32, 1), g = testing::random_tensor({64, 32}, float32, 2);
  reset_stats();
  std::vector<float> prev;
  for (int step = 0; step < 20; ++step) {
    const double lr = 0.01 * (step + 2) + 0.003;
    Tensor updated = (w - g * lr).clamp(-1.5 - 0.01 * step, 1.5 + 0.02 * step);
    EXPECT_MATCHES_REFERENCE({updated});
    if (step == 0) {
      EXPECT_EQ(stats().executables_built, 1);
      reset_stats();
    }
    std::vector<float> now = updated.to_vector<float>();
    EXPECT_NE(now, prev);
    prev = now;
  }
  EXPECT_EQ(stats().executables_built, 0);
  EXPECT_EQ(stats().kernels_compiled, 0);
}

TEST(Params, TenSeedsCompileOnce) {
  Tensor x = testing::random_tensor({4, 300}, float32, 3);
  reset_stats();
  std::vector<std::vector<float>> seen;
  for (uint64_t seed = 100; seed < 110; ++seed) {
    // Dropout with p = 0.3: each seed its own mask.
    Tensor keep = rand(x.shape(), seed) > 0.3;
    Tensor y = where(keep, x * (1.0 / 0.7), full_like(x, 0.0)) + randn(x.shape(), seed * 7919) * 0.01;
    EXPECT_MATCHES_REFERENCE({y});
    if (seed == 100) {
      EXPECT_EQ(stats().executables_built, 1);
      reset_stats();
    }
    std::vector<float> v = y.to_vector<float>();
    for (const auto& s : seen) EXPECT_NE(s, v);
    seen.push_back(v);
  }
  EXPECT_EQ(stats().executables_built, 0);
  EXPECT_EQ(stats().kernels_compiled, 0);
}

TEST(Params, FullWithNewValuesCompilesOnce) {
  reset_stats();
  for (double v : {2.5, -7.25, 1e-3, 3.0e5}) {
    Tensor t = full({3, 5}, v) * full({3, 5}, v + 0.5);
    EXPECT_MATCHES_REFERENCE({t});
    EXPECT_EQ(t.to_vector<float>()[7], float(v) * float(v + 0.5));
  }
  EXPECT_EQ(stats().executables_built, 1);
}

TEST(Params, HalfAndDoubleValuesHoldTheirTypes) {
  // A bf16 param is the value rounded to bf16 (as a bf16 constant is), an f64 one keeps every bit.
  Tensor xb = testing::random_tensor({16}, bfloat16, 4);
  for (double v : {0.1, 0.3}) EXPECT_MATCHES_REFERENCE({xb > v, xb * v});
  Tensor xd = testing::random_tensor({16}, float64, 5);
  for (double v : {0.1, 1.0 / 3.0}) EXPECT_MATCHES_REFERENCE({xd * v + 1e-17});
}

// A half param holds its type's value, as a half constant does (Elementwise.
// HalfConstantsHoldTheirTypesValue): each comparison and product checked on its own.
TEST(Params, HalfParamsCompareAsTheirTypesValue) {
  Tensor x = from_vector<float>({0.10009765625f, 0.1f, 0.0999f, 0.2f}, {4});
  for (DType t : {bfloat16, float16}) {
    Tensor h = x.cast(t);
    EXPECT_MATCHES_REFERENCE({(h > 0.1).cast(int32)}) << dtype_name(t);
    EXPECT_MATCHES_REFERENCE({(h < 0.1).cast(int32)}) << dtype_name(t);
    EXPECT_MATCHES_REFERENCE({(h == 0.1).cast(int32)}) << dtype_name(t);
    EXPECT_MATCHES_REFERENCE({h * 0.1}) << dtype_name(t);
    EXPECT_MATCHES_REFERENCE({(h - 0.1).cast(float32)}) << dtype_name(t);
  }
}

TEST(Params, ValuesThatChooseCodeStayConstants) {
  Tensor x = testing::random_tensor({32}, float32, 6, 0.5, 2.0);
  reset_stats();
  for (double e : {2.0, 2.5, 3.5}) EXPECT_MATCHES_REFERENCE({pow(x, e)});
  EXPECT_EQ(stats().executables_built, 3);  // pow's exponent is part of the code
  reset_stats();
  // x * 1 folds to x: the value 1 is never a param, so x * 1 and x * 2 are different graphs.
  EXPECT_MATCHES_REFERENCE({x * 1.0 + 0.25});
  EXPECT_MATCHES_REFERENCE({x * 2.0 + 0.25});
  EXPECT_EQ(stats().executables_built, 2);
}

TEST(Params, OneValueTwiceThenTwoValues) {
  // Equal scalars are one node (and one param) when recorded; the next graph differs there.
  Tensor x = testing::random_tensor({8}, float32, 7), y = testing::random_tensor({8}, float32, 8);
  EXPECT_MATCHES_REFERENCE({x * 0.3 + y * 0.3});
  EXPECT_MATCHES_REFERENCE({x * 0.3 + y * 0.7});
  EXPECT_MATCHES_REFERENCE({x * 0.4 + y * 0.4});
}

TEST(Params, TextFormatAndVerifier) {
  const std::string text =
      "graph {\n"
      "  %0 = input 0 : f32[4]\n"
      "  %1 = param slot=0 value=0.25 : f32[1]\n"
      "  %2 = expand %1 : f32[4]\n"
      "  %3 = mul %0, %2 : f32[4]\n"
      "  %4 = param slot=1 value=42 : i64[]\n"
      "  %5 = rand %4 seed=0 : f32[4]\n"
      "  %6 = add %3, %5 : f32[4]\n"
      "  output %6\n"
      "}\n";
  auto g = ir::parse(text);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(ir::print(*g), text);
  // The values live in the graph (the interpreter reads them) but not in its identity.
  auto other = ir::parse(absl::StrReplaceAll(text, {{"0.25", "0.75"}, {"42", "43"}}));
  ASSERT_TRUE(other.ok());
  EXPECT_TRUE(*g == *other);
  EXPECT_EQ(g->structural_hash(), other->structural_hash());
  // Baking the params back gives the same values as the lifted graph.
  ir::HostTensor in = ir::HostTensor::make(DType::kFloat32, {4});
  for (int i = 0; i < 4; ++i) in.f[size_t(i)] = float(i);
  auto a = ir::interpret(*g, {in});
  auto b = ir::interpret(ir::bake_params(*g), {in});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ((*a)[0].f, (*b)[0].f);
  EXPECT_EQ(ir::param_descs(*g)[1].rng_key, true);

  auto twice = ir::parse(absl::StrReplaceAll(text, {{"slot=1", "slot=0"}}));
  ASSERT_FALSE(twice.ok());
  EXPECT_NE(twice.status().message().find("param slot 0 appears twice"), std::string::npos) << twice.status();
  auto gap = ir::parse(absl::StrReplaceAll(text, {{"slot=1", "slot=2"}}));
  ASSERT_FALSE(gap.ok());
  EXPECT_NE(gap.status().message().find("param slot 1 is missing"), std::string::npos) << gap.status();
  auto bad_seed = ir::parse(absl::StrReplaceAll(text, {{"value=42 : i64[]", "value=42 : i32[]"}}));
  ASSERT_FALSE(bad_seed.ok());
  EXPECT_NE(bad_seed.status().message().find("seed operand must be an i64[] param"), std::string::npos) << bad_seed.status();
  auto bool_param = ir::parse("graph {\n  %0 = param slot=0 value=1 : bool[]\n  output %0\n}\n");
  ASSERT_FALSE(bool_param.ok());
  EXPECT_NE(bool_param.status().message().find("a param cannot be bool"), std::string::npos) << bool_param.status();
}

TEST(Params, LiftChoosesFloatValuesAndSeeds) {
  auto g = ir::parse(
      "graph {\n"
      "  %0 = input 0 : f32[4]\n"
      "  %1 = const 0.5 : f32[4]\n"
      "  %2 = const 1 : f32[4]\n"
      "  %3 = const 3 : i32[4]\n"
      "  %4 = const 2 : f32[4]\n"
      "  %5 = mul %0, %1 : f32[4]\n"
      "  %6 = mul %5, %2 : f32[4]\n"
      "  %7 = pow %6, %4 : f32[4]\n"
      "  %8 = cast %3 : f32[4]\n"
      "  %9 = randn seed=5 : f32[4]\n"
      "  %10 = add %7, %8 : f32[4]\n"
      "  %11 = add %10, %9 : f32[4]\n"
      "  output %11\n"
      "}\n");
  ASSERT_TRUE(g.ok()) << g.status();
  ir::Graph l = ir::lift_params(*g);
  ASSERT_TRUE(ir::verify(l).ok());
  // 0.5 and the seed become params; 1 (folds), the i32 3 and pow's exponent 2 stay constants.
  std::vector<ir::ParamDesc> d = ir::param_descs(l);
  ASSERT_EQ(d.size(), 2u);
  EXPECT_EQ(d[0].dtype, DType::kFloat32);
  EXPECT_TRUE(d[1].rng_key);
  std::vector<Scalar> v = ir::param_values(l);
  EXPECT_EQ(v[0].as_double(), 0.5);
  EXPECT_EQ(v[1].as_int(), 5);
  ir::HostTensor in = ir::HostTensor::make(DType::kFloat32, {4});
  for (int i = 0; i < 4; ++i) in.f[size_t(i)] = float(i) - 1.5f;
  auto a = ir::interpret(*g, {in});
  auto b = ir::interpret(l, {in});
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ((*a)[0].f, (*b)[0].f);
}

}  // namespace
}  // namespace kiln

// Every elementwise op and dtype against the reference interpreter.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>

#include "frontend/lazy.h"
#include "kiln/kiln.h"
#include "runtime/device.h"
#include "testing/error_of.h"
#include "testing/reference.h"

namespace kiln {
namespace {

using testing::random_tensor;

const DType kFloats[] = {float32, float64, float16, bfloat16};
const DType kAll[] = {float32, float64, float16, bfloat16, int32, int64, int8, uint8, bool_, int16, uint16, uint32};

struct Unary {
  const char* name;
  std::function<Tensor(const Tensor&)> fn;
  double lo, hi;
};

TEST(Elementwise, UnaryOpsOnEveryFloatDtype) {
  const Unary ops[] = {
      {"neg", [](const Tensor& x) { return -x; }, -3, 3},
      {"exp", [](const Tensor& x) { return exp(x); }, -10, 10},
      {"log", [](const Tensor& x) { return log(x); }, 1e-3, 100},
      {"sqrt", [](const Tensor& x) { return sqrt(x); }, 0, 100},
      {"rsqrt", [](const Tensor& x) { return rsqrt(x); }, 0.01, 100},
      {"abs", [](const Tensor& x) { return abs(x); }, -3, 3},
      {"sin", [](const Tensor& x) { return sin(x); }, -10, 10},
      {"cos", [](const Tensor& x) { return cos(x); }, -10, 10},
      {"tanh", [](const Tensor& x) { return tanh(x); }, -6, 6},
      {"sigmoid", [](const Tensor& x) { return sigmoid(x); }, -20, 20},
      {"relu", [](const Tensor& x) { return relu(x); }, -3, 3},
      {"gelu", [](const Tensor& x) { return gelu(x); }, -5, 5},
      {"gelu_tanh", [](const Tensor& x) { return gelu(x, true); }, -5, 5},
      {"erf", [](const Tensor& x) { return erf(x); }, -4, 4},
      {"floor", [](const Tensor& x) { return floor(x); }, -5, 5},
      {"ceil", [](const Tensor& x) { return ceil(x); }, -5, 5},
      {"reciprocal", [](const Tensor& x) { return reciprocal(x); }, 0.1, 10},
      {"silu", [](const Tensor& x) { return silu(x); }, -6, 6},
      {"square", [](const Tensor& x) { return x.pow(2.0); }, -3, 3},
      {"pow", [](const Tensor& x) { return x.pow(1.7); }, 0.1, 4},
      {"clamp", [](const Tensor& x) { return clamp(x, -0.5, 0.75); }, -2, 2},
  };
  uint32_t seed = 1;
  for (DType dt : kFloats)
    for (const Unary& op : ops) {
      SCOPED_TRACE(std::string(op.name) + " " + dtype_name(dt));
      Tensor x = random_tensor({3, 37}, dt, seed++, op.lo, op.hi);
      Tensor y = op.fn(x);
      EXPECT_EQ(y.dtype(), dt);
      EXPECT_MATCHES_REFERENCE({y});
    }
}

TEST(Elementwise, TranscendentalsAreAccurateOverWideRanges) {
  // Edge values: tiny, huge, subnormal, signed zeros, infinities, NaN.
  std::vector<float> v = {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-40f, 3e-39f, 87.0f, 88.7f, 89.0f, -87.0f, -103.0f, -104.0f,
                          1e10f, -1e10f, INFINITY, -INFINITY, NAN, 0.5f, 1.0f, 2.0f, 0.1f, 0.125f, 0.124f};
  Tensor x = from_vector(v, {int64_t(v.size())});
  EXPECT_MATCHES_REFERENCE({exp(x), tanh(x), sigmoid(x), erf(x)});
  // abs(x) + 1e-38 is subnormal for x = 0: only devices that keep f32 subnormals can add it.
  bool denormals = detail::impl_of(x.device())->target().f32_denormals;
  Tensor p = abs(x) + (denormals ? 1e-38 : 1e-30);
  EXPECT_MATCHES_REFERENCE({log(p), log(x)});
}

TEST(Elementwise, BinaryOpsOnEveryDtype) {
  uint32_t seed = 100;
  for (DType dt : kAll) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor a = random_tensor({4, 9}, dt, seed++, -20, 20);
    Tensor b = random_tensor({4, 9}, dt, seed++, 1, 20);
    std::vector<Tensor> outs = {a + b, a - b, a * b, a / b, maximum(a, b), minimum(a, b), a < b, a <= b,
                                a > b,  a >= b, a == b, a != b, logical_and(a, b), logical_or(a, b), logical_not(a)};
    if (dt != bool_) outs.push_back(-a);
    if (is_float(dt)) outs.push_back(pow(abs(a) + 0.5, b * 0.1));
    EXPECT_MATCHES_REFERENCE(outs);
  }
}

TEST(Elementwise, IntegerArithmeticWraps) {
  Tensor a = from_vector<int32_t>({2147483647, -2147483647 - 1, 100000}, {3});
  Tensor r = a + a;
  EXPECT_EQ(r.to_vector<int64_t>(), (std::vector<int64_t>{-2, 0, 200000}));
  Tensor u = from_vector<uint8_t>({250, 3, 128}, {3});
  EXPECT_EQ((u + u).to_vector<int64_t>(), (std::vector<int64_t>{244, 6, 0}));
  EXPECT_MATCHES_REFERENCE({a * a, u * u, -u});
}

// int16, uint16 and uint32: arithmetic wraps at their width, unsigned values compare, divide and
// convert as unsigned (uint32 past 2^31 included), float casts saturate, promotion follows NumPy
// (u8 + i8 -> i16, u16 + i16 -> i32, u32 + i32 -> i64), and the values round-trip through the host.
TEST(Elementwise, SixteenBitAndUnsignedIntegers) {
  using V = std::vector<int64_t>;
  Tensor s = from_vector<int16_t>({32767, -32768, -5, 300}, {4});
  EXPECT_EQ((s + s).to_vector<int64_t>(), (V{-2, 0, -10, 600}));
  EXPECT_EQ((s * s).to_vector<int64_t>(), (V{1, 0, 25, 24464}));  // 90000 wraps to 24464
  EXPECT_EQ((-s).to_vector<int64_t>(), (V{-32767, -32768, 5, -300}));
  EXPECT_EQ(trunc_divide(s, from_vector<int16_t>({-1, -1, 2, 0}, {4})).to_vector<int64_t>(), (V{-32767, -32768, -2, 0}));
  Tensor u = from_vector<uint16_t>({65535, 0, 40000, 7}, {4});
  EXPECT_EQ((u + u).to_vector<int64_t>(), (V{65534, 0, 14464, 14}));
  EXPECT_EQ((u * u).to_vector<int64_t>(), (V{1, 0, 4096, 49}));  // 65535^2 and 40000^2 wrap at 2^16
  EXPECT_EQ((u - from_vector<uint16_t>({1, 1, 1, 1}, {4})).to_vector<int64_t>(), (V{65534, 65535, 39999, 6}));
  Tensor w = from_vector<uint32_t>({4294967295u, 0u, 3000000000u, 10u}, {4});
  EXPECT_EQ((w + w).to_vector<int64_t>(), (V{4294967294LL, 0, 1705032704LL, 20}));
  EXPECT_EQ((w > from_vector<uint32_t>({1u, 1u, 1u, 1u}, {4})).to_vector<int64_t>(), (V{1, 0, 1, 1}));
  EXPECT_EQ(maximum(w, full({}, 5, uint32)).to_vector<int64_t>(), (V{4294967295LL, 5, 3000000000LL, 10}));
  EXPECT_EQ(trunc_divide(w, from_vector<uint32_t>({2u, 5u, 7u, 0u}, {4})).to_vector<int64_t>(), (V{2147483647, 0, 428571428, 0}));
  EXPECT_EQ(fmod(w, from_vector<uint32_t>({2u, 5u, 7u, 0u}, {4})).to_vector<int64_t>(), (V{1, 0, 4, 0}));
  EXPECT_EQ(w.cast(float64).to_vector<double>(), (std::vector<double>{4294967295.0, 0, 3000000000.0, 10}));
  EXPECT_EQ(w.cast(int64).to_vector<int64_t>(), (V{4294967295LL, 0, 3000000000LL, 10}));
  EXPECT_EQ(w.to_vector<uint32_t>(), (std::vector<uint32_t>{4294967295u, 0u, 3000000000u, 10u}));
  Tensor f = from_vector<double>({-1.5, 5e9, 70000.7, std::nan(""), 12.9}, {5});
  EXPECT_EQ(f.cast(uint32).to_vector<int64_t>(), (V{0, 4294967295LL, 70000, 0, 12}));
  EXPECT_EQ(f.cast(uint16).to_vector<int64_t>(), (V{0, 65535, 65535, 0, 12}));
  EXPECT_EQ(f.cast(int16).to_vector<int64_t>(), (V{-1, 32767, 32767, 0, 12}));
  EXPECT_EQ(from_vector<int64_t>({-1, 65536 + 3}, {2}).cast(uint16).to_vector<int64_t>(), (V{65535, 3}));
  EXPECT_EQ((ones({2}, uint8) + ones({2}, int8)).dtype(), int16);
  EXPECT_EQ((ones({2}, uint16) + ones({2}, int16)).dtype(), int32);
  EXPECT_EQ((ones({2}, uint32) + ones({2}, int32)).dtype(), int64);
  EXPECT_EQ((ones({2}, uint32) + ones({2}, int64)).dtype(), int64);
  EXPECT_EQ((ones({2}, uint16) + ones({2}, uint32)).dtype(), uint32);
  EXPECT_EQ((ones({2}, int16) + ones({2}, float16)).dtype(), float16);
  // Reductions and their identities (the largest uint32 is the min's start, 0 the max's).
  Tensor m = from_vector<uint32_t>({4000000000u, 3u, 4100000000u, 9u, 1u, 2u}, {2, 3});
  EXPECT_EQ(m.max({1}).to_vector<int64_t>(), (V{4100000000LL, 9}));
  EXPECT_EQ(m.min({1}).to_vector<int64_t>(), (V{3, 1}));
  EXPECT_EQ(m.sum({1}).to_vector<int64_t>(), (V{8100000003LL, 12}));  // integer sums accumulate in int64
  EXPECT_MATCHES_REFERENCE({s + s, s * s, u * u, w + w, w * w, trunc_divide(w, from_vector<uint32_t>({2u, 5u, 7u, 0u}, {4})),
                            f.cast(uint32), f.cast(int16), m.max({0}), m.min({0}), m.sum({0}), m.argmax(1), s.abs(), u.abs()});
}

// Integer division: signs, division by zero and MIN / -1 written out; every integer dtype,
// broadcasting and mixed dtypes against the reference interpreter; errors for floats and bools.
TEST(Elementwise, IntegerDivision) {
  using V = std::vector<int64_t>;
  const int64_t m32 = -2147483647LL - 1;
  Tensor a = from_vector<int32_t>({7, -7, 7, -7, 5, 0, int32_t(m32), int32_t(m32), 9}, {9});
  Tensor b = from_vector<int32_t>({2, 2, -2, -2, 0, 3, -1, 1, 3}, {9});
  EXPECT_EQ(trunc_divide(a, b).to_vector<int64_t>(), (V{3, -3, -3, 3, 0, 0, m32, m32, 3}));
  EXPECT_EQ(fmod(a, b).to_vector<int64_t>(), (V{1, -1, 1, -1, 0, 0, 0, 0, 0}));
  EXPECT_EQ(floor_divide(a, b).to_vector<int64_t>(), (V{3, -4, -4, 3, 0, 0, m32, m32, 3}));
  EXPECT_EQ(remainder(a, b).to_vector<int64_t>(), (V{1, 1, -1, -1, 0, 0, 0, 0, 0}));
  const int64_t m64 = std::numeric_limits<int64_t>::min();
  Tensor a64 = from_vector<int64_t>({m64, m64, 9000000000000000007LL, -9000000000000000007LL, 5}, {5});
  Tensor b64 = from_vector<int64_t>({-1, 7, 1000000000000LL, 1000000000000LL, 0}, {5});
  EXPECT_EQ(trunc_divide(a64, b64).to_vector<int64_t>(), (V{m64, m64 / 7, 9000000, -9000000, 0}));
  EXPECT_EQ(fmod(a64, b64).to_vector<int64_t>(), (V{0, m64 % 7, 7, -7, 0}));
  EXPECT_EQ(floor_divide(a64, b64).to_vector<int64_t>(), (V{m64, m64 / 7 - 1, 9000000, -9000001, 0}));
  EXPECT_EQ(remainder(a64, b64).to_vector<int64_t>(), (V{0, m64 % 7 + 7, 7, 1000000000000LL - 7, 0}));
  Tensor i8 = from_vector<int8_t>({-128, -128, 127, -5}, {4}), j8 = from_vector<int8_t>({-1, 3, -2, 0}, {4});
  EXPECT_EQ(trunc_divide(i8, j8).to_vector<int64_t>(), (V{-128, -42, -63, 0}));
  EXPECT_EQ(remainder(i8, j8).to_vector<int64_t>(), (V{0, 1, -1, 0}));
  Tensor u8 = from_vector<uint8_t>({200, 255, 7, 9}, {4}), v8 = from_vector<uint8_t>({7, 16, 0, 255}, {4});
  EXPECT_EQ(floor_divide(u8, v8).to_vector<int64_t>(), (V{28, 15, 0, 0}));
  EXPECT_EQ(remainder(u8, v8).to_vector<int64_t>(), (V{4, 15, 0, 9}));
  uint32_t seed = 300;
  for (DType dt : {int32, int64, int8, uint8, int16, uint16, uint32}) {
    SCOPED_TRACE(dtype_name(dt));
    Tensor x = random_tensor({5, 7}, dt, seed++, -60, 60), y = random_tensor({5, 7}, dt, seed++, -6, 6);
    EXPECT_MATCHES_REFERENCE({trunc_divide(x, y), fmod(x, y), floor_divide(x, y), remainder(x, y)});
  }
  Tensor x = random_tensor({3, 4}, int8, 41, -100, 100), y = random_tensor({4}, int32, 42, -9, 9);
  Tensor q = floor_divide(x, y);
  EXPECT_EQ(q.dtype(), int32);
  EXPECT_EQ(q.shape(), (Shape{3, 4}));
  EXPECT_MATCHES_REFERENCE({q, remainder(x, y), floor_divide(x, full({}, 4, int64))});
  const std::string e = testing::error_of([] { floor_divide(ones({2}), ones({2})); });
  EXPECT_NE(e.find("floor_divide"), std::string::npos) << e;
  EXPECT_NE(e.find("floor(a / b)"), std::string::npos) << e;
  EXPECT_NE(testing::error_of([] { fmod(ones({2}, bool_), ones({2}, bool_)); }).find("needs integer operands"), std::string::npos);
}

TEST(Elementwise, CastBetweenEveryPairOfDtypes) {
  uint32_t seed = 200;
  for (DType from : kAll) {
    Tensor x = random_tensor({2, 17}, from, seed++, -300, 300);
    std::vector<Tensor> outs;
    for (DType to : kAll) outs.push_back(x.cast(to));
    SCOPED_TRACE(dtype_name(from));
    EXPECT_MATCHES_REFERENCE(outs);
  }
}

TEST(Elementwise, FloatToIntCastSaturatesAndNanBecomesZero) {
  Tensor x = from_vector<float>({1e10f, -1e10f, NAN, 3.9f, -3.9f, 300.0f, -300.0f}, {7});
  EXPECT_EQ(x.cast(int32).to_vector<int64_t>(),
            (std::vector<int64_t>{2147483647, -2147483647 - 1, 0, 3, -3, 300, -300}));
  EXPECT_EQ(x.cast(uint8).to_vector<int64_t>(), (std::vector<int64_t>{255, 0, 0, 3, 0, 255, 0}));
  EXPECT_EQ(x.cast(int8).to_vector<int64_t>(), (std::vector<int64_t>{127, -128, 0, 3, -3, 127, -128}));
  EXPECT_EQ(x.cast(bool_).to_vector<int64_t>(), (std::vector<int64_t>{1, 1, 1, 1, 1, 1, 1}));
}

TEST(Elementwise, WhereSelectsAndBroadcasts) {
  Tensor c = random_tensor({3, 1, 5}, bool_, 7);
  Tensor a = random_tensor({4, 5}, float32, 8);
  Tensor b = random_tensor({5}, int32, 9, -5, 5);
  Tensor w = where(c, a, b);
  EXPECT_EQ(w.shape(), (Shape{3, 4, 5}));
  EXPECT_EQ(w.dtype(), float32);
  EXPECT_MATCHES_REFERENCE({w, where(c, a, 2.5), where(c, -1.0, b)});
}

TEST(Elementwise, BroadcastingCornerCases) {
  Tensor s = random_tensor({}, float32, 1);
  Tensor v = random_tensor({5}, float32, 2);
  Tensor m = random_tensor({4, 1}, float32, 3);
  Tensor t = random_tensor({2, 1, 5}, float32, 4);
  Tensor one = random_tensor({1, 1, 1}, float32, 5);
  EXPECT_EQ((v + m).shape(), (Shape{4, 5}));
  EXPECT_EQ((t + m).shape(), (Shape{2, 4, 5}));
  EXPECT_EQ((s + t).shape(), (Shape{2, 1, 5}));
  EXPECT_EQ((one * v).shape(), (Shape{1, 1, 5}));
  EXPECT_MATCHES_REFERENCE({v + m, t * m, s - t, one / v, m - s, s * s});
  Tensor empty = random_tensor({0, 5}, float32, 6);
  EXPECT_EQ((empty + v).shape(), (Shape{0, 5}));
  EXPECT_MATCHES_REFERENCE({empty + v});
}

TEST(Elementwise, ScalarOperandsInBothOrders) {
  Tensor x = random_tensor({6}, float32, 11, 0.5, 3);
  EXPECT_MATCHES_REFERENCE({x + 2, 2 + x, x - 2, 2 - x, x * 3, 3 * x, x / 4, 4 / x, x < 1.0, x >= 2.0});
  Tensor i = random_tensor({6}, int32, 12, -10, 10);
  EXPECT_EQ((i + 2).dtype(), int32);
  EXPECT_EQ((i * 0.5).dtype(), float32);
  EXPECT_EQ((i / 2).dtype(), float32);
  EXPECT_MATCHES_REFERENCE({i + 2, 3 - i, i * 0.5, i / 2, 7 / i.cast(float32)});
}

TEST(Elementwise, TypePromotionFollowsNumPy) {
  auto t = [](DType d) { return zeros({2}, d); };
  EXPECT_EQ((t(int32) + t(float16)).dtype(), float16);
  EXPECT_EQ((t(int64) + t(int8)).dtype(), int64);
  EXPECT_EQ((t(uint8) + t(int8)).dtype(), int16);  // as NumPy and PyTorch
  EXPECT_EQ((t(float16) + t(bfloat16)).dtype(), float32);
  EXPECT_EQ((t(float32) + t(float64)).dtype(), float64);
  EXPECT_EQ((t(bool_) + t(bool_)).dtype(), int64);
  EXPECT_EQ((t(bool_) + t(uint8)).dtype(), uint8);
  EXPECT_EQ((t(int32) < t(float32)).dtype(), bool_);
}

TEST(Elementwise, NanAndInfPropagateAsIeeeSays) {
  Tensor x = from_vector<float>({NAN, INFINITY, -INFINITY, 1.0f}, {4});
  Tensor y = from_vector<float>({1.0f, -INFINITY, -INFINITY, NAN}, {4});
  EXPECT_MATCHES_REFERENCE({x + y, maximum(x, y), minimum(x, y), relu(x), x / y, exp(x), sqrt(x)});
  auto m = maximum(x, y).to_vector<float>();
  EXPECT_TRUE(std::isnan(m[0]));
  EXPECT_TRUE(std::isnan(m[3]));
}

TEST(Elementwise, InfOrNanTimesZeroIsNan) {
  Tensor x = from_vector<float>({NAN, INFINITY, -INFINITY, 1.0f}, {4});
  // Mesa's lavapipe folds x * 0.0 to 0 even in exact (precise) SPIR-V: a driver limitation,
  // checked everywhere else.
  if (x.device().description().find("llvmpipe") != std::string::npos)
    GTEST_SKIP() << "lavapipe folds x * 0.0 to 0.0 for inf/NaN x";
  auto v = (x * 0.0).to_vector<float>();
  EXPECT_TRUE(std::isnan(v[0]) && std::isnan(v[1]) && std::isnan(v[2]));
  EXPECT_EQ(v[3], 0.0f);
}

TEST(Elementwise, PowFollowsCForSpecialOperands) {
  // GLSL's pow is undefined for x <= 0 and NaN; kiln gives C's pow everywhere.
  const float nan = NAN, inf = INFINITY;
  std::vector<float> xs = {nan, nan, 1.0f, -2.0f, -2.0f, -2.0f, 0.0f, -0.0f, 0.0f, -0.0f, -1.0f, 0.5f, 2.0f, -inf, 1e-40f, 3.0f};
  std::vector<float> ys = {0.0f, 2.0f, nan, 3.0f, 2.0f, 0.5f, -1.0f, -1.0f, 2.0f, 3.0f, inf, -inf, -inf, 3.0f, 0.5f, 2.0f};
  std::vector<float> want = {1.0f, nan, 1.0f, -8.0f, 4.0f, nan, inf, -inf, 0.0f, -0.0f, 1.0f, inf, 0.0f, -inf, 1e-20f, 9.0f};
  for (DType t : {float32, float64}) {
    SCOPED_TRACE(dtype_name(t));
    // Host data of the dtype itself: a device cast of the f32 subnormal (flushed where a device
    // flushes f32 denormals) is not what this test checks.
    std::vector<double> xd(xs.begin(), xs.end()), yd(ys.begin(), ys.end());
    const Shape n = {int64_t(xs.size())};
    Tensor x = t == float32 ? from_vector<float>(xs, n) : from_vector<double>(xd, n);
    Tensor y = t == float32 ? from_vector<float>(ys, n) : from_vector<double>(yd, n);
    std::vector<double> got = pow(x, y).cast(float64).to_vector<double>();
    for (size_t i = 0; i < want.size(); ++i) {
      SCOPED_TRACE(::testing::Message() << "pow(" << xs[i] << ", " << ys[i] << ")");
      if (std::isnan(want[i])) {
        EXPECT_TRUE(std::isnan(got[i]));
      } else if (std::isinf(want[i])) {
        EXPECT_EQ(got[i], want[i]);
      } else {
        EXPECT_NEAR(got[i], want[i], std::abs(want[i]) * 1e-5);
        EXPECT_EQ(std::signbit(got[i]), std::signbit(want[i]));
      }
    }
  }
}

TEST(Elementwise, CompareAConstantWithWidenedIntegers) {
  // lavapipe (Mesa 22) swapped `c < int64(x)` into `int64(x) < c`; kiln_fuzz found it.
  Tensor i = arange(0, 5, 1).cast(int32);
  Tensor wide = i.cast(int64);
  Tensor c = full({5}, 2, int64);
  EXPECT_EQ((c < wide).cast(int32).to_vector<int32_t>(), (std::vector<int32_t>{0, 0, 0, 1, 1}));
  EXPECT_EQ((c <= wide).cast(int32).to_vector<int32_t>(), (std::vector<int32_t>{0, 0, 1, 1, 1}));
  Tensor small = (i - 2).cast(int8).cast(int64);
  EXPECT_EQ((full({5}, -1, int64) < small).cast(int32).to_vector<int32_t>(), (std::vector<int32_t>{0, 0, 1, 1, 1}));
  Tensor u = i.cast(uint8).cast(int64);
  EXPECT_EQ((c < u).cast(int32).to_vector<int32_t>(), (std::vector<int32_t>{0, 0, 0, 1, 1}));
}

// A constant of a half type holds its type's value: `x > 0.1` over bf16 compares with bf16's
// 0.10009765625 (the interpreter's and PyTorch's meaning), so an element equal to it is not
// greater. kiln_fuzz found devices comparing with the unrounded 0.1.
TEST(Elementwise, HalfConstantsHoldTheirTypesValue) {
  Tensor x = from_vector<float>({0.10009765625f, 0.1f, 0.0999f, 0.2f}, {4});
  for (DType t : {bfloat16, float16}) {
    Tensor h = x.cast(t);
    EXPECT_MATCHES_REFERENCE({(h > 0.1).cast(int32), (h == 0.1).cast(int32), h * 0.1, h + 1e-4});
  }
  EXPECT_EQ((x.cast(bfloat16) > 0.1).cast(int32).to_vector<int32_t>(), (std::vector<int32_t>{0, 0, 0, 1}));
}

}  // namespace
}  // namespace kiln

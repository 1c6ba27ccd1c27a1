// Elementwise ONNX ops: arithmetic, comparisons, logic, activations and casts, each composed
// from kiln's elementwise builders (NumPy broadcasting is kiln's own). Where ONNX keeps an
// integer dtype that kiln would promote (Div, Pow, Mod on integers), the result is computed in
// float64, where it is exact for the dtypes allowed, and cast back; int64 division of values
// computed at run time is refused (float64 is not exact beyond 2^53).
#include <cmath>

#include "absl/strings/str_cat.h"
#include "frontend/onnx/dtypes.h"
#include "frontend/onnx/ops.h"

namespace kiln::onnx {
namespace {

using Unary = Tensor (*)(const Tensor&);

// Float inputs of f16/bf16/f32 computed in f64 where a formula would lose precision.
Tensor widen(const Tensor& x) { return x.dtype() == DType::kFloat64 ? x : cast(x, DType::kFloat64); }

void unary(OpTable& t, const char* name, Unary fn) {
  t[name] = {[fn](NodeContext& c) { c.set(0, fn(c.in(0))); }, {}, {}};
}

void float_unary(OpTable& t, const char* name, std::function<Tensor(const Tensor&)> fn, std::vector<std::string> attrs = {}) {
  t[name] = {[fn](NodeContext& c) {
               if (!is_float(c.dtype(0))) c.unsupported(absl::StrCat("input dtype ", dtype_name(c.dtype(0)), " (kiln computes it for floats)"));
               Tensor x = c.in(0);
               c.set(0, cast(fn(x), x.dtype()));
             },
             std::move(attrs), {}};
}

// Same-dtype operands per ONNX; a mismatch would be promoted by kiln, so it is refused.
void same_dtypes(NodeContext& c, size_t a, size_t b) {
  if (c.dtype(a) != c.dtype(b))
    c.invalid(absl::StrCat("operands have different dtypes (", dtype_name(c.dtype(a)), ", ", dtype_name(c.dtype(b)), ")"));
}

void binary(OpTable& t, const char* name, Tensor (*fn)(const Tensor&, const Tensor&)) {
  t[name] = {[fn](NodeContext& c) {
               same_dtypes(c, 0, 1);
               c.set(0, fn(c.in(0), c.in(1)));
             },
             {}, {}};
}

// Integer results of a float64 computation, with ONNX's rounding toward zero (or floor).
Tensor trunc(const Tensor& q) { return where(q < 0.0, ceil(q), floor(q)); }


void variadic(OpTable& t, const char* name, Tensor (*fn)(const Tensor&, const Tensor&), bool mean) {
  t[name] = {[fn, mean](NodeContext& c) {
               if (c.num_inputs() == 0) c.invalid("needs at least one input");
               Tensor r = c.in(0);
               for (size_t i = 1; i < c.num_inputs(); ++i) {
                 same_dtypes(c, 0, i);
                 r = fn(r, c.in(i));
               }
               if (mean) {
                 if (!is_float(r.dtype())) c.unsupported("Mean of integers");
                 r = cast(r / double(c.num_inputs()), r.dtype());
               }
               c.set(0, r);
             },
             {}, {}};
}

// Pow. A float base with an exponent known at import that is a small integer is repeated
// multiplication in its own dtype (x^2 of a variance is the common case); everything else is
// computed in float64: f32 pow through exp/log loses ~1e-3 on some devices (lavapipe gives 728.x
// for 3^6), and integer results are rounded, not truncated, before the cast back.
Tensor pow_op(NodeContext& c) {
  Tensor a = c.in(0);
  if (a.dtype() == DType::kBool || c.dtype(1) == DType::kBool) c.unsupported("Pow of bool");
  if (is_float(a.dtype()) && c.is_host(1) && c.value(1).host->numel() == 1 && c.rank(1) <= a.ndim()) {
    double e = c.value(1).host->double_at(0);
    if (e == std::floor(e) && std::fabs(e) <= 8) {
      Tensor r = ones({}, a.dtype(), a.device());
      for (int k = 0; k < int(std::fabs(e)); ++k) r = r * a;
      if (e < 0) r = reciprocal(r);
      return broadcast_to(cast(r, a.dtype()), a.shape());
    }
    if (e == 0.5) return sqrt(a);
  }
  Tensor b = c.in(1);
  Tensor r = pow(widen(a), widen(b));
  if (!is_float(a.dtype())) r = where(abs(r) < 4503599627370496.0, floor(r + 0.5), r);  // 2^52: already integral
  return cast(r, a.dtype());
}

Tensor mod_op(NodeContext& c) {
  Tensor a = c.in(0), b = c.in(1);
  same_dtypes(c, 0, 1);
  bool fmod = c.attr_int("fmod", 0) != 0;
  DType t = a.dtype();
  if (is_float(t)) {
    if (!fmod) c.invalid("fmod must be 1 for floating-point inputs");
    if (t == DType::kFloat64) c.unsupported("float64 Mod (kiln has no exact fmod primitive)");
    Tensor x = widen(a), y = widen(b);
    return cast(x - trunc(x / y) * y, t);
  }
  if (t == DType::kBool) c.unsupported("Mod of bool");
  return fmod ? kiln::fmod(a, b) : remainder(a, b);
}

Tensor sign(const Tensor& x) {
  Tensor one = ones({}, x.dtype(), x.device()), zero = zeros({}, x.dtype(), x.device());
  Tensor s = where(x > zero, one, where(x < zero, -one, zero));
  return is_float(x.dtype()) ? where(x != x, x, s) : s;
}

// Round half to even, in float64 (exact for every f16/bf16/f32 value).
Tensor round_even(const Tensor& in) {
  Tensor x = widen(in);
  Tensor r = floor(x + 0.5);
  Tensor tie = (r - x) == 0.5;
  Tensor odd = (r * 0.5 - floor(r * 0.5)) != 0.0;
  Tensor y = where(logical_and(tie, odd), r - 1.0, r);
  y = where(abs(x) >= 4503599627370496.0, x, y);  // 2^52: already an integer
  return cast(y, in.dtype());
}

Tensor clip(NodeContext& c) {
  Tensor x = c.in(0);
  if (c.has_input(1)) x = maximum(x, cast(c.in(1), x.dtype()));
  if (c.has_input(2)) x = minimum(x, cast(c.in(2), x.dtype()));
  return x;
}

// atan in float64: |x| > 1 folds to pi/2 - atan(1/|x|), |x| > tan(pi/8) to pi/4 + atan((x-1)/(x+1)),
// leaving |u| <= 0.4143 for 20 terms of the Taylor series (error below 1e-14).
Tensor atan64(const Tensor& w) {
  Tensor a = abs(w);
  Tensor inv = a > 1.0;
  Tensor t = where(inv, reciprocal(a), a);
  Tensor big = t > 0.41421356237309503;
  Tensor u = where(big, (t - 1.0) / (t + 1.0), t);
  Tensor u2 = u * u;
  Tensor p = full({}, 1.0 / 39.0, DType::kFloat64, w.device());
  for (int k = 18; k >= 0; --k) p = p * u2 * -1.0 + 1.0 / double(2 * k + 1);
  Tensor r = u * p;
  r = where(big, r + M_PI / 4, r);
  r = where(inv, M_PI / 2 - r, r);
  return where(w < 0.0, -r, r);
}

DType cast_target(NodeContext& c) {
  if (!c.has_attr("to")) c.invalid("attribute 'to' is required");
  auto t = dtype_from_onnx(c.attr_int("to", 0), absl::StrCat(c.label(), ": attribute 'to'"));
  if (!t.ok()) throw ImportError{t.status()};
  return *t;
}

Tensor where_neg(const Tensor& x, const Tensor& neg_value) { return where(x < zeros({}, x.dtype(), x.device()), neg_value, x); }

}  // namespace

void register_elementwise_ops(OpTable& t) {
  binary(t, "Add", add);
  binary(t, "Sub", sub);
  binary(t, "Mul", mul);
  t["Div"] = {[](NodeContext& c) {
                same_dtypes(c, 0, 1);
                Tensor a = c.in(0), b = c.in(1);
                c.set(0, is_float(a.dtype()) ? div(a, b) : trunc_divide(a, b));  // (ONNX's integer Div truncates)
              },
              {}, {}};
  t["Pow"] = {[](NodeContext& c) { c.set(0, pow_op(c)); }, {}, {}};
  t["Mod"] = {[](NodeContext& c) { c.set(0, mod_op(c)); }, {"fmod"}, {}};
  binary(t, "Equal", equal);
  binary(t, "Less", less);
  binary(t, "Greater", greater);
  binary(t, "LessOrEqual", less_equal);
  binary(t, "GreaterOrEqual", greater_equal);
  binary(t, "And", logical_and);
  binary(t, "Or", logical_or);
  binary(t, "Xor", not_equal);
  unary(t, "Not", logical_not);
  variadic(t, "Max", maximum, false);
  variadic(t, "Min", minimum, false);
  variadic(t, "Sum", add, false);
  variadic(t, "Mean", add, true);

  unary(t, "Neg", neg);
  unary(t, "Abs", abs);
  unary(t, "Relu", relu);
  unary(t, "Sign", sign);
  unary(t, "Identity", [](const Tensor& x) { return x; });
  float_unary(t, "Exp", [](const Tensor& x) { return exp(x); });
  float_unary(t, "Log", [](const Tensor& x) { return log(x); });
  float_unary(t, "Sqrt", [](const Tensor& x) { return sqrt(x); });
  float_unary(t, "Reciprocal", [](const Tensor& x) { return reciprocal(x); });
  float_unary(t, "Sigmoid", [](const Tensor& x) { return sigmoid(x); });
  float_unary(t, "Tanh", [](const Tensor& x) { return tanh(x); });
  float_unary(t, "Erf", [](const Tensor& x) { return erf(x); });
  float_unary(t, "Sin", [](const Tensor& x) { return sin(x); });
  float_unary(t, "Cos", [](const Tensor& x) { return cos(x); });
  float_unary(t, "Tan", [](const Tensor& x) { Tensor w = widen(x); return sin(w) / cos(w); });
  float_unary(t, "Sinh", [](const Tensor& x) { Tensor w = widen(x); return (exp(w) - exp(-w)) * 0.5; });
  float_unary(t, "Cosh", [](const Tensor& x) { Tensor w = widen(x); return (exp(w) + exp(-w)) * 0.5; });
  float_unary(t, "Asinh", [](const Tensor& x) {
    Tensor w = widen(x), a = abs(w);
    return sign(w) * log(a + sqrt(a * a + 1.0));
  });
  float_unary(t, "Acosh", [](const Tensor& x) { Tensor w = widen(x); return log(w + sqrt(w * w - 1.0)); });
  float_unary(t, "Atanh", [](const Tensor& x) { Tensor w = widen(x); return log((1.0 + w) / (1.0 - w)) * 0.5; });
  float_unary(t, "Atan", [](const Tensor& x) { return atan64(widen(x)); });
  float_unary(t, "Asin", [](const Tensor& x) { Tensor w = widen(x); return atan64(w / sqrt(1.0 - w * w)); });
  float_unary(t, "Acos", [](const Tensor& x) { Tensor w = widen(x); return M_PI / 2 - atan64(w / sqrt(1.0 - w * w)); });
  float_unary(t, "Floor", [](const Tensor& x) { return floor(x); });
  float_unary(t, "Ceil", [](const Tensor& x) { return ceil(x); });
  float_unary(t, "Round", round_even);
  float_unary(t, "Softplus", [](const Tensor& x) { Tensor w = widen(x); return log(exp(w) + 1.0); });
  float_unary(t, "Softsign", [](const Tensor& x) { return x / (abs(x) + 1.0); });
  float_unary(t, "Mish", [](const Tensor& x) { Tensor w = widen(x); return w * tanh(log(exp(w) + 1.0)); });
  t["IsNaN"] = {[](NodeContext& c) { Tensor x = c.in(0); c.set(0, x != x); }, {}, {}};
  t["IsInf"] = {[](NodeContext& c) {
                  Tensor x = c.in(0);
                  bool pos = c.attr_int("detect_positive", 1) != 0, neg_ = c.attr_int("detect_negative", 1) != 0;
                  Tensor p = x == INFINITY, n = x == -INFINITY;
                  c.set(0, pos && neg_ ? logical_or(p, n) : pos ? p : neg_ ? n : zeros(x.shape(), DType::kBool, x.device()));
                },
                {"detect_positive", "detect_negative"}, {}};
  t["LeakyRelu"] = {[](NodeContext& c) {
                      Tensor x = c.in(0);
                      c.set(0, cast(where_neg(x, x * c.attr_float("alpha", 0.01)), x.dtype()));
                    },
                    {"alpha"}, {}};
  t["PRelu"] = {[](NodeContext& c) {
                  same_dtypes(c, 0, 1);
                  Tensor x = c.in(0);
                  Tensor y = where(x < zeros({}, x.dtype(), x.device()), x * c.in(1), x);
                  if (y.shape() != x.shape()) c.invalid("slope must broadcast to the input's shape");
                  c.set(0, y);
                },
                {}, {}};
  t["ThresholdedRelu"] = {[](NodeContext& c) {
                            Tensor x = c.in(0);
                            c.set(0, where(x > c.attr_float("alpha", 1.0), x, zeros({}, x.dtype(), x.device())));
                          },
                          {"alpha"}, {}};
  t["Elu"] = {[](NodeContext& c) {
                Tensor x = c.in(0), w = widen(x);
                double alpha = c.attr_float("alpha", 1.0);
                c.set(0, cast(where(w < 0.0, (exp(w) - 1.0) * alpha, w), x.dtype()));
              },
              {"alpha"}, {}};
  t["Celu"] = {[](NodeContext& c) {
                 Tensor x = c.in(0), w = widen(x);
                 double alpha = c.attr_float("alpha", 1.0);
                 Tensor zero = zeros({}, w.dtype(), w.device());
                 c.set(0, cast(maximum(w, zero) + minimum(zero, (exp(w / alpha) - 1.0) * alpha), x.dtype()));
               },
               {"alpha"}, {}};
  t["Selu"] = {[](NodeContext& c) {
                 Tensor x = c.in(0), w = widen(x);
                 double alpha = c.attr_float("alpha", 1.67326319217681884765625), gamma = c.attr_float("gamma", 1.05070102214813232421875);
                 c.set(0, cast(where(w <= 0.0, exp(w) * alpha - alpha, w) * gamma, x.dtype()));
               },
               {"alpha", "gamma"}, {}};
  t["HardSigmoid"] = {[](NodeContext& c) {
                        Tensor x = c.in(0);
                        double alpha = c.attr_float("alpha", 0.2), beta = c.attr_float("beta", 0.5);
                        c.set(0, cast(clamp(x * alpha + beta, 0.0, 1.0), x.dtype()));
                      },
                      {"alpha", "beta"}, {}};
  t["HardSwish"] = {[](NodeContext& c) {
                      Tensor x = c.in(0);
                      c.set(0, cast(x * clamp(x * (1.0 / 6.0) + 0.5, 0.0, 1.0), x.dtype()));
                    },
                    {}, {}};
  t["Shrink"] = {[](NodeContext& c) {
                   Tensor x = c.in(0);
                   double bias = c.attr_float("bias", 0.0), lambd = c.attr_float("lambd", 0.5);
                   Tensor w = widen(x);
                   Tensor y = where(w < -lambd, w + bias, where(w > lambd, w - bias, zeros({}, w.dtype(), w.device())));
                   c.set(0, cast(y, x.dtype()));
                 },
                 {"bias", "lambd"}, {}};
  t["Clip"] = {[](NodeContext& c) { c.set(0, clip(c)); }, {}, {}};
  // Shifts of unsigned integers through exact float64 powers of two: x * 2^y stays below 2^63
  // (x < 2^32, y clamped below the width), then wraps like the integer it is; a shift by the
  // width or more gives 0 (ONNX leaves it open; C leaves it undefined).
  t["BitShift"] = {[](NodeContext& c) {
                     same_dtypes(c, 0, 1);
                     c.require_dtype(0, {DType::kUInt8, DType::kUInt16, DType::kUInt32});
                     std::string dir = c.attr_string("direction", "");
                     if (dir != "LEFT" && dir != "RIGHT") c.invalid("direction must be LEFT or RIGHT");
                     const DType t = c.dtype(0);
                     const double bits = double(8 * dtype_size(t));
                     Tensor x = widen(c.in(0)), y = widen(c.in(1));
                     Tensor two = full({}, 2.0, DType::kFloat64, x.device());
                     Tensor p = floor(pow(two, minimum(y, full({}, bits - 1, DType::kFloat64, x.device()))) + 0.5);  // exact: a device's
                     // float64 pow may give 7.99999 for 2^3
                     Tensor r = dir == "LEFT" ? cast(cast(x * p, DType::kInt64), t) : cast(floor(x / p), t);
                     c.set(0, where(y >= bits, zeros({}, t, x.device()), r));
                   },
                   {"direction"}, {}};
  t["Where"] = {[](NodeContext& c) {
                  same_dtypes(c, 1, 2);
                  c.set(0, where(c.in(0), c.in(1), c.in(2)));
                },
                {}, {}};
  t["Cast"] = {[](NodeContext& c) { c.set(0, cast(c.in(0), cast_target(c))); }, {"to"}, {}};
  t["CastLike"] = {[](NodeContext& c) { c.set(0, cast(c.in(0), c.dtype(1))); }, {}, {}};
  t["Dropout"] = {[](NodeContext& c) {
                    if (c.has_input(2)) {
                      const HostTensor& training = c.host(2, "training_mode");
                      if (training.numel() != 1) c.invalid("training_mode must be a scalar");
                      bool zero_ratio = c.is_host(1) && c.value(1).host->numel() == 1 && c.value(1).host->double_at(0) == 0.0;
                      if (training.int_at(0) != 0 && !zero_ratio) c.unsupported("training_mode = true with a ratio above 0 (random dropout)");
                    }
                    Tensor x = c.in(0);
                    c.set(0, x);
                    if (c.wants_output(1)) c.set(1, ones(x.shape(), DType::kBool, x.device()));
                  },
                  {"seed", "ratio"}, {1, 2}};
}

}  // namespace kiln::onnx

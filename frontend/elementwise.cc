// Elementwise ops: NumPy broadcasting and PyTorch-style type promotion.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "frontend/lazy.h"
#include "ir/graph.h"

namespace kiln {
namespace detail {

Tensor cast_to(const Tensor& t, DType dtype) {
  if (t.dtype() == dtype) return t;
  return record("cast", ir::Op::kCast, dtype, t.shape(), {t});
}

Tensor broadcast_to_shape(const std::string& label, const Tensor& t, const Shape& shape) {
  if (t.shape() == shape) return t;
  const Shape& s = t.shape();
  if (s.size() > shape.size())
    fail(label, absl::StrCat("cannot broadcast ", shape_str(s), " to ", shape_str(shape)));
  Shape padded(shape.size() - s.size(), 1);
  padded.insert(padded.end(), s.begin(), s.end());
  for (size_t i = 0; i < shape.size(); ++i)
    if (padded[i] != shape[i] && padded[i] != 1)
      fail(label, absl::StrCat("cannot broadcast ", shape_str(s), " to ", shape_str(shape)));
  Tensor r = t;
  if (padded != s) r = record(label, ir::Op::kReshape, t.dtype(), padded, {t});
  if (padded != shape) r = record(label, ir::Op::kExpand, t.dtype(), shape, {r});
  return r;
}

}  // namespace detail

namespace {

using detail::broadcast_to_shape;
using detail::cast_to;
using detail::record;

Shape broadcast(const std::string& label, const Shape& a, const Shape& b) {
  auto s = ir::broadcast_shapes(a, b, label);
  if (!s.ok()) throw Error(s.status());
  return *s;
}

// Promotes and broadcasts two operands to a common dtype/shape.
std::pair<Tensor, Tensor> align(const std::string& label, const Tensor& a, const Tensor& b, DType dtype) {
  if (a.shape() == b.shape()) return {cast_to(a, dtype), cast_to(b, dtype)};  // the common case, no copies
  Shape s = broadcast(label, a.shape(), b.shape());
  return {broadcast_to_shape(label, cast_to(a, dtype), s), broadcast_to_shape(label, cast_to(b, dtype), s)};
}

Tensor binary(const std::string& label, ir::Op op, const Tensor& a, const Tensor& b, DType compute,
              DType result) {
  if (!a.defined() || !b.defined()) detail::fail(label, "undefined tensor");
  if (detail::node_of(a)->device != detail::node_of(b)->device) detail::common_device(label, {a, b});  // throws
  // The common case (same dtype, same shape) records the operands as they are.
  if (a.dtype() == compute && b.dtype() == compute && a.shape() == b.shape())
    return detail::record_operands(label, op, result, a.shape(), {&a, &b});
  auto [x, y] = align(label, a, b, compute);
  return record(label, op, result, x.shape(), {x, y});
}

// Arithmetic on two bools computes in i64, like NumPy's sum of booleans.
DType arith_type(DType a, DType b) {
  DType t = promote_types(a, b);
  return t == DType::kBool ? DType::kInt64 : t;
}

Tensor arith(const std::string& label, ir::Op op, const Tensor& a, const Tensor& b) {
  DType t = arith_type(a.dtype(), b.dtype());
  return binary(label, op, a, b, t, t);
}

// Dtype of a Python-like scalar combined with tensor `t`: an integral value keeps an integer
// tensor integral; a fractional value makes it float32; a float tensor keeps its dtype.
DType scalar_type(const Tensor& t, double v) {
  if (is_float(t.dtype())) return t.dtype();
  bool integral = std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9.2e18;
  if (!integral) return DType::kFloat32;
  return t.dtype() == DType::kBool ? DType::kInt64 : t.dtype();
}

Tensor scalar_like(const Tensor& t, double v, DType dtype) {
  return detail::constant(v, dtype, t.shape(), detail::node_of(t)->device);
}

// Float-only unary ops compute integer inputs in float32.
Tensor unary_float(const std::string& label, ir::Op op, const Tensor& a) {
  DType t = is_float(a.dtype()) ? a.dtype() : DType::kFloat32;
  if (a.dtype() == t) return detail::record_operands(label, op, t, a.shape(), {&a});
  Tensor x = cast_to(a, t);
  return record(label, op, t, x.shape(), {x});
}

Tensor compare(const std::string& label, ir::Op op, const Tensor& a, const Tensor& b, bool swap) {
  DType t = promote_types(a.dtype(), b.dtype());
  return swap ? binary(label, op, b, a, t, DType::kBool) : binary(label, op, a, b, t, DType::kBool);
}

Tensor compare_scalar(const std::string& label, ir::Op op, const Tensor& a, double v, bool swap) {
  DType t = promote_types(a.dtype(), scalar_type(a, v));
  if (t == DType::kBool) t = DType::kInt64;
  Tensor s = scalar_like(a, v, t);
  return compare(label, op, a, s, swap);
}

Tensor to_bool(const Tensor& t) {
  if (t.dtype() == DType::kBool) return t;
  return record("ne", ir::Op::kNe, DType::kBool, t.shape(), {t, scalar_like(t, 0, t.dtype())});
}

}  // namespace

Tensor add(const Tensor& a, const Tensor& b) { return arith("add", ir::Op::kAdd, a, b); }
Tensor sub(const Tensor& a, const Tensor& b) { return arith("sub", ir::Op::kSub, a, b); }
Tensor mul(const Tensor& a, const Tensor& b) { return arith("mul", ir::Op::kMul, a, b); }
Tensor div(const Tensor& a, const Tensor& b) {
  DType t = promote_types(a.dtype(), b.dtype());
  if (!is_float(t)) t = DType::kFloat32;
  return binary("div", ir::Op::kDiv, a, b, t, t);
}
namespace {

// The integer division ops (ir/op.h int_div, int_rem) over a and b promoted to one integer dtype.
Tensor int_division(const std::string& label, ir::Op op, const Tensor& a, const Tensor& b) {
  if (!a.defined() || !b.defined()) detail::fail(label, "undefined tensor");
  DType t = promote_types(a.dtype(), b.dtype());
  if (is_float(t) || t == DType::kBool)
    detail::fail(label, absl::StrCat("needs integer operands, got ", dtype_name(a.dtype()), " and ", dtype_name(b.dtype()),
                                     is_float(t) ? " (for floating point use floor(a / b))" : ""));
  return binary(label, op, a, b, t, t);
}

// Where floor division differs from truncation: a nonzero remainder whose sign is not the divisor's.
Tensor rounds_down(const Tensor& r, const Tensor& b) {
  return logical_and(r != 0.0, (r < 0.0) != (b < 0.0));
}

}  // namespace

Tensor trunc_divide(const Tensor& a, const Tensor& b) { return int_division("trunc_divide", ir::Op::kIntDiv, a, b); }
Tensor fmod(const Tensor& a, const Tensor& b) { return int_division("fmod", ir::Op::kIntRem, a, b); }
Tensor floor_divide(const Tensor& a, const Tensor& b) {
  Tensor q = int_division("floor_divide", ir::Op::kIntDiv, a, b), r = int_division("floor_divide", ir::Op::kIntRem, a, b);
  return where(rounds_down(r, b.cast(q.dtype())), q - ones({}, q.dtype(), q.device()), q);
}
Tensor remainder(const Tensor& a, const Tensor& b) {
  Tensor r = int_division("remainder", ir::Op::kIntRem, a, b), d = b.cast(r.dtype());
  return where(rounds_down(r, d), r + d, r);
}

Tensor operator+(const Tensor& a, const Tensor& b) { return add(a, b); }
Tensor operator-(const Tensor& a, const Tensor& b) { return sub(a, b); }
Tensor operator*(const Tensor& a, const Tensor& b) { return mul(a, b); }
Tensor operator/(const Tensor& a, const Tensor& b) { return div(a, b); }

#define KILN_SCALAR_OPS(OP, FN)                                                   \
  Tensor operator OP(const Tensor& a, double b) {                                 \
    return FN(a, scalar_like(a, b, scalar_type(a, b)));                           \
  }                                                                               \
  Tensor operator OP(double a, const Tensor& b) {                                 \
    return FN(scalar_like(b, a, scalar_type(b, a)), b);                           \
  }
KILN_SCALAR_OPS(+, add)
KILN_SCALAR_OPS(-, sub)
KILN_SCALAR_OPS(*, mul)
KILN_SCALAR_OPS(/, div)
#undef KILN_SCALAR_OPS

Tensor less(const Tensor& a, const Tensor& b) { return compare("lt", ir::Op::kLt, a, b, false); }
Tensor less_equal(const Tensor& a, const Tensor& b) { return compare("le", ir::Op::kLe, a, b, false); }
Tensor greater(const Tensor& a, const Tensor& b) { return compare("gt", ir::Op::kLt, a, b, true); }
Tensor greater_equal(const Tensor& a, const Tensor& b) { return compare("ge", ir::Op::kLe, a, b, true); }
Tensor equal(const Tensor& a, const Tensor& b) { return compare("eq", ir::Op::kEq, a, b, false); }
Tensor not_equal(const Tensor& a, const Tensor& b) { return compare("ne", ir::Op::kNe, a, b, false); }
Tensor operator<(const Tensor& a, const Tensor& b) { return less(a, b); }
Tensor operator<=(const Tensor& a, const Tensor& b) { return less_equal(a, b); }
Tensor operator>(const Tensor& a, const Tensor& b) { return greater(a, b); }
Tensor operator>=(const Tensor& a, const Tensor& b) { return greater_equal(a, b); }
Tensor operator==(const Tensor& a, const Tensor& b) { return equal(a, b); }
Tensor operator!=(const Tensor& a, const Tensor& b) { return not_equal(a, b); }
Tensor operator<(const Tensor& a, double b) { return compare_scalar("lt", ir::Op::kLt, a, b, false); }
Tensor operator<=(const Tensor& a, double b) { return compare_scalar("le", ir::Op::kLe, a, b, false); }
Tensor operator>(const Tensor& a, double b) { return compare_scalar("gt", ir::Op::kLt, a, b, true); }
Tensor operator>=(const Tensor& a, double b) { return compare_scalar("ge", ir::Op::kLe, a, b, true); }
Tensor operator==(const Tensor& a, double b) { return compare_scalar("eq", ir::Op::kEq, a, b, false); }
Tensor operator!=(const Tensor& a, double b) { return compare_scalar("ne", ir::Op::kNe, a, b, false); }

Tensor logical_and(const Tensor& a, const Tensor& b) {
  return binary("logical_and", ir::Op::kAnd, to_bool(a), to_bool(b), DType::kBool, DType::kBool);
}
Tensor logical_or(const Tensor& a, const Tensor& b) {
  return binary("logical_or", ir::Op::kOr, to_bool(a), to_bool(b), DType::kBool, DType::kBool);
}
Tensor logical_not(const Tensor& a) {
  Tensor b = to_bool(a);
  return record("logical_not", ir::Op::kNot, DType::kBool, b.shape(), {b});
}
Tensor operator&&(const Tensor& a, const Tensor& b) { return logical_and(a, b); }
Tensor operator||(const Tensor& a, const Tensor& b) { return logical_or(a, b); }
Tensor operator!(const Tensor& a) { return logical_not(a); }

Tensor neg(const Tensor& a) {
  if (a.dtype() == DType::kBool) detail::fail("neg", "not supported for bool tensors; use logical_not");
  return record("neg", ir::Op::kNeg, a.dtype(), a.shape(), {a});
}
Tensor abs(const Tensor& a) {
  if (a.dtype() == DType::kBool) return a;
  return record("abs", ir::Op::kAbs, a.dtype(), a.shape(), {a});
}
Tensor exp(const Tensor& a) { return unary_float("exp", ir::Op::kExp, a); }
Tensor log(const Tensor& a) { return unary_float("log", ir::Op::kLog, a); }
Tensor sqrt(const Tensor& a) { return unary_float("sqrt", ir::Op::kSqrt, a); }
Tensor rsqrt(const Tensor& a) { return unary_float("rsqrt", ir::Op::kRsqrt, a); }
Tensor sin(const Tensor& a) { return unary_float("sin", ir::Op::kSin, a); }
Tensor cos(const Tensor& a) { return unary_float("cos", ir::Op::kCos, a); }
Tensor tanh(const Tensor& a) { return unary_float("tanh", ir::Op::kTanh, a); }
Tensor sigmoid(const Tensor& a) { return unary_float("sigmoid", ir::Op::kSigmoid, a); }
Tensor erf(const Tensor& a) { return unary_float("erf", ir::Op::kErf, a); }
Tensor reciprocal(const Tensor& a) { return unary_float("reciprocal", ir::Op::kRecip, a); }
Tensor floor(const Tensor& a) { return is_float(a.dtype()) ? unary_float("floor", ir::Op::kFloor, a) : a; }
Tensor ceil(const Tensor& a) { return is_float(a.dtype()) ? unary_float("ceil", ir::Op::kCeil, a) : a; }

Tensor maximum(const Tensor& a, const Tensor& b) {
  DType t = promote_types(a.dtype(), b.dtype());
  return binary("maximum", ir::Op::kMax, a, b, t, t);
}
Tensor minimum(const Tensor& a, const Tensor& b) {
  DType t = promote_types(a.dtype(), b.dtype());
  return binary("minimum", ir::Op::kMin, a, b, t, t);
}
Tensor relu(const Tensor& a) {
  if (a.dtype() == DType::kBool) return a;
  return maximum(a, scalar_like(a, 0, a.dtype()));
}
Tensor clamp(const Tensor& a, double lo, double hi) {
  if (lo > hi) detail::fail("clamp", absl::StrCat("lower bound ", lo, " is above upper bound ", hi));
  DType t = promote_types(a.dtype(), promote_types(scalar_type(a, lo), scalar_type(a, hi)));
  Tensor x = cast_to(a, t);
  return minimum(maximum(x, scalar_like(x, lo, t)), scalar_like(x, hi, t));
}

Tensor pow(const Tensor& a, const Tensor& b) {
  DType t = promote_types(a.dtype(), b.dtype());
  if (!is_float(t)) t = DType::kFloat32;
  return binary("pow", ir::Op::kPow, a, b, t, t);
}
Tensor pow(const Tensor& a, double b) {
  DType t = is_float(a.dtype()) ? a.dtype() : DType::kFloat32;
  Tensor x = cast_to(a, t);
  if (b == 1.0) return x;
  if (b == 2.0) return x * x;  // exact and faster than exp/log
  if (b == 0.5) return sqrt(x);
  if (b == -1.0) return reciprocal(x);
  return pow(x, scalar_like(x, b, t));
}

Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b) {
  detail::common_device("where", {cond, a, b});
  DType t = promote_types(a.dtype(), b.dtype());
  Shape s = broadcast("where", broadcast("where", cond.shape(), a.shape()), b.shape());
  Tensor c = broadcast_to_shape("where", to_bool(cond), s);
  Tensor x = broadcast_to_shape("where", cast_to(a, t), s);
  Tensor y = broadcast_to_shape("where", cast_to(b, t), s);
  return record("where", ir::Op::kWhere, t, s, {c, x, y});
}
Tensor where(const Tensor& cond, const Tensor& a, double b) {
  return where(cond, a, scalar_like(a, b, scalar_type(a, b)));
}
Tensor where(const Tensor& cond, double a, const Tensor& b) {
  return where(cond, scalar_like(b, a, scalar_type(b, a)), b);
}

Tensor cast(const Tensor& a, DType t) { return cast_to(a, t); }

Tensor silu(const Tensor& a) {
  Tensor x = is_float(a.dtype()) ? a : cast_to(a, DType::kFloat32);
  return x * sigmoid(x);
}

Tensor gelu(const Tensor& a, bool tanh_approx) {
  Tensor x = is_float(a.dtype()) ? a : cast_to(a, DType::kFloat32);
  if (tanh_approx) {
    const double k = std::sqrt(2.0 / M_PI);
    return 0.5 * x * (1.0 + tanh(k * (x + 0.044715 * x * x * x)));
  }
  return 0.5 * x * (1.0 + erf(x * M_SQRT1_2));
}

}  // namespace kiln

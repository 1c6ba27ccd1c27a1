// Linear quantization: QuantizeLinear, DequantizeLinear, DynamicQuantizeLinear, MatMulInteger and
// QLinearMatMul, all elementwise arithmetic around an exact float64 matmul of the integer values
// (products of 8-bit values summed in float64 are exact far beyond any real K). Rounding is to
// nearest even and saturation is a clamp to the 8-bit range, as ONNX defines them; the division
// by the scale happens in float32, as in ONNX's reference.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "frontend/onnx/ops.h"

namespace kiln::onnx {
namespace {

// Round half to even, for values already exact in float64.
Tensor round_even(const Tensor& x) {
  Tensor r = floor(x + 0.5);
  Tensor tie = (r - x) == 0.5;
  Tensor odd = (r * 0.5 - floor(r * 0.5)) != 0.0;
  return where(logical_and(tie, odd), r - 1.0, r);
}

void require_8bit(NodeContext& c, DType t, const std::string& what) {
  if (t != DType::kUInt8 && t != DType::kInt8) c.unsupported(absl::StrCat(what, " of dtype ", dtype_name(t), " (kiln quantizes to uint8 and int8)"));
}

// A scale or zero point: a scalar, or (per axis) a 1-D tensor shaped to broadcast along `axis`.
Tensor per_axis(NodeContext& c, const Tensor& p, int64_t rank, int64_t axis_attr) {
  if (p.numel() == 1) return p.reshape({});
  if (p.ndim() != 1) c.invalid("a scale or zero point must be a scalar or 1-D");
  int64_t axis = c.axis(axis_attr, rank);
  Shape s(size_t(rank), 1);
  s[size_t(axis)] = p.shape()[0];
  return reshape(p, s);
}

Tensor saturate(const Tensor& x, DType t) {
  return t == DType::kUInt8 ? clamp(x, 0.0, 255.0) : clamp(x, -128.0, 127.0);
}

void quantize_op(NodeContext& c) {
  Tensor x = c.in(0);
  if (!is_float(x.dtype()) && x.dtype() != DType::kInt32) c.unsupported(absl::StrCat("input dtype ", dtype_name(x.dtype())));
  DType out = c.has_input(2) ? c.dtype(2) : DType::kUInt8;
  require_8bit(c, out, "output");
  int64_t axis = c.attr_int("axis", 1);
  Tensor scale = per_axis(c, cast(c.in(1), DType::kFloat32), x.ndim(), axis);
  Tensor q = round_even(cast(cast(x, DType::kFloat32) / scale, DType::kFloat64));
  if (c.has_input(2)) q = q + cast(per_axis(c, c.in(2), x.ndim(), axis), DType::kFloat64);
  c.set(0, cast(saturate(q, out), out));
}

void dequantize_op(NodeContext& c) {
  Tensor x = c.in(0);
  if (x.dtype() != DType::kUInt8 && x.dtype() != DType::kInt8 && x.dtype() != DType::kInt32)
    c.unsupported(absl::StrCat("input dtype ", dtype_name(x.dtype())));
  int64_t axis = c.attr_int("axis", 1);
  Tensor v = cast(x, DType::kFloat32);
  if (c.has_input(2)) v = v - cast(per_axis(c, c.in(2), x.ndim(), axis), DType::kFloat32);
  c.set(0, v * per_axis(c, cast(c.in(1), DType::kFloat32), x.ndim(), axis));
}

void dynamic_quantize_op(NodeContext& c) {
  Tensor x = c.in(0);
  if (x.dtype() != DType::kFloat32) c.unsupported(absl::StrCat("input dtype ", dtype_name(x.dtype())));
  Tensor zero = zeros({}, DType::kFloat32, x.device());
  Tensor lo = minimum(zero, min(x)), hi = maximum(zero, max(x));
  Tensor scale = (hi - lo) / 255.0;
  Tensor zp = cast(saturate(round_even(cast(zero - lo / scale, DType::kFloat64)), DType::kUInt8), DType::kUInt8);
  Tensor q = round_even(cast(x / scale, DType::kFloat64)) + cast(zp, DType::kFloat64);
  c.set(0, cast(saturate(q, DType::kUInt8), DType::kUInt8));
  c.set(1, scale);
  c.set(2, zp);
}

// (a - a_zero_point) @ (b - b_zero_point) of 8-bit values, exactly, in float64. A zero point of
// b per output column is a [N] vector (broadcast along the rows), of a per row an [M] vector.
Tensor integer_matmul(NodeContext& c, size_t a_i, size_t a_zp, size_t b_i, size_t b_zp) {
  Tensor a = c.in(a_i), b = c.in(b_i);
  require_8bit(c, a.dtype(), "A");
  require_8bit(c, b.dtype(), "B");
  Tensor x = cast(a, DType::kFloat64), y = cast(b, DType::kFloat64);
  if (c.has_input(a_zp)) {
    Tensor z = cast(c.in(a_zp), DType::kFloat64);
    x = x - (z.numel() == 1 ? z.reshape({}) : z.reshape({z.numel(), 1}));
  }
  if (c.has_input(b_zp)) {
    Tensor z = cast(c.in(b_zp), DType::kFloat64);
    y = y - (z.numel() == 1 ? z.reshape({}) : z);
  }
  return matmul(x, y);
}

void matmul_integer_op(NodeContext& c) { c.set(0, cast(integer_matmul(c, 0, 2, 1, 3), DType::kInt32)); }

void qlinear_matmul_op(NodeContext& c) {
  DType out = c.dtype(7);
  require_8bit(c, out, "output");
  Tensor acc = integer_matmul(c, 0, 2, 3, 5);
  Tensor scale = cast(c.in(1), DType::kFloat64) * cast(c.in(4), DType::kFloat64) / cast(c.in(6), DType::kFloat64);
  if (scale.numel() != 1) c.unsupported("per-axis scales");
  Tensor q = round_even(acc * scale.reshape({})) + cast(c.in(7), DType::kFloat64).reshape({});
  c.set(0, cast(saturate(q, out), out));
}

}  // namespace

void register_quantize_ops(OpTable& t) {
  t["QuantizeLinear"] = {quantize_op, {"axis"}, {}};
  t["DequantizeLinear"] = {dequantize_op, {"axis"}, {}};
  t["DynamicQuantizeLinear"] = {dynamic_quantize_op, {}, {}};
  t["MatMulInteger"] = {matmul_integer_op, {}, {}};
  t["QLinearMatMul"] = {qlinear_matmul_op, {}, {}};
}

}  // namespace kiln::onnx

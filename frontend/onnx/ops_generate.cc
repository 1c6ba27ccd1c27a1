// Ops that make values: Constant, ConstantOfShape, Range (host values, folded), EyeLike, Trilu
// and OneHot (comparisons of iotas, so they fuse into their consumers).
#include <cmath>

#include "absl/strings/str_cat.h"
#include "frontend/onnx/dtypes.h"
#include "frontend/onnx/ops.h"

namespace kiln::onnx {
namespace {

void constant_op(NodeContext& c) {
  int given = 0;
  for (const char* k : {"value", "value_float", "value_floats", "value_int", "value_ints"}) given += c.has_attr(k);
  if (c.has_attr("value_string") || c.has_attr("value_strings")) c.unsupported("string constants (kiln has no string tensors)");
  if (c.has_attr("sparse_value")) c.unsupported("sparse constants");
  if (given != 1) c.invalid("needs exactly one value attribute");
  if (c.has_attr("value")) {
    c.set_host(0, c.attr_tensor("value"));
  } else if (c.has_attr("value_float")) {
    HostTensor h = HostTensor::zeros(DType::kFloat32, {});
    h.set_double(0, c.attr_float("value_float", 0));
    c.set_host(0, h);
  } else if (c.has_attr("value_floats")) {
    std::vector<double> v = c.attr_floats("value_floats");
    HostTensor h = HostTensor::zeros(DType::kFloat32, {int64_t(v.size())});
    for (size_t i = 0; i < v.size(); ++i) h.set_double(int64_t(i), v[i]);
    c.set_host(0, h);
  } else if (c.has_attr("value_int")) {
    c.set_host(0, HostTensor::from_ints({c.attr_int("value_int", 0)}, {}));
  } else {
    std::vector<int64_t> v = c.attr_ints("value_ints");
    c.set_host(0, HostTensor::from_ints(v, {int64_t(v.size())}));
  }
}

void constant_of_shape_op(NodeContext& c) {
  std::vector<int64_t> shape = c.host_ints(0, "shape");
  for (int64_t d : shape)
    if (d < 0) c.invalid(absl::StrCat("negative dimension in shape ", shape_str(shape)));
  HostTensor v = HostTensor::zeros(DType::kFloat32, {1});
  if (c.has_attr("value")) v = c.attr_tensor("value");
  if (v.numel() != 1) c.invalid("value must hold one element");
  if (shape_numel(shape) < 0) c.invalid(absl::StrCat("shape ", shape_str(shape), " is too large"));
  if (shape_numel(shape) <= kFoldLimit) {
    HostTensor out = HostTensor::zeros(v.dtype, shape);
    for (int64_t i = 0; i < out.numel(); ++i) out.set(i, v.at(0));
    c.set_host(0, out);
  } else {
    c.set(0, full(shape, v.double_at(0), v.dtype, c.device()));
  }
}

void range_op(NodeContext& c) {
  const HostTensor &s = c.host(0, "start"), &l = c.host(1, "limit"), &d = c.host(2, "delta");
  if (s.numel() != 1 || l.numel() != 1 || d.numel() != 1) c.invalid("start, limit and delta must be scalars");
  DType t = s.dtype;
  int64_t n;
  if (is_float(t)) {
    double start = s.double_at(0), limit = l.double_at(0), delta = d.double_at(0);
    if (delta == 0 || !std::isfinite(start) || !std::isfinite(limit) || !std::isfinite(delta)) c.invalid("delta is 0 or a bound is not finite");
    n = std::max<int64_t>(int64_t(std::ceil((limit - start) / delta)), 0);
    if (n > kFoldLimit) c.unsupported(absl::StrCat("Range of ", n, " elements (ranges are built at import, up to ", kFoldLimit, ")"));
    HostTensor out = HostTensor::zeros(t, {n});
    for (int64_t i = 0; i < n; ++i) out.set_double(i, start + double(i) * delta);
    c.set_host(0, out);
  } else {
    int64_t start = s.int_at(0), limit = l.int_at(0), delta = d.int_at(0);
    if (delta == 0) c.invalid("delta is 0");
    __int128 span = __int128(limit) - start;
    __int128 cnt = delta > 0 ? (span + delta - 1) / delta : (span + delta + 1) / delta;
    n = cnt > 0 ? int64_t(std::min<__int128>(cnt, __int128(kFoldLimit) + 1)) : 0;
    if (n > kFoldLimit) c.unsupported(absl::StrCat("Range of more than ", kFoldLimit, " elements (ranges are built at import)"));
    HostTensor out = HostTensor::zeros(t, {n});
    for (int64_t i = 0; i < n; ++i) out.set_int(i, start + i * delta);
    c.set_host(0, out);
  }
}

// Row and column indices of the last two axes, as int64 [rows, 1] and [1, cols].
std::pair<Tensor, Tensor> grid(const Device& dev, int64_t rows, int64_t cols) {
  return {reshape(arange(rows, DType::kInt64, dev), {rows, 1}), reshape(arange(cols, DType::kInt64, dev), {1, cols})};
}

void trilu_op(NodeContext& c) {
  Tensor x = c.in(0);
  if (x.ndim() < 2) c.invalid("input must have at least 2 dimensions");
  bool upper = c.attr_int("upper", 1) != 0;
  int64_t rows = x.shape()[size_t(x.ndim() - 2)], cols = x.shape()[size_t(x.ndim() - 1)];
  auto [i, j] = grid(c.device(), rows, cols);
  Tensor diff = j - i;  // column minus row
  Tensor k = c.has_input(1) ? cast(c.in(1), DType::kInt64).reshape({}) : zeros({}, DType::kInt64, c.device());
  if (c.has_input(1) && c.shape(1) != Shape{} && shape_numel(c.shape(1)) != 1) c.invalid("k must be a scalar");
  Tensor keep = upper ? diff >= k : diff <= k;
  c.set(0, where(keep, x, zeros({}, x.dtype(), x.device())));
}

void eye_like_op(NodeContext& c) {
  const Shape& s = c.shape(0);
  if (s.size() != 2) c.invalid("input must be 2-D");
  DType t = c.dtype(0);
  if (c.has_attr("dtype")) {
    auto d = dtype_from_onnx(c.attr_int("dtype", 1), absl::StrCat(c.label(), ": attribute 'dtype'"));
    if (!d.ok()) throw ImportError{d.status()};
    t = *d;
  }
  auto [i, j] = grid(c.device(), s[0], s[1]);
  c.set(0, cast(equal(j - i, full({}, double(c.attr_int("k", 0)), DType::kInt64, c.device())), t));
}

void one_hot_op(NodeContext& c) {
  Tensor idx = c.in(0);
  const HostTensor& dh = c.host(1, "depth");
  if (dh.numel() != 1) c.invalid("depth must hold one value");
  int64_t depth = dh.int_at(0);
  if (depth <= 0) c.invalid(absl::StrCat("depth must be positive, got ", depth));
  Tensor values = c.in(2);
  if (values.numel() != 2) c.invalid("values must hold [off_value, on_value]");
  int64_t r = idx.ndim() + 1;
  int64_t axis = c.axis(c.attr_int("axis", -1), r);
  Tensor i = is_float(idx.dtype()) ? cast(floor(idx), DType::kInt64) : cast(idx, DType::kInt64);
  i = where(i < 0.0, i + double(depth), i);  // negative indices count from the end
  i = unsqueeze(i, axis);
  Shape s(size_t(r), 1);
  s[size_t(axis)] = depth;
  Tensor iota = reshape(arange(depth, DType::kInt64, c.device()), s);
  Tensor flat = values.reshape({2});
  c.set(0, where(equal(i, iota), slice(flat, 0, 1, 2).reshape({}), slice(flat, 0, 0, 1).reshape({})));
}

// Hann, Hamming and Blackman windows: sums of cosines of the sample index, built at import.
void window_op(NodeContext& c, std::vector<double> a) {
  const HostTensor& sh = c.host(0, "size");
  if (sh.numel() != 1) c.invalid("size must be a scalar");
  int64_t n = sh.int_at(0);
  if (n < 0 || n > kFoldLimit) c.unsupported(absl::StrCat("a window of ", n, " samples (windows are built at import, up to ", kFoldLimit, ")"));
  auto dt = dtype_from_onnx(c.attr_int("output_datatype", 1), absl::StrCat(c.label(), ": attribute 'output_datatype'"));
  if (!dt.ok()) throw ImportError{dt.status()};
  double period = c.attr_int("periodic", 1) ? double(n) : double(n - 1);
  HostTensor out = HostTensor::zeros(*dt, {n});
  for (int64_t i = 0; i < n; ++i) {
    double v = 0, sign = 1;
    for (size_t k = 0; k < a.size(); ++k, sign = -sign) v += sign * a[k] * std::cos(2.0 * M_PI * double(k) * double(i) / period);
    out.set_double(i, v);
  }
  c.set_host(0, out);
}

}  // namespace

void register_generator_ops(OpTable& t) {
  t["HannWindow"] = {[](NodeContext& c) { window_op(c, {0.5, 0.5}); }, {"periodic", "output_datatype"}, {0}};
  t["HammingWindow"] = {[](NodeContext& c) { window_op(c, {25.0 / 46.0, 1.0 - 25.0 / 46.0}); }, {"periodic", "output_datatype"}, {0}};
  t["BlackmanWindow"] = {[](NodeContext& c) { window_op(c, {0.42, 0.5, 0.08}); }, {"periodic", "output_datatype"}, {0}};
  t["Constant"] = {constant_op, {"value", "value_float", "value_floats", "value_int", "value_ints", "value_string", "value_strings", "sparse_value"}, {}};
  t["ConstantOfShape"] = {constant_of_shape_op, {"value"}, {0}};
  t["Range"] = {range_op, {}, {0, 1, 2}};
  t["Trilu"] = {trilu_op, {"upper"}, {}};
  t["EyeLike"] = {eye_like_op, {"dtype", "k"}, {}};
  t["OneHot"] = {one_hot_op, {"axis"}, {1}};
}

}  // namespace kiln::onnx

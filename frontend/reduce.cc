// Reductions over axes (keepdim or not) and arg-reductions.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "frontend/lazy.h"

namespace kiln {
namespace {

using detail::cast_to;
using detail::fail;
using detail::record;

std::vector<int64_t> normalize_axes(const std::string& label, const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<int64_t> r;
  if (axes.empty()) {
    for (int64_t i = 0; i < rank; ++i) r.push_back(i);
    return r;
  }
  for (int64_t a : axes) {
    int64_t n = detail::normalize_axis(label, a, rank);
    if (std::find(r.begin(), r.end(), n) != r.end()) fail(label, absl::StrCat("axis ", a, " appears twice"));
    r.push_back(n);
  }
  std::sort(r.begin(), r.end());
  return r;
}

Shape reduced_shape(const Shape& s, const std::vector<int64_t>& axes, bool keepdim) {
  Shape r;
  for (size_t d = 0; d < s.size(); ++d) {
    bool red = std::find(axes.begin(), axes.end(), int64_t(d)) != axes.end();
    if (!red) r.push_back(s[d]);
    else if (keepdim) r.push_back(1);
  }
  return r;
}

Tensor reduce(const std::string& label, ir::Op op, const Tensor& a, const std::vector<int64_t>& axes_in,
              bool keepdim, DType dtype) {
  std::vector<int64_t> axes = normalize_axes(label, axes_in, a.ndim());
  Tensor x = cast_to(a, dtype);
  if (op == ir::Op::kReduceMax || op == ir::Op::kReduceMin) {
    for (int64_t ax : axes)
      if (a.shape()[ax] == 0)
        fail(label, absl::StrCat("cannot reduce over axis ", ax, " of size 0 in shape ", shape_str(a.shape())));
  }
  if (axes.empty()) return x;
  Shape keep = reduced_shape(a.shape(), axes, true);
  Tensor r = record(label, op, dtype, keep, {x}, axes);
  if (!keepdim) r = r.reshape(reduced_shape(a.shape(), axes, false));
  return r;
}

DType accumulate_type(DType t) {
  return is_float(t) || t == DType::kInt64 ? t : DType::kInt64;
}

Tensor extremum(const std::string& label, ir::Op op, const Tensor& a, const std::vector<int64_t>& axes, bool keepdim) {
  if (a.dtype() == DType::kBool)
    return cast_to(reduce(label, op, cast_to(a, DType::kUInt8), axes, keepdim, DType::kUInt8), DType::kBool);
  return reduce(label, op, a, axes, keepdim, a.dtype());
}

Tensor arg_reduce(const std::string& label, ir::Op op, const Tensor& a, int64_t axis, bool keepdim) {
  int64_t ax = detail::normalize_axis(label, axis, a.ndim());
  if (a.shape()[ax] == 0) fail(label, absl::StrCat("cannot take ", label, " over an empty axis of shape ", shape_str(a.shape())));
  Tensor x = a.dtype() == DType::kBool ? cast_to(a, DType::kUInt8) : a;
  Shape keep = a.shape();
  keep[ax] = 1;
  Tensor r = record(label, op, DType::kInt64, keep, {x}, {ax});
  if (!keepdim) r = r.reshape(reduced_shape(a.shape(), {ax}, false));
  return r;
}

}  // namespace

Tensor sum(const Tensor& a, std::vector<int64_t> axes, bool keepdim) {
  return reduce("sum", ir::Op::kReduceSum, a, axes, keepdim, accumulate_type(a.dtype()));
}
Tensor prod(const Tensor& a, std::vector<int64_t> axes, bool keepdim) {
  return reduce("prod", ir::Op::kReduceProd, a, axes, keepdim, accumulate_type(a.dtype()));
}
Tensor max(const Tensor& a, std::vector<int64_t> axes, bool keepdim) {
  return extremum("max", ir::Op::kReduceMax, a, axes, keepdim);
}
Tensor min(const Tensor& a, std::vector<int64_t> axes, bool keepdim) {
  return extremum("min", ir::Op::kReduceMin, a, axes, keepdim);
}
Tensor mean(const Tensor& a, std::vector<int64_t> axes, bool keepdim) {
  std::vector<int64_t> ax = normalize_axes("mean", axes, a.ndim());
  DType t = is_float(a.dtype()) ? a.dtype() : DType::kFloat32;
  int64_t count = 1;
  for (int64_t d : ax) count *= a.shape()[d];
  Tensor s = reduce("mean", ir::Op::kReduceSum, a, ax, keepdim, t);
  return s * (count ? 1.0 / double(count) : NAN);
}
Tensor argmax(const Tensor& a, int64_t axis, bool keepdim) { return arg_reduce("argmax", ir::Op::kArgMax, a, axis, keepdim); }
Tensor argmin(const Tensor& a, int64_t axis, bool keepdim) { return arg_reduce("argmin", ir::Op::kArgMin, a, axis, keepdim); }
Tensor argmax(const Tensor& a) { return arg_reduce("argmax", ir::Op::kArgMax, a.reshape({a.numel()}), 0, false); }
Tensor argmin(const Tensor& a) { return arg_reduce("argmin", ir::Op::kArgMin, a.reshape({a.numel()}), 0, false); }

}  // namespace kiln

// Gathers: reads at positions held by an index tensor, known only at run time. One primitive,
// ir gather (take_along_axis), under all of them: gather and gather_nd reshape their operands
// into a take_along_axis (the reshapes and broadcasts are views, folded into the kernel's loads).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "frontend/indices.h"
#include "frontend/lazy.h"

namespace kiln {
namespace detail {

void check_indices(const std::string& label, const Tensor& indices) {
  if (!is_int(indices.dtype()))
    fail(label, absl::StrCat("indices must have an integer dtype, got ", dtype_name(indices.dtype())));
}

Tensor wrap_index(const Tensor& index, int64_t extent) {
  Tensor i = cast_to(index, DType::kInt64);
  return where(i < 0.0, i + double(extent), i);
}

Tensor flat_index(const std::string& label, const Tensor& indices, const Shape& extents) {
  check_indices(label, indices);
  const int64_t k = int64_t(extents.size());
  Shape lead(indices.shape().begin(), indices.shape().end() - 1);
  int64_t total = shape_numel(extents);
  Tensor flat = constant(0, DType::kInt64, lead, node_of(indices)->device);
  Tensor ok = constant(1, DType::kBool, lead, node_of(indices)->device);
  int64_t stride = total;
  for (int64_t c = 0; c < k; ++c) {
    stride = extents[size_t(c)] ? stride / extents[size_t(c)] : 0;
    Tensor i = wrap_index(reshape(slice(indices, -1, c, c + 1), lead), extents[size_t(c)]);
    ok = logical_and(ok, logical_and(i >= 0.0, i < double(extents[size_t(c)])));
    flat = flat + i * double(stride);
  }
  // `total` is outside [0, total): the take_along_axis over the flattened axes reads 0 there.
  return where(ok, flat, double(total));
}

}  // namespace detail

namespace {
using detail::fail;
}  // namespace

Tensor take_along_axis(const Tensor& a, const Tensor& indices, int64_t axis) {
  const std::string label = "take_along_axis";
  detail::check_indices(label, indices);
  detail::common_device(label, {a, indices});
  if (a.ndim() == 0) fail(label, "cannot gather from a scalar");
  int64_t ax = detail::normalize_axis(label, axis, a.ndim());
  if (indices.ndim() != a.ndim())
    fail(label, absl::StrCat("indices ", shape_str(indices.shape()), " must have the rank of ", shape_str(a.shape())));
  Tensor x = a;
  for (int64_t d = 0; d < a.ndim(); ++d) {
    if (d == ax) continue;
    if (indices.shape()[d] > a.shape()[d])
      fail(label, absl::StrCat("indices ", shape_str(indices.shape()), " exceed ", shape_str(a.shape()), " along axis ", d));
    x = slice(x, d, 0, indices.shape()[d]);
  }
  if (a.shape()[ax] == 0 && indices.numel() > 0)
    fail(label, absl::StrCat("cannot gather from axis ", ax, " of size 0 in ", shape_str(a.shape())));
  return detail::record(label, ir::Op::kGather, a.dtype(), indices.shape(), {x, indices}, {ax});
}

Tensor gather(const Tensor& a, int64_t axis, const Tensor& indices) {
  const std::string label = "gather";
  detail::check_indices(label, indices);
  if (a.ndim() == 0) fail(label, "cannot gather from a scalar");
  int64_t ax = detail::normalize_axis(label, axis, a.ndim());
  const Shape& s = a.shape();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < ax; ++d) outer *= s[d];
  for (int64_t d = ax + 1; d < a.ndim(); ++d) inner *= s[d];
  Shape out(s.begin(), s.begin() + ax);
  out.insert(out.end(), indices.shape().begin(), indices.shape().end());
  out.insert(out.end(), s.begin() + ax + 1, s.end());
  int64_t q = indices.numel();
  Tensor idx = expand(reshape(indices, {1, q, 1}), {outer, q, inner});
  return reshape(take_along_axis(reshape(a, {outer, s[ax], inner}), idx, 1), out);
}

Tensor gather_nd(const Tensor& a, const Tensor& indices, int64_t batch_dims) {
  const std::string label = "gather_nd";
  detail::check_indices(label, indices);
  const Shape &s = a.shape(), &is = indices.shape();
  if (batch_dims < 0 || indices.ndim() < batch_dims + 1 || a.ndim() < batch_dims + 1)
    fail(label, absl::StrCat("batch_dims ", batch_dims, " does not fit data ", shape_str(s), " and indices ", shape_str(is)));
  for (int64_t d = 0; d < batch_dims; ++d)
    if (s[d] != is[d])
      fail(label, absl::StrCat("batch dims differ: data ", shape_str(s), ", indices ", shape_str(is)));
  int64_t k = is.back();
  if (k < 0 || k > a.ndim() - batch_dims)
    fail(label, absl::StrCat("index tuples of length ", k, " do not fit data ", shape_str(s), " after ", batch_dims,
                             " batch dims"));
  Shape batch(s.begin(), s.begin() + batch_dims), tuple(s.begin() + batch_dims, s.begin() + batch_dims + k),
      rest(s.begin() + batch_dims + k, s.end());
  Shape queries(is.begin() + batch_dims, is.end() - 1);
  int64_t nb = shape_numel(batch), nt = shape_numel(tuple), nr = shape_numel(rest), nq = shape_numel(queries);
  if (nt == 0 && nq > 0) fail(label, absl::StrCat("cannot gather from data ", shape_str(s), " with an empty index space"));
  Tensor flat = reshape(detail::flat_index(label, indices, tuple), {nb, nq, 1});
  Tensor r = take_along_axis(reshape(a, {nb, nt, nr}), expand(flat, {nb, nq, nr}), 1);
  Shape out = batch;
  out.insert(out.end(), queries.begin(), queries.end());
  out.insert(out.end(), rest.begin(), rest.end());
  return reshape(r, out);
}

}  // namespace kiln

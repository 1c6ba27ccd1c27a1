// Scatters: scatter records the ir scatter primitive (a copy of the data, then a kernel over the
// updates that writes at run-time positions; passes/lower.cc), scatter_nd flattens its index
// tuples into one index along the data's leading dims and scatters along that.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "frontend/indices.h"
#include "frontend/lazy.h"

namespace kiln {
namespace {

using detail::fail;

}  // namespace

Tensor scatter(const Tensor& data, int64_t axis, const Tensor& indices, const Tensor& updates,
               ScatterReduction reduction) {
  const std::string label = "scatter";
  detail::check_indices(label, indices);
  detail::common_device(label, {data, indices, updates});
  if (data.ndim() == 0) fail(label, "cannot scatter into a scalar");
  const int64_t ax = detail::normalize_axis(label, axis, data.ndim());
  if (indices.ndim() != data.ndim())
    fail(label, absl::StrCat("indices ", shape_str(indices.shape()), " must have the rank of data ", shape_str(data.shape())));
  if (updates.shape() != indices.shape())
    fail(label, absl::StrCat("updates ", shape_str(updates.shape()), " must have the shape of indices ",
                             shape_str(indices.shape())));
  if (updates.dtype() != data.dtype())
    fail(label, absl::StrCat("updates are ", dtype_name(updates.dtype()), ", data is ", dtype_name(data.dtype())));
  if (reduction != ScatterReduction::kNone && data.dtype() == DType::kBool)
    fail(label, "a reduction needs numeric data, got bool");
  const Shape& S = indices.shape();
  for (int64_t d = 0; d < data.ndim(); ++d)
    if (d != ax && S[d] > data.shape()[d])
      fail(label, absl::StrCat("indices ", shape_str(S), " exceed data ", shape_str(data.shape()), " along axis ", d));
  if (indices.numel() == 0) return data;
  return detail::record(label, ir::Op::kScatter, data.dtype(), data.shape(), {data, indices, updates},
                        {ax, int64_t(reduction)});
}

Tensor scatter_nd(const Tensor& data, const Tensor& indices, const Tensor& updates, ScatterReduction reduction) {
  const std::string label = "scatter_nd";
  detail::check_indices(label, indices);
  const Shape &s = data.shape(), &is = indices.shape();
  if (indices.ndim() < 1) fail(label, "indices need a last dim holding the index tuples");
  const int64_t k = is.back(), q = indices.ndim() - 1;
  if (k < 1 || k > data.ndim())
    fail(label, absl::StrCat("index tuples of length ", k, " do not fit data ", shape_str(s)));
  Shape want(is.begin(), is.end() - 1);
  want.insert(want.end(), s.begin() + k, s.end());
  if (updates.shape() != want)
    fail(label, absl::StrCat("updates ", shape_str(updates.shape()), " should be ", shape_str(want), " for data ",
                             shape_str(s), " and indices ", shape_str(is)));
  Shape tuple(s.begin(), s.begin() + k);
  const int64_t nt = shape_numel(tuple), nr = shape_numel(s) / std::max<int64_t>(nt, 1);
  const int64_t nq = shape_numel(Shape(is.begin(), is.begin() + q));
  if (nq == 0) return data;
  Tensor flat = reshape(detail::flat_index(label, indices, tuple), {nq, 1});
  Tensor r = scatter(reshape(data, {nt, nr}), 0, expand(flat, {nq, nr}), reshape(updates, {nq, nr}), reduction);
  return reshape(r, s);
}

}  // namespace kiln

// Scatters, composed from primitives: each output position along the axis j looks at every
// update k along it and takes the matching ones (index k == j), folded by a reduction over k.
// No position is written twice and no write lands at a run-time address, so the result is the
// same on every device and duplicates resolve deterministically: with no reduction, the last
// matching update wins (the highest position along the axis, as a sequential loop gives).
// The price is work proportional to |updates| x |axis|: fine for the updates of a cache or a
// mask, quadratic for a large histogram (a kernel that writes at data-dependent positions is
// the planned replacement; DESIGN.md).
#include <limits>

#include "absl/strings/str_cat.h"
#include "frontend/indices.h"
#include "frontend/lazy.h"

namespace kiln {
namespace {

using detail::fail;

// The value a reduction leaves unchanged, exactly (int64's limits are not doubles).
Scalar identity_of(ScatterReduction r, DType t) {
  const bool f = is_float(t);
  const double inf = std::numeric_limits<double>::infinity();
  const bool max = r == ScatterReduction::kMax;
  switch (r) {
    case ScatterReduction::kMul: return Scalar::from_int(1).cast_to(t);
    case ScatterReduction::kMax:
    case ScatterReduction::kMin:
      if (f) return Scalar::from_double(max ? -inf : inf);
      switch (t) {
        case DType::kUInt8: return Scalar::from_int(max ? 0 : 255);
        case DType::kInt8: return Scalar::from_int(max ? -128 : 127);
        case DType::kInt32:
          return Scalar::from_int(max ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int32_t>::max());
        default:
          return Scalar::from_int(max ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max());
      }
    default: return Scalar::from_int(0).cast_to(t);
  }
}

}  // namespace

Tensor scatter(const Tensor& data, int64_t axis, const Tensor& indices, const Tensor& updates,
               ScatterReduction reduction) {
  const std::string label = "scatter";
  detail::check_indices(label, indices);
  runtime::Device* device = detail::common_device(label, {data, indices, updates});
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
  const int64_t J = data.shape()[ax], K = S[ax];
  // T: the indices' shape with the data's axis inserted before theirs (J at ax, K at ax + 1).
  Shape T = S;
  T.insert(T.begin() + ax, J);
  auto along = [&](int64_t n, int64_t at) {
    Shape s(T.size(), 1);
    s[at] = n;
    return expand(reshape(arange(n, DType::kInt64, detail::Access::device(device)), s), T);
  };
  Tensor match = expand(unsqueeze(detail::wrap_index(indices, J), ax), T) == along(J, ax);
  Shape P = S;  // the part of data that updates can reach
  P[ax] = J;
  Tensor value, touched;
  if (reduction == ScatterReduction::kNone) {
    Tensor last = max(where(match, along(K, ax + 1), -1.0), {ax + 1});
    touched = last >= 0.0;
    value = take_along_axis(updates, where(touched, last, 0.0), ax);
  } else {
    touched = max(cast(match, DType::kInt32), {ax + 1}) > 0.0;
    Tensor identity = detail::record(label, ir::Op::kConst, data.dtype(), T, {}, {}, identity_of(reduction, data.dtype()), device);
    Tensor picked = where(match, expand(unsqueeze(updates, ax), T), identity);
    Tensor part = data;
    for (int64_t d = 0; d < data.ndim(); ++d) part = slice(part, d, 0, P[d]);
    switch (reduction) {
      case ScatterReduction::kAdd: value = part + sum(picked, {ax + 1}); break;
      case ScatterReduction::kMul: value = part * prod(picked, {ax + 1}); break;
      case ScatterReduction::kMax: value = maximum(part, max(picked, {ax + 1})); break;
      default: value = minimum(part, min(picked, {ax + 1})); break;
    }
    value = cast(value, data.dtype());
  }
  std::vector<std::pair<int64_t, int64_t>> widths;
  for (int64_t d = 0; d < data.ndim(); ++d) widths.push_back({0, data.shape()[d] - P[d]});
  return where(pad(touched, widths), pad(value, widths), data);
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

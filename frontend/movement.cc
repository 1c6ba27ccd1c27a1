// Movement ops: they only record views; the scheduler folds them into index maps.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "frontend/lazy.h"

namespace kiln {
namespace {
using detail::fail;
using detail::record;
}  // namespace

Tensor reshape(const Tensor& a, Shape shape) {
  int64_t numel = a.numel(), known = 1;
  int infer = -1;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (infer >= 0) fail("reshape", absl::StrCat("only one -1 is allowed in ", shape_str(shape)));
      infer = int(i);
    } else if (shape[i] < 0) {
      fail("reshape", absl::StrCat("invalid dimension ", shape[i], " in ", shape_str(shape)));
    } else if (__builtin_mul_overflow(known, shape[i], &known)) {
      fail("reshape", absl::StrCat("cannot reshape ", shape_str(a.shape()), " (", numel, " elements) to ",
                                   shape_str(shape)));
    }
  }
  if (infer >= 0) {
    if (known == 0 || numel % known != 0)
      fail("reshape", absl::StrCat("cannot reshape ", shape_str(a.shape()), " (", numel, " elements) to ",
                                   shape_str(shape)));
    shape[infer] = numel / known;
  }
  if (shape_numel(shape) != numel)
    fail("reshape", absl::StrCat("cannot reshape ", shape_str(a.shape()), " (", numel, " elements) to ",
                                 shape_str(shape)));
  if (shape == a.shape()) return a;
  return record("reshape", ir::Op::kReshape, a.dtype(), shape, {a});
}

Tensor permute(const Tensor& a, std::vector<int64_t> perm) {
  int64_t r = a.ndim();
  if (int64_t(perm.size()) != r)
    fail("permute", absl::StrCat("permutation ", shape_str(perm), " does not match rank ", r));
  std::vector<bool> seen(r, false);
  Shape out;
  bool identity = true;
  for (size_t k = 0; k < perm.size(); ++k) {
    int64_t p = detail::normalize_axis("permute", perm[k], r);
    if (seen[p]) fail("permute", absl::StrCat("axis ", perm[k], " appears twice in ", shape_str(perm)));
    seen[p] = true;
    perm[k] = p;
    identity = identity && p == int64_t(k);
    out.push_back(a.shape()[p]);
  }
  if (identity) return a;
  return record("permute", ir::Op::kPermute, a.dtype(), out, {a}, perm);
}

Tensor transpose(const Tensor& a, int64_t axis0, int64_t axis1) {
  int64_t r = a.ndim();
  int64_t x = detail::normalize_axis("transpose", axis0, r), y = detail::normalize_axis("transpose", axis1, r);
  std::vector<int64_t> perm(r);
  for (int64_t i = 0; i < r; ++i) perm[i] = i;
  std::swap(perm[x], perm[y]);
  return permute(a, perm);
}

Tensor expand(const Tensor& a, Shape shape) {
  const Shape& s = a.shape();
  if (shape.size() < s.size())
    fail("expand", absl::StrCat("cannot expand ", shape_str(s), " to fewer dimensions ", shape_str(shape)));
  size_t lead = shape.size() - s.size();
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == -1) {
      if (i < lead) fail("expand", "-1 is not allowed for a new leading dimension");
      shape[i] = s[i - lead];
    }
    int64_t have = i < lead ? 1 : s[i - lead];
    if (shape[i] < 0 || (have != shape[i] && have != 1))
      fail("expand", absl::StrCat("cannot expand ", shape_str(s), " to ", shape_str(shape)));
  }
  return detail::broadcast_to_shape("expand", a, shape);
}
Tensor broadcast_to(const Tensor& a, Shape shape) { return expand(a, std::move(shape)); }

Tensor slice(const Tensor& a, int64_t axis, int64_t start, int64_t stop, int64_t step) {
  int64_t ax = detail::normalize_axis("slice", axis, a.ndim());
  if (step == 0) fail("slice", "step must not be zero");
  int64_t n = a.shape()[ax];
  // Python slice semantics: negative indices count from the end, out-of-range ones clamp.
  auto clampi = [&](int64_t v, int64_t lo, int64_t hi) { return std::max(lo, std::min(hi, v)); };
  if (start < 0) start += n;
  if (stop < 0) stop += n;
  // Counts in unsigned arithmetic: steps near the int64 limits (even INT64_MIN) must not overflow.
  int64_t count;
  if (step > 0) {
    start = clampi(start, 0, n);
    stop = clampi(stop, 0, n);
    count = stop > start ? 1 + int64_t(uint64_t(stop - start - 1) / uint64_t(step)) : 0;
  } else {
    start = clampi(start, -1, n - 1);
    stop = clampi(stop, -1, n - 1);
    count = start > stop ? 1 + int64_t(uint64_t(start - stop - 1) / (uint64_t(0) - uint64_t(step))) : 0;
  }
  if (count == 0) start = 0;
  if (count <= 1) step = 1;  // one element: the step is irrelevant (and huge steps overflow views)
  if (count == n && step == 1) return a;
  std::vector<int64_t> ss;
  Shape out = a.shape();
  for (int64_t d = 0; d < a.ndim(); ++d) {
    ss.push_back(d == ax ? start : 0);
    ss.push_back(d == ax ? step : 1);
  }
  out[ax] = count;
  return record("slice", ir::Op::kSlice, a.dtype(), out, {a}, ss);
}

Tensor pad(const Tensor& a, std::vector<std::pair<int64_t, int64_t>> widths, double value) {
  if (int64_t(widths.size()) != a.ndim())
    fail("pad", absl::StrCat("needs one (lo, hi) pair per axis: got ", widths.size(), " for shape ",
                             shape_str(a.shape())));
  // Negative widths crop, as in PyTorch.
  Tensor x = a;
  for (int64_t d = 0; d < a.ndim(); ++d) {
    auto [lo, hi] = widths[d];
    if (lo < 0 || hi < 0) {
      int64_t n = x.shape()[d];
      int64_t s = lo < 0 ? -lo : 0, e = n - (hi < 0 ? -hi : 0);
      if (e < s) fail("pad", absl::StrCat("negative widths remove more than axis ", d, " of shape ", shape_str(a.shape())));
      x = slice(x, d, s, e, 1);
      widths[d] = {std::max<int64_t>(lo, 0), std::max<int64_t>(hi, 0)};
    }
  }
  std::vector<int64_t> w;
  Shape out = x.shape();
  bool any = false;
  for (int64_t d = 0; d < x.ndim(); ++d) {
    w.push_back(widths[d].first);
    w.push_back(widths[d].second);
    if (__builtin_add_overflow(out[d], widths[d].first, &out[d]) ||
        __builtin_add_overflow(out[d], widths[d].second, &out[d]))
      fail("pad", absl::StrCat("widths overflow axis ", d, " of shape ", shape_str(a.shape())));
    any = any || widths[d].first || widths[d].second;
  }
  if (!any) return x;
  Scalar v = is_float(x.dtype()) ? Scalar::from_double(value) : Scalar::from_int(Scalar::from_double(value).as_int());
  return record("pad", ir::Op::kPad, x.dtype(), out, {x}, w, v.cast_to(x.dtype()));
}

Tensor concat(const std::vector<Tensor>& tensors, int64_t axis) {
  if (tensors.empty()) fail("concat", "needs at least one tensor");
  const Tensor& first = tensors[0];
  int64_t ax = detail::normalize_axis("concat", axis, first.ndim());
  DType t = first.dtype();
  for (const Tensor& x : tensors) t = promote_types(t, x.dtype());
  std::vector<Tensor> parts;
  Shape out = first.shape();
  out[ax] = 0;
  for (const Tensor& x : tensors) {
    if (x.ndim() != first.ndim())
      fail("concat", absl::StrCat("shapes ", shape_str(first.shape()), " and ", shape_str(x.shape()),
                                  " have different ranks"));
    for (int64_t d = 0; d < x.ndim(); ++d)
      if (d != ax && x.shape()[d] != first.shape()[d])
        fail("concat", absl::StrCat("shapes ", shape_str(first.shape()), " and ", shape_str(x.shape()),
                                    " differ outside axis ", ax));
    out[ax] += x.shape()[ax];
    if (x.numel() > 0 || tensors.size() == 1) parts.push_back(detail::cast_to(x, t));
  }
  if (parts.empty()) return detail::cast_to(first, t);
  if (parts.size() == 1) return parts[0];
  return record("concat", ir::Op::kConcat, t, out, parts, {ax});
}

Tensor stack(const std::vector<Tensor>& tensors, int64_t axis) {
  if (tensors.empty()) fail("stack", "needs at least one tensor");
  int64_t ax = detail::normalize_axis("stack", axis, tensors[0].ndim() + 1);
  std::vector<Tensor> parts;
  for (const Tensor& x : tensors) {
    if (x.shape() != tensors[0].shape())
      fail("stack", absl::StrCat("shapes ", shape_str(tensors[0].shape()), " and ", shape_str(x.shape()), " differ"));
    parts.push_back(unsqueeze(x, ax));
  }
  return concat(parts, ax);
}

Tensor squeeze(const Tensor& a) {
  Shape s;
  for (int64_t d : a.shape())
    if (d != 1) s.push_back(d);
  return reshape(a, s);
}

Tensor squeeze(const Tensor& a, int64_t axis) {
  int64_t ax = detail::normalize_axis("squeeze", axis, a.ndim());
  if (a.shape()[ax] != 1) return a;  // PyTorch: squeezing a non-1 axis is a no-op
  Shape s = a.shape();
  s.erase(s.begin() + ax);
  return reshape(a, s);
}

Tensor unsqueeze(const Tensor& a, int64_t axis) {
  int64_t ax = detail::normalize_axis("unsqueeze", axis, a.ndim() + 1);
  Shape s = a.shape();
  s.insert(s.begin() + ax, 1);
  return reshape(a, s);
}

Tensor flatten(const Tensor& a, int64_t start_axis, int64_t end_axis) {
  if (a.ndim() == 0) return reshape(a, {1});
  int64_t s = detail::normalize_axis("flatten", start_axis, a.ndim());
  int64_t e = detail::normalize_axis("flatten", end_axis, a.ndim());
  if (s > e) fail("flatten", absl::StrCat("start axis ", start_axis, " is after end axis ", end_axis));
  Shape out;
  for (int64_t d = 0; d < s; ++d) out.push_back(a.shape()[d]);
  int64_t m = 1;
  for (int64_t d = s; d <= e; ++d) m *= a.shape()[d];
  out.push_back(m);
  for (int64_t d = e + 1; d < a.ndim(); ++d) out.push_back(a.shape()[d]);
  return reshape(a, out);
}

Tensor contiguous(const Tensor& a) { return a; }

}  // namespace kiln

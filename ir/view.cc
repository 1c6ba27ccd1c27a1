#include "ir/view.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "ir/graph.h"

namespace kiln::ir {
namespace {

int64_t floor_div(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}
int64_t ceil_div(int64_t a, int64_t b) { return -floor_div(-a, b); }

std::pair<int64_t, int64_t> mask_of(const View& v, size_t d) {
  return v.mask.empty() ? std::make_pair(int64_t(0), v.shape[d]) : v.mask[d];
}

}  // namespace

View View::contiguous(const Shape& shape) {
  View v;
  v.shape = shape;
  v.strides = contiguous_strides(shape);
  v.canonicalize();
  return v;
}

bool View::is_contiguous() const {
  if (!mask.empty() || offset != 0) return false;
  std::vector<int64_t> cs = contiguous_strides(shape);
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] != 1 && strides[d] != cs[d]) return false;
  return true;
}

void View::canonicalize() {
  for (size_t d = 0; d < shape.size(); ++d)
    if (shape[d] == 1 && (mask.empty() || mask[d].first < mask[d].second)) strides[d] = 0;
  if (!mask.empty()) {
    bool any_empty = false, all_full = true;
    for (size_t d = 0; d < shape.size(); ++d) {
      auto& m = mask[d];
      m.first = std::max<int64_t>(m.first, 0);
      m.second = std::min<int64_t>(m.second, shape[d]);
      if (m.first >= m.second) any_empty = true;
      if (m.first != 0 || m.second != shape[d]) all_full = false;
    }
    if (any_empty) {
      // Nothing is valid: normalize so equal maps compare equal.
      for (size_t d = 0; d < shape.size(); ++d) {
        mask[d] = {0, 0};
        strides[d] = 0;
      }
      offset = 0;
    } else if (all_full) {
      mask.clear();
    }
  }
}

std::string View::to_string() const {
  std::string r = absl::StrCat("view(", shape_str(shape), " strides=", shape_str(strides));
  if (offset) absl::StrAppend(&r, " offset=", offset);
  if (!mask.empty()) {
    r += " mask=[";
    for (size_t d = 0; d < mask.size(); ++d) absl::StrAppend(&r, d ? "," : "", mask[d].first, ":", mask[d].second);
    r += "]";
  }
  return r + ")";
}

bool IndexMap::has_mask() const {
  for (const View& v : views)
    if (v.has_mask()) return true;
  return false;
}

std::string IndexMap::to_string() const {
  std::string r;
  for (size_t i = views.size(); i-- > 0;) absl::StrAppend(&r, r.empty() ? "" : " -> ", views[i].to_string());
  return r;
}

bool merge_views(const View& outer, const View& inner, View* out) {
  const Shape& S1 = inner.shape;
  const Shape& S2 = outer.shape;
  int64_t n1 = shape_numel(S1);
  // Everything masked out: the result is masked out too.
  for (size_t k = 0; k < S2.size(); ++k) {
    auto m = mask_of(outer, k);
    if (m.first >= m.second) {
      *out = outer;
      out->canonicalize();
      return true;
    }
  }
  if (inner.is_contiguous()) {
    *out = outer;
    return true;
  }
  if (outer.is_contiguous() && S1 == S2) {
    *out = inner;
    return true;
  }
  if (n1 == 0) return false;
  std::vector<int64_t> cs = contiguous_strides(S1);
  // Lowest valid corner of `outer` and its flat index.
  std::vector<int64_t> lo(S2.size()), hi(S2.size());
  int64_t base = outer.offset;
  for (size_t k = 0; k < S2.size(); ++k) {
    auto m = mask_of(outer, k);
    lo[k] = m.first;
    hi[k] = m.second;
    base += outer.strides[k] * lo[k];
  }
  if (base < 0 || base >= n1) return false;
  std::vector<int64_t> b(S1.size());
  {
    int64_t f = base;
    for (int d = int(S1.size()) - 1; d >= 0; --d) {
      b[d] = f % S1[d];
      f /= S1[d];
    }
  }
  // Assign every moving outer dim to one inner dim.
  std::vector<int> dim_of(S2.size(), -1);
  std::vector<int64_t> mult(S2.size(), 0);
  std::vector<int64_t> cmin = b, cmax = b;
  std::vector<int> users(S1.size(), 0);
  for (size_t k = 0; k < S2.size(); ++k) {
    int64_t s = outer.strides[k];
    if (s == 0 || hi[k] - lo[k] <= 1) continue;
    int found = -1;
    for (size_t d = 0; d < S1.size(); ++d) {
      if (S1[d] > 1 && s % cs[d] == 0) {
        found = int(d);
        break;
      }
    }
    if (found < 0) return false;
    dim_of[k] = found;
    mult[k] = s / cs[found];
    int64_t span = mult[k] * (hi[k] - 1 - lo[k]);
    cmin[found] += std::min<int64_t>(0, span);
    cmax[found] += std::max<int64_t>(0, span);
    users[found]++;
  }
  for (size_t d = 0; d < S1.size(); ++d)
    if (cmin[d] < 0 || cmax[d] >= S1[d]) return false;
  View r;
  r.shape = S2;
  r.strides.assign(S2.size(), 0);
  r.offset = inner.offset;
  for (size_t d = 0; d < S1.size(); ++d) r.offset += b[d] * inner.strides[d];
  for (size_t k = 0; k < S2.size(); ++k) {
    if (dim_of[k] < 0) continue;
    r.strides[k] = mult[k] * inner.strides[dim_of[k]];
    r.offset -= r.strides[k] * lo[k];
  }
  std::vector<std::pair<int64_t, int64_t>> mask(S2.size());
  for (size_t k = 0; k < S2.size(); ++k) mask[k] = {lo[k], hi[k]};
  bool any_mask = outer.has_mask();
  if (inner.has_mask()) {
    for (size_t d = 0; d < S1.size(); ++d) {
      auto [L, H] = inner.mask[d];
      if (L <= 0 && H >= S1[d]) continue;
      if (users[d] > 1) return false;
      int k = -1;
      for (size_t kk = 0; kk < S2.size(); ++kk)
        if (dim_of[kk] == int(d)) k = int(kk);
      if (k < 0) {
        if (b[d] >= L && b[d] < H) continue;  // constant coordinate, always valid
        if (S2.empty()) return false;
        mask[0] = {0, 0};
        any_mask = true;
        continue;
      }
      int64_t m = mult[k], nl, nh;
      if (m > 0) {
        nl = lo[k] + ceil_div(L - b[d], m);
        nh = lo[k] + ceil_div(H - b[d], m);
      } else {
        nl = lo[k] + floor_div(H - b[d], m) + 1;
        nh = lo[k] + floor_div(L - b[d], m) + 1;
      }
      mask[k].first = std::max(mask[k].first, nl);
      mask[k].second = std::min(mask[k].second, nh);
      any_mask = true;
    }
  }
  if (any_mask) r.mask = mask;
  r.canonicalize();
  *out = r;
  return true;
}

IndexMap compose(const IndexMap& outer, const View& inner) {
  IndexMap r;
  View merged;
  if (merge_views(outer.views.front(), inner, &merged)) {
    r.views = outer.views;
    r.views.front() = merged;
    // Keep merging downward is not needed: inner was the only new view.
    return r;
  }
  r.views.reserve(outer.views.size() + 1);
  r.views.push_back(inner);
  for (const View& v : outer.views) r.views.push_back(v);
  return r;
}

View reshape_view(const Shape& result) { return View::contiguous(result); }

View permute_view(const Shape& in, const std::vector<int64_t>& perm) {
  std::vector<int64_t> cs = contiguous_strides(in);
  View v;
  for (int64_t p : perm) {
    v.shape.push_back(in[p]);
    v.strides.push_back(cs[p]);
  }
  v.canonicalize();
  return v;
}

View expand_view(const Shape& in, const Shape& result) {
  View v;
  v.shape = result;
  v.strides = contiguous_strides(in);
  for (size_t d = 0; d < in.size(); ++d)
    if (in[d] == 1) v.strides[d] = 0;
  v.canonicalize();
  return v;
}

View slice_view(const Shape& in, const std::vector<int64_t>& ss, const Shape& result) {
  std::vector<int64_t> cs = contiguous_strides(in);
  View v;
  v.shape = result;
  for (size_t d = 0; d < in.size(); ++d) {
    v.strides.push_back(cs[d] * ss[2 * d + 1]);
    v.offset += cs[d] * ss[2 * d];
  }
  if (shape_numel(result) == 0) v.offset = 0;
  v.canonicalize();
  return v;
}

View pad_view(const Shape& in, const std::vector<int64_t>& w) {
  std::vector<int64_t> cs = contiguous_strides(in);
  View v;
  for (size_t d = 0; d < in.size(); ++d) {
    v.shape.push_back(in[d] + w[2 * d] + w[2 * d + 1]);
    v.strides.push_back(cs[d]);
    v.offset -= w[2 * d] * cs[d];
    v.mask.push_back({w[2 * d], w[2 * d] + in[d]});
  }
  v.canonicalize();
  return v;
}

View window_view(const Shape& in, const std::vector<int64_t>& sd, const Shape& result) {
  std::vector<int64_t> cs = contiguous_strides(in);
  size_t r = in.size();
  View v;
  v.shape = result;
  v.strides.assign(2 * r, 0);
  for (size_t d = 0; d < r; ++d) {
    v.strides[d] = cs[d] * sd[2 * d];
    v.strides[r + d] = cs[d] * sd[2 * d + 1];
  }
  if (shape_numel(result) == 0) v.strides.assign(2 * r, 0);
  v.canonicalize();
  return v;
}

int64_t evaluate(const IndexMap& m, const std::vector<int64_t>& idx_in) {
  std::vector<int64_t> idx = idx_in;
  int64_t flat = 0;
  for (size_t j = m.views.size(); j-- > 0;) {
    const View& v = m.views[j];
    flat = v.offset;
    for (size_t d = 0; d < v.shape.size(); ++d) {
      if (v.has_mask() && (idx[d] < v.mask[d].first || idx[d] >= v.mask[d].second)) return -1;
      flat += idx[d] * v.strides[d];
    }
    if (j > 0) {
      const Shape& s = m.views[j - 1].shape;
      idx.assign(s.size(), 0);
      int64_t f = flat;
      for (int d = int(s.size()) - 1; d >= 0; --d) {
        idx[d] = s[d] ? f % s[d] : 0;
        f = s[d] ? f / s[d] : 0;
      }
    }
  }
  return flat;
}

}  // namespace kiln::ir

// Index maps: how a kernel's loop index addresses a buffer element, as a stack of strided views
// with validity masks. Movement ops (reshape, permute, expand, slice, pad, window) compose into these
// maps instead of producing copies.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "kiln/dtype.h"

namespace kiln::ir {

// Maps a multi-index over `shape` to the flat index offset + sum(idx[d] * strides[d]).
// When `mask` is non-empty, the index is valid only if mask[d].first <= idx[d] < mask[d].second
// for every d; an invalid index reads as 0 (loads) / false (valid nodes).
struct View {
  Shape shape;
  std::vector<int64_t> strides;
  int64_t offset = 0;
  std::vector<std::pair<int64_t, int64_t>> mask;

  static View contiguous(const Shape& shape);
  bool is_contiguous() const;  // contiguous strides, offset 0, no mask
  bool has_mask() const { return !mask.empty(); }
  // Drops masks that cover everything, zeroes strides of size-1 dims.
  void canonicalize();
  bool operator==(const View& o) const {
    return shape == o.shape && strides == o.strides && offset == o.offset && mask == o.mask;
  }
  std::string to_string() const;
};

// views.back() is indexed by the kernel's loop index; each view's flat result is unflattened
// (row-major) into the shape of the view before it; views.front()'s flat result is the element
// offset in the buffer.
struct IndexMap {
  std::vector<View> views;

  static IndexMap of(View v) { return IndexMap{{std::move(v)}}; }
  const Shape& shape() const { return views.back().shape; }
  bool has_mask() const;
  bool operator==(const IndexMap& o) const { return views == o.views; }
  std::string to_string() const;
};

// Composes: `outer` yields a flat index into a row-major tensor of shape inner.shape, which
// `inner` maps onward. Merges into fewer views when the result is exactly expressible.
IndexMap compose(const IndexMap& outer, const View& inner);

// Tries to express "outer then inner" as one view; returns false when it cannot be done exactly.
bool merge_views(const View& outer, const View& inner, View* out);

// The view over `result` of a movement op whose operand has shape `in`, yielding the operand's
// flat index. `ints` are the op's attributes (see graph.h).
View reshape_view(const Shape& result);
View permute_view(const Shape& in, const std::vector<int64_t>& perm);
View expand_view(const Shape& in, const Shape& result);
View slice_view(const Shape& in, const std::vector<int64_t>& start_step, const Shape& result);
View pad_view(const Shape& in, const std::vector<int64_t>& widths);
// A window node's view: result [O..., K...] (rank 2r) over an operand of rank r.
View window_view(const Shape& in, const std::vector<int64_t>& stride_dilation, const Shape& result);

// Evaluates a map on the host (used by tests and the view-folding checks): returns the buffer
// offset, or -1 when the index is masked out.
int64_t evaluate(const IndexMap& m, const std::vector<int64_t>& idx);

// Unflattening without dividing. A flat index c0 + sum of t.coef * t.v over `terms` (any type
// with int64 `coef` and `ext`, each v in [0, ext)), that lies in [0, prod(s[lo..hi))) unflattens
// over s[lo..hi) as two independent parts when it splits at a dim boundary b: with P =
// prod(s[b..hi)), the terms whose coefficients are multiples of P (divided by P) plus c0's
// quotient give dims [lo, b), and the others, all non-negative and summing with c0's remainder to
// less than P, give dims [b, hi). This is how the merged k and n indices of a convolution's
// windows come apart in the code generators, and a part that depends only on an outer loop's
// index stays out of the inner loop. Takes the first such boundary from the inside; false when
// there is none (the caller divides).
template <typename Term>
struct FlatSplit {
  size_t boundary = 0;
  std::vector<Term> high, low;
  int64_t high_c0 = 0, low_c0 = 0;
};
template <typename Term>
bool split_flat(const std::vector<Term>& terms, int64_t c0, const Shape& s, size_t lo, size_t hi, FlatSplit<Term>* out) {
  int64_t P = 1;
  for (size_t b = hi - 1; b > lo; --b) {
    P *= s[b];
    const int64_t qc = c0 >= 0 ? c0 / P : -((-c0 + P - 1) / P), rc = c0 - qc * P;
    FlatSplit<Term> r{b, {}, {}, qc, rc};
    int64_t low_max = rc;
    bool ok = true;
    for (const Term& t : terms) {
      if (t.coef % P == 0) {
        Term h = t;
        h.coef /= P;
        r.high.push_back(h);
      } else if (t.coef > 0) {
        r.low.push_back(t);
        low_max += t.coef * (t.ext - 1);
      } else {
        ok = false;
      }
    }
    if (!ok || low_max >= P) continue;
    *out = std::move(r);
    return true;
  }
  return false;
}

}  // namespace kiln::ir

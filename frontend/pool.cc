// Pooling: one reduction over the sliding windows of the padded input. Average pooling divides
// by the number of cells a window covers, which is the product of per-dim counts known when the
// op is recorded (a small constant per output position, applied in the reduction's epilogue).
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"
#include "frontend/lazy.h"
#include "frontend/window.h"
#include "kiln/conv.h"

namespace kiln {
namespace {
using detail::fail;

detail::WindowSpec plan(const std::string& label, const Tensor& x, const PoolOptions& o) {
  return detail::plan_windows(label, x, o.kernel, o.strides, o.padding, o.dilation, o.ceil_mode);
}

std::vector<int64_t> window_axes(size_t s) {
  std::vector<int64_t> r;
  for (size_t d = 0; d < s; ++d) r.push_back(int64_t(2 + s + d));
  return r;
}

void require_float(const std::string& label, const Tensor& x) {
  if (!is_float(x.dtype())) fail(label, absl::StrCat("needs a floating-point input, got ", dtype_name(x.dtype())));
}

// The smallest value of x's dtype: max pooling's padding, which never wins.
double lowest(const std::string& label, DType t) {
  if (is_float(t)) return -std::numeric_limits<double>::infinity();
  if (!is_int(t)) fail(label, absl::StrCat("needs a numeric input, got ", dtype_name(t)));
  return double(int_lowest(t));
}

}  // namespace

Tensor max_pool(const Tensor& x, const PoolOptions& o) {
  detail::WindowSpec spec = plan("max_pool", x, o);
  Tensor win = detail::sliding_windows("max_pool", x, spec, lowest("max_pool", x.dtype()));
  return max(win, window_axes(spec.kernel.size()));
}

Tensor avg_pool(const Tensor& x, const PoolOptions& o) {
  require_float("avg_pool", x);
  detail::WindowSpec spec = plan("avg_pool", x, o);
  size_t s = spec.kernel.size();
  Tensor sum_ = sum(detail::sliding_windows("avg_pool", x, spec, 0.0), window_axes(s));
  // Cells counted per spatial dim and output position: those inside the input (and, with
  // count_include_pad, inside the given padding; never ceil_mode's extra cells).
  Tensor y = sum_;
  for (size_t d = 0; d < s; ++d) {
    int64_t in = x.shape()[d + 2], lo = spec.padding[d].first;
    int64_t first = o.count_include_pad ? 0 : lo, end = o.count_include_pad ? in + lo + spec.padding[d].second : in + lo;
    std::vector<float> count;
    bool uniform = true;
    for (int64_t i = 0; i < spec.out[d]; ++i) {
      int64_t n = 0;
      for (int64_t k = 0; k < spec.kernel[d]; ++k) {
        int64_t at = i * spec.strides[d] + k * spec.dilation[d];
        n += at >= first && at < end;
      }
      count.push_back(float(n));
      uniform = uniform && n == spec.kernel[d];
    }
    if (uniform) {
      y = y / double(spec.kernel[d]);
      continue;
    }
    Shape shape(s + 2, 1);
    shape[d + 2] = spec.out[d];
    y = y / from_vector(count, shape, x.dtype(), x.device());
  }
  return cast(y, x.dtype());
}

Tensor lp_pool(const Tensor& x, double p, const PoolOptions& o) {
  require_float("lp_pool", x);
  if (!(p > 0) || std::isinf(p)) fail("lp_pool", absl::StrCat("p must be positive and finite, got ", p));
  detail::WindowSpec spec = plan("lp_pool", x, o);
  Tensor win = detail::sliding_windows("lp_pool", x, spec, 0.0);
  std::vector<int64_t> axes = window_axes(spec.kernel.size());
  if (p == 1) return sum(abs(win), axes);
  if (p == 2) return sqrt(sum(win * win, axes));
  return cast(pow(sum(pow(abs(win), p), axes), 1.0 / p), x.dtype());
}

// Every window cell's flat index into x, its validity, and the window's first maximum: the
// cell whose row-major index is smallest among the valid cells equal to the maximum (window order
// and row-major order agree), then that cell's index in the requested numbering.
Tensor max_pool_indices(const Tensor& x, const PoolOptions& o, bool spatial_column_major) {
  detail::WindowSpec spec = plan("max_pool_indices", x, o);
  size_t s = spec.kernel.size();
  Tensor win = detail::sliding_windows("max_pool_indices", x, spec, lowest("max_pool_indices", x.dtype()));
  std::vector<int64_t> axes = window_axes(s);
  const Shape& xs = x.shape();
  int64_t plane = 1;
  for (size_t d = 0; d < s; ++d) plane *= xs[d + 2];
  // (n * C + c) * plane, broadcast over [N, C, 1...].
  std::vector<int64_t> base;
  for (int64_t i = 0; i < xs[0] * xs[1]; ++i) base.push_back(i * plane);
  Shape bshape(2 * s + 2, 1);
  bshape[0] = xs[0];
  bshape[1] = xs[1];
  Tensor row = from_vector(base, bshape, x.device()), col = row, valid;
  int64_t row_stride = plane, col_stride = 1;
  for (size_t d = 0; d < s; ++d) {
    int64_t in = xs[d + 2], O = spec.out[d], K = spec.kernel[d];
    row_stride /= in;
    std::vector<int64_t> r, c;
    std::vector<uint8_t> ok;
    for (int64_t i = 0; i < O; ++i)
      for (int64_t k = 0; k < K; ++k) {
        int64_t at = i * spec.strides[d] + k * spec.dilation[d] - spec.padding[d].first;
        bool inside = at >= 0 && at < in;
        ok.push_back(inside);
        r.push_back(inside ? at * row_stride : 0);
        c.push_back(inside ? at * col_stride : 0);
      }
    col_stride *= in;
    Shape shape(2 * s + 2, 1);
    shape[2 + d] = O;
    shape[2 + s + d] = K;
    row = row + from_vector(r, shape, x.device());
    col = col + from_vector(c, shape, x.device());
    Tensor v = from_vector(ok, shape, bool_, x.device());
    valid = d == 0 ? v : logical_and(valid, v);
  }
  Shape full = win.shape();
  Tensor hit = logical_and(equal(win, max(win, axes, true)), expand(valid, full));
  constexpr double kNone = 9.0e18;  // above every index
  Tensor first = min(where(hit, expand(row, full), scalar(kNone, int64, x.device())), axes, true);
  Shape out = {xs[0], xs[1]};
  out.insert(out.end(), spec.out.begin(), spec.out.end());
  if (!spatial_column_major) return reshape(first, out);
  Tensor pick = logical_and(hit, equal(expand(row, full), first));
  return reshape(max(where(pick, expand(col, full), scalar(-1, int64, x.device())), axes), out);
}

}  // namespace kiln

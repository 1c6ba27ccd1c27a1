// GridSample (2-D: X [N, C, H, W], grid [N, Ho, Wo, 2]): sampling at run-time positions. The
// positions are elementwise arithmetic on the grid (denormalize, round for nearest, clamp or
// reflect for the padding mode), each tap a take_along_axis over the flattened image, weighted
// by its linear or cubic coefficient, with ONNX's reference semantics (taps are padded again
// one by one; zeros padding reads 0 outside the image).
#include "absl/strings/str_cat.h"
#include "frontend/onnx/ops.h"

namespace kiln::onnx {
namespace {

struct Sampling {
  std::string mode, padding;
  bool align = false;
};

// C++'s nearbyint (round half to even) of exact float values.
Tensor round_half_even(const Tensor& x) {
  Tensor r = floor(x + 0.5);
  Tensor odd = (r - floor(r * 0.5) * 2.0) == 1.0;
  return where(logical_and(r - x == 0.5, odd), r - 1.0, r);
}

Tensor truncate(const Tensor& x) { return where(x < 0.0, ceil(x), floor(x)); }

// Reflects x into [lo, hi] by the nearer border until it lies inside (ONNX's _gs_reflect).
Tensor reflect(const Tensor& x, double lo, double hi) {
  const double range = hi - lo;
  if (range <= 0) return full_like(x, lo);
  // dx past the border: whole ranges flip the side, the rest is measured from the side reached.
  auto fold = [&](const Tensor& dx, bool from_lo) {
    Tensor n = floor(dx / range);
    Tensor r = dx - n * range;
    Tensor even = (n - floor(n * 0.5) * 2.0) == 0.0;
    Tensor near = from_lo ? r + lo : hi - r, far = from_lo ? hi - r : r + lo;
    return where(even, near, far);
  };
  Tensor below = fold(lo - x, true), above = fold(x - hi, false);
  return where(x < lo, below, where(x > hi, above, x));
}

double border_lo(const Sampling& s) { return s.align ? 0.0 : -0.5; }
double border_hi(const Sampling& s, int64_t d) { return s.align ? double(d - 1) : double(d) - 0.5; }

// The padded coordinate of a sample position (before taps are taken).
Tensor pad_position(const Sampling& s, const Tensor& v, int64_t d) {
  double lo = border_lo(s), hi = border_hi(s, d);
  Tensor outside = logical_or(v < lo, v > hi);
  if (s.padding == "border") return where(outside, clamp(v, 0, double(d - 1)), v);
  if (s.padding == "reflection") return where(outside, reflect(v, lo, hi), v);
  return v;
}

// A tap's integer position along a dim of `d` and whether it reads the image (zeros padding).
std::pair<Tensor, Tensor> pad_tap(const Sampling& s, const Tensor& i, int64_t d) {
  if (s.padding == "border") return {clamp(i, 0, double(d - 1)), full_like(i, 1) > 0.0};
  if (s.padding == "reflection") return {truncate(reflect(i, border_lo(s), border_hi(s, d))), full_like(i, 1) > 0.0};
  return {i, logical_and(i >= 0.0, i < double(d))};
}

std::vector<Tensor> coefficients(const Sampling& s, const Tensor& t) {
  if (s.mode == "linear") return {1.0 - t, t};
  const double A = -0.75;
  Tensor u = 1.0 - t, t1 = t + 1.0, u1 = u + 1.0;
  return {((A * t1 - 5 * A) * t1 + 8 * A) * t1 - 4 * A, ((A + 2) * t - (A + 3)) * t * t + 1.0,
          ((A + 2) * u - (A + 3)) * u * u + 1.0, ((A * u1 - 5 * A) * u1 + 8 * A) * u1 - 4 * A};
}

void grid_sample_op(NodeContext& c) {
  Sampling s;
  s.mode = c.attr_string("mode", c.opset() >= 20 ? "linear" : "bilinear");
  if (s.mode == "bilinear") s.mode = "linear";
  if (s.mode == "bicubic") s.mode = "cubic";
  s.padding = c.attr_string("padding_mode", "zeros");
  s.align = c.attr_int("align_corners", 0) != 0;
  if (s.mode != "linear" && s.mode != "cubic" && s.mode != "nearest") c.invalid(absl::StrCat("unknown mode '", s.mode, "'"));
  if (s.padding != "zeros" && s.padding != "border" && s.padding != "reflection")
    c.invalid(absl::StrCat("unknown padding_mode '", s.padding, "'"));
  Tensor x = c.in(0), grid = c.in(1);
  if (x.ndim() != 4) c.unsupported(absl::StrCat("GridSample of a ", x.ndim(), "-D input (kiln samples 2-D images)"));
  if (!is_float(x.dtype()) || !is_float(grid.dtype())) c.unsupported("GridSample of non-float data");
  const int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  if (grid.shape().size() != 4 || grid.shape()[0] != N || grid.shape()[3] != 2)
    c.invalid(absl::StrCat("grid ", shape_str(grid.shape()), " should be [N, Ho, Wo, 2] for X ", shape_str(x.shape())));
  const int64_t Ho = grid.shape()[1], Wo = grid.shape()[2], P = Ho * Wo;
  if (H == 0 || W == 0) c.unsupported("GridSample of an empty image");
  auto denormalize = [&](const Tensor& n, int64_t d) {
    Tensor g = cast(reshape(n, {N, 1, P}), DType::kFloat32);
    return s.align ? (g + 1.0) * 0.5 * double(d - 1) : ((g + 1.0) * double(d) - 1.0) * 0.5;
  };
  Tensor px = denormalize(slice(grid, 3, 0, 1), W), py = denormalize(slice(grid, 3, 1, 2), H);
  if (s.mode == "nearest") px = round_half_even(px), py = round_half_even(py);
  px = pad_position(s, px, W);
  py = pad_position(s, py, H);
  Tensor image = reshape(x, {N, C, H * W});
  auto sample = [&](const Tensor& iy, const Tensor& ix) {
    auto [y, vy] = pad_tap(s, iy, H);
    auto [xx, vx] = pad_tap(s, ix, W);
    Tensor flat = where(logical_and(vy, vx), y * double(W) + xx, double(H * W));
    return take_along_axis(image, expand(cast(flat, DType::kInt64), {N, C, P}), 2);
  };
  Tensor out;
  if (s.mode == "nearest") {
    out = sample(truncate(py), truncate(px));
  } else {
    Tensor x0 = floor(px), y0 = floor(py);
    std::vector<Tensor> wx = coefficients(s, px - x0), wy = coefficients(s, py - y0);
    const int64_t first = s.mode == "cubic" ? -1 : 0;
    for (size_t j = 0; j < wy.size(); ++j)
      for (size_t i = 0; i < wx.size(); ++i) {
        Tensor w = cast(wy[j] * wx[i], x.dtype());
        Tensor term = sample(y0 + double(first + int64_t(j)), x0 + double(first + int64_t(i))) * w;
        out = out.defined() ? out + term : term;
      }
  }
  c.set(0, reshape(out, {N, C, Ho, Wo}));
}

}  // namespace

void register_grid_sample_ops(OpTable& t) {
  t["GridSample"] = {grid_sample_op, {"mode", "padding_mode", "align_corners"}, {}};
}

}  // namespace kiln::onnx

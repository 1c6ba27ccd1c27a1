// Resize (opset 11+) and Upsample: separable resampling, one axis at a time. Scales or sizes are
// known at import, so each output coordinate's source taps and weights are computed on the host
// (as ONNX's reference does: the n nearest input positions, edge-clamped, with nearest, linear
// or cubic coefficients); each tap is a gather of constant indices, weighted and summed.
// ReverseSequence: a take_along_axis of positions reversed below each run-time length.
#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "frontend/onnx/ops.h"

namespace kiln::onnx {
namespace {

struct Taps {
  std::vector<std::vector<int64_t>> index;  // [tap][output coordinate]
  std::vector<std::vector<double>> weight;  // same
  std::vector<bool> outside;                // tf_crop_and_resize: the coordinate extrapolates
};

struct ResizeMode {
  std::string mode = "nearest", coords = "half_pixel", nearest = "round_prefer_floor";
  double cubic_a = -0.75, extrapolation = 0;
  bool exclude_outside = false;
};

// The source coordinate of output coordinate x (ONNX's coordinate_transformation_mode). As in
// ONNX's reference, the resized length is scale * in, not the rounded output size (they differ
// when scales are given: align_corners downsampling by 0.6 maps over 2.4, not 2).
double source_coordinate(const ResizeMode& m, double x, double scale, int64_t in, double roi_lo, double roi_hi) {
  const std::string& c = m.coords;
  const double out = scale * double(in);
  if (c == "align_corners") return out == 1 ? 0.0 : x * double(in - 1) / (out - 1);
  if (c == "asymmetric") return x / scale;
  if (c == "tf_half_pixel_for_nn") return (x + 0.5) / scale;
  if (c == "pytorch_half_pixel") return out == 1 ? -0.5 : (x + 0.5) / scale - 0.5;
  if (c == "tf_crop_and_resize") {
    double span = (roi_hi - roi_lo) * double(in - 1);
    return roi_lo * double(in - 1) + (out == 1 ? span / 2 : x * span / (out - 1));
  }
  return (x + 0.5) / scale - 0.5;  // half_pixel
}

std::vector<double> coefficients(const ResizeMode& m, double r) {
  if (m.mode == "linear") return {1 - r, r};
  if (m.mode == "cubic") {
    const double A = m.cubic_a, s = 1 - r;
    return {((A * (r + 1) - 5 * A) * (r + 1) + 8 * A) * (r + 1) - 4 * A, ((A + 2) * r - (A + 3)) * r * r + 1,
            ((A + 2) * s - (A + 3)) * s * s + 1, ((A * (s + 1) - 5 * A) * (s + 1) + 8 * A) * (s + 1) - 4 * A};
  }
  bool up = r == 1;  // an exact position: ratio 1 picks the right-hand tap
  if (!up) {
    if (m.nearest == "round_prefer_floor") up = r > 0.5;
    else if (m.nearest == "round_prefer_ceil") up = r >= 0.5;
    else up = m.nearest == "ceil";
  }
  return {up ? 0.0 : 1.0, up ? 1.0 : 0.0};
}

Taps taps_of(const ResizeMode& m, double scale, int64_t in, int64_t out, double roi_lo, double roi_hi) {
  Taps t;
  const size_t n = m.mode == "cubic" ? 4 : 2;
  t.index.assign(n, std::vector<int64_t>(size_t(out)));
  t.weight.assign(n, std::vector<double>(size_t(out)));
  t.outside.assign(size_t(out), false);
  for (int64_t x = 0; x < out; ++x) {
    double src = source_coordinate(m, double(x), scale, in, roi_lo, roi_hi);
    if (m.coords == "tf_crop_and_resize" && (src < 0 || src > double(in - 1))) t.outside[size_t(x)] = true;
    // The taps lie left of the position: an exact one has ratio 1 (ONNX's reference).
    double lo = std::floor(src), r = src - lo;
    if (r == 0) lo -= 1, r = 1;
    std::vector<double> c = coefficients(m, r);
    int64_t first = int64_t(lo) - int64_t(n / 2 - 1);
    double total = 0;
    for (size_t j = 0; j < n; ++j) {
      int64_t i = first + int64_t(j);
      if (m.exclude_outside && (i < 0 || i >= in)) c[j] = 0;
      total += c[j];
    }
    for (size_t j = 0; j < n; ++j) {
      int64_t i = first + int64_t(j);
      t.index[j][size_t(x)] = std::clamp<int64_t>(i, 0, in - 1);
      t.weight[j][size_t(x)] = m.exclude_outside && total != 0 ? c[j] / total : c[j];
    }
  }
  if (m.mode == "nearest") {  // one tap: the chosen position
    for (int64_t x = 0; x < out; ++x)
      if (t.weight[0][size_t(x)] == 0) t.index[0][size_t(x)] = t.index[1][size_t(x)];
    t.index.resize(1);
    t.weight.assign(1, std::vector<double>(size_t(out), 1.0));
  }
  return t;
}

// Whether every output coordinate reads exactly its own input position.
bool is_identity(const Taps& t) {
  for (bool o : t.outside)
    if (o) return false;
  for (size_t x = 0; x < t.outside.size(); ++x) {
    double sum = 0;
    for (size_t j = 0; j < t.index.size(); ++j) {
      if (t.weight[j][x] == 0) continue;
      if (t.index[j][x] != int64_t(x)) return false;
      sum += t.weight[j][x];
    }
    if (sum != 1) return false;
  }
  return true;
}

// A [1.., n, ..1] tensor holding `v` along `axis` of a rank-`rank` tensor.
Tensor along(const std::vector<double>& v, int64_t axis, int64_t rank, DType t, const Device& d) {
  Shape s(size_t(rank), 1);
  s[size_t(axis)] = int64_t(v.size());
  return from_vector(v, s, t, d);
}

Tensor resize_axis(NodeContext& c, const ResizeMode& m, Tensor x, int64_t axis, const Taps& t) {
  const int64_t rank = x.ndim();
  Tensor r;
  for (size_t j = 0; j < t.index.size(); ++j) {
    bool used = false;
    for (double w : t.weight[j]) used = used || w != 0;
    if (!used) continue;
    Tensor g = gather(x, axis, from_vector(t.index[j], {int64_t(t.index[j].size())}, DType::kInt64, c.device()));
    if (m.mode != "nearest") g = g * along(t.weight[j], axis, rank, x.dtype(), c.device());
    r = r.defined() ? r + g : g;
  }
  bool any_outside = false;
  for (bool o : t.outside) any_outside = any_outside || o;
  if (any_outside) {
    std::vector<double> keep;
    for (bool o : t.outside) keep.push_back(o ? 0 : 1);
    r = where(along(keep, axis, rank, DType::kBool, c.device()), r, m.extrapolation);
  }
  return r;
}

void resize(NodeContext& c, const ResizeMode& m, const std::vector<double>& scales_in, std::vector<int64_t> sizes,
            const std::vector<double>& roi) {
  Tensor x = c.in(0);
  const int64_t rank = x.ndim();
  if (m.mode != "nearest" && !is_float(x.dtype()))
    c.unsupported(absl::StrCat(m.mode, " resize of ", dtype_name(x.dtype()), " data"));
  std::vector<double> scales = scales_in;
  if (!sizes.empty()) {
    if (int64_t(sizes.size()) != rank) c.invalid("sizes must have one entry per input dim");
    scales.clear();
    for (int64_t d = 0; d < rank; ++d) scales.push_back(double(sizes[size_t(d)]) / double(x.shape()[size_t(d)]));
  } else {
    if (int64_t(scales.size()) != rank) c.invalid("scales must have one entry per input dim");
    for (int64_t d = 0; d < rank; ++d) {
      if (!(scales[size_t(d)] > 0)) c.invalid("scales must be positive");
      sizes.push_back(int64_t(std::floor(double(x.shape()[size_t(d)]) * scales[size_t(d)])));
    }
  }
  if (!roi.empty() && int64_t(roi.size()) != 2 * rank) c.invalid("roi must have two entries per input dim");
  for (int64_t d = rank; d-- > 0;) {
    int64_t in = x.shape()[size_t(d)], out = sizes[size_t(d)];
    if (out <= 0 || in <= 0) c.unsupported("resizing to or from an empty dim");
    double lo = roi.empty() ? 0 : roi[size_t(d)], hi = roi.empty() ? 1 : roi[size_t(d + rank)];
    Taps t = taps_of(m, scales[size_t(d)], in, out, lo, hi);
    if (in == out && is_identity(t)) continue;
    x = resize_axis(c, m, x, d, t);
  }
  c.set(0, x);
}

std::vector<double> host_doubles(NodeContext& c, size_t i, const std::string& what) {
  const HostTensor& h = c.host(i, what);
  std::vector<double> v;
  for (int64_t k = 0; k < h.numel(); ++k) v.push_back(h.double_at(k));
  return v;
}

void resize_op(NodeContext& c) {
  if (c.opset() < 11) c.unsupported("Resize before opset 11 (its nearest rounding is unspecified)");
  ResizeMode m;
  m.mode = c.attr_string("mode", "nearest");
  m.coords = c.attr_string("coordinate_transformation_mode", "half_pixel");
  m.nearest = c.attr_string("nearest_mode", "round_prefer_floor");
  m.cubic_a = c.attr_float("cubic_coeff_a", -0.75);
  m.exclude_outside = c.attr_int("exclude_outside", 0) != 0;
  m.extrapolation = c.attr_float("extrapolation_value", 0);
  if (m.mode != "nearest" && m.mode != "linear" && m.mode != "cubic") c.invalid(absl::StrCat("unknown mode '", m.mode, "'"));
  const std::vector<std::string> coords = {"half_pixel",         "align_corners",     "asymmetric",
                                            "tf_half_pixel_for_nn", "pytorch_half_pixel", "tf_crop_and_resize"};
  if (std::find(coords.begin(), coords.end(), m.coords) == coords.end())
    c.unsupported(absl::StrCat("coordinate_transformation_mode '", m.coords, "'"));
  if (m.nearest != "round_prefer_floor" && m.nearest != "round_prefer_ceil" && m.nearest != "floor" &&
      m.nearest != "ceil")
    c.invalid(absl::StrCat("unknown nearest_mode '", m.nearest, "'"));
  std::vector<double> roi, scales;
  std::vector<int64_t> sizes;
  if (c.has_input(1) && m.coords == "tf_crop_and_resize") roi = host_doubles(c, 1, "roi");
  if (c.has_input(2)) scales = host_doubles(c, 2, "scales");
  if (c.has_input(3)) sizes = c.host_ints(3, "sizes");
  if (scales.empty() == sizes.empty()) c.invalid("needs exactly one of scales and sizes");
  resize(c, m, scales, sizes, roi);
}

// Upsample (deprecated): nearest is floor(x / scale) (asymmetric, floor), linear is asymmetric.
void upsample_op(NodeContext& c) {
  ResizeMode m;
  m.mode = c.attr_string("mode", "nearest");
  if (m.mode != "nearest" && m.mode != "linear") c.invalid(absl::StrCat("unknown mode '", m.mode, "'"));
  m.coords = "asymmetric";
  m.nearest = "floor";
  std::vector<double> scales = c.has_attr("scales") ? c.attr_floats("scales") : host_doubles(c, 1, "scales");
  resize(c, m, scales, {}, {});
}

void reverse_sequence_op(NodeContext& c) {
  Tensor x = c.in(0);
  const int64_t rank = x.ndim();
  if (rank < 2) c.invalid("input must have rank >= 2");
  int64_t ta = c.axis(c.attr_int("time_axis", 0), rank, "time_axis"),
          ba = c.axis(c.attr_int("batch_axis", 1), rank, "batch_axis");
  if (ta == ba) c.invalid("time_axis and batch_axis must differ");
  c.require_dtype(1, {DType::kInt64});
  Tensor lens = c.in(1);
  if (lens.shape() != Shape{x.shape()[size_t(ba)]}) c.invalid("sequence_lens must have one entry per batch");
  Shape ts(size_t(rank), 1), bs(size_t(rank), 1);
  ts[size_t(ta)] = x.shape()[size_t(ta)];
  bs[size_t(ba)] = x.shape()[size_t(ba)];
  Tensor t = reshape(arange(x.shape()[size_t(ta)], DType::kInt64, c.device()), ts);
  Tensor len = reshape(lens, bs);
  Tensor idx = where(t < len, len - 1.0 - t, t);
  c.set(0, take_along_axis(x, expand(idx, x.shape()), ta));
}

}  // namespace

void register_resize_ops(OpTable& t) {
  t["Resize"] = {resize_op,
                 {"mode", "coordinate_transformation_mode", "nearest_mode", "cubic_coeff_a", "exclude_outside",
                  "extrapolation_value"},
                 {1, 2, 3}};
  t["Upsample"] = {upsample_op, {"mode", "scales"}, {1}};
  t["ReverseSequence"] = {reverse_sequence_op, {"time_axis", "batch_axis"}, {}};
}

}  // namespace kiln::onnx

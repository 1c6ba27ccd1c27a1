#include "frontend/window.h"

#include "absl/strings/str_cat.h"
#include "frontend/lazy.h"

namespace kiln::detail {
namespace {

std::vector<int64_t> filled(const std::string& label, const char* what, std::vector<int64_t> v, size_t n,
                            int64_t fallback, int64_t minimum) {
  if (v.empty()) v.assign(n, fallback);
  if (v.size() != n) fail(label, absl::StrCat(what, " has ", v.size(), " values for ", n, " spatial dims"));
  for (int64_t x : v)
    if (x < minimum) fail(label, absl::StrCat(what, " ", shape_str(v), " must be at least ", minimum));
  return v;
}

}  // namespace

WindowSpec plan_windows(const std::string& label, const Tensor& x, std::vector<int64_t> kernel,
                        std::vector<int64_t> strides, std::vector<std::pair<int64_t, int64_t>> padding,
                        std::vector<int64_t> dilation, bool ceil_mode) {
  if (x.ndim() < 3 || x.ndim() > 5)
    fail(label, absl::StrCat("input must be [N, C, spatial...] with 1 to 3 spatial dims, got ", shape_str(x.shape())));
  size_t s = size_t(x.ndim() - 2);
  WindowSpec w;
  if (kernel.size() != s)
    fail(label, absl::StrCat("kernel ", shape_str(kernel), " does not match the ", s, " spatial dims of ",
                             shape_str(x.shape())));
  w.kernel = filled(label, "kernel", kernel, s, 1, 1);
  w.strides = filled(label, "strides", std::move(strides), s, 1, 1);
  w.dilation = filled(label, "dilation", std::move(dilation), s, 1, 1);
  if (padding.empty()) padding.assign(s, {0, 0});
  if (padding.size() != s) fail(label, absl::StrCat("padding has ", padding.size(), " pairs for ", s, " spatial dims"));
  for (auto [lo, hi] : padding)
    if (lo < 0 || hi < 0) fail(label, "padding must be non-negative");
  w.padding = padding;
  w.ceil_mode = ceil_mode;
  for (size_t d = 0; d < s; ++d) {
    int64_t in = x.shape()[d + 2], padded = in + padding[d].first + padding[d].second;
    int64_t extent = w.dilation[d] * (w.kernel[d] - 1) + 1;
    if (extent > padded)
      fail(label, absl::StrCat("window of extent ", extent, " (kernel ", w.kernel[d], ", dilation ", w.dilation[d],
                               ") is larger than spatial dim ", d, " of ", shape_str(x.shape()), " padded to ", padded));
    int64_t span = padded - extent, st = w.strides[d];
    int64_t o = (ceil_mode ? (span + st - 1) / st : span / st) + 1;
    // A window that would start in the padding after the input is dropped.
    if (ceil_mode && (o - 1) * st >= in + padding[d].first) --o;
    w.out.push_back(o);
  }
  return w;
}

Tensor sliding_windows(const std::string& label, const Tensor& x, const WindowSpec& spec, double value) {
  size_t s = spec.kernel.size();
  std::vector<std::pair<int64_t, int64_t>> widths = {{0, 0}, {0, 0}};
  std::vector<int64_t> ints = {1, 1, 1, 1};
  Shape out = {x.shape()[0], x.shape()[1]}, tail = {1, 1};
  for (size_t d = 0; d < s; ++d) {
    int64_t in = x.shape()[d + 2];
    // ceil_mode's last window may reach past the given padding: pad up to where it ends.
    int64_t end = (spec.out[d] - 1) * spec.strides[d] + spec.dilation[d] * (spec.kernel[d] - 1) + 1;
    int64_t hi = std::max(spec.padding[d].second, end - in - spec.padding[d].first);
    widths.push_back({spec.padding[d].first, hi});
    ints.push_back(spec.strides[d]);
    ints.push_back(spec.dilation[d]);
    out.push_back(spec.out[d]);
    tail.push_back(spec.kernel[d]);
  }
  Tensor p = pad(x, widths, value);
  Shape result = out;
  result.insert(result.end(), tail.begin(), tail.end());
  Tensor win = record(label, ir::Op::kWindow, x.dtype(), result, {p}, ints);
  Shape squeezed = out;
  squeezed.insert(squeezed.end(), spec.kernel.begin(), spec.kernel.end());
  return reshape(win, squeezed);
}

}  // namespace kiln::detail

// DFT and STFT as matmuls with cosine and sine matrices built at import (float64, cast to the
// input's dtype at the end): the transform of a length-N axis is an [N, K] contraction per real
// and imaginary part, so it reaches kiln's matmul kernels. Exact compositions, O(N*K) work; a
// real FFT is a kernel kiln does not have.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "frontend/onnx/ops.h"

namespace kiln::onnx {
namespace {

// cos(sign * 2*pi*n*k/N) and sin(...) as [n_in, k_out] float64 tensors.
std::pair<Tensor, Tensor> twiddles(const Device& dev, int64_t n_in, int64_t period, int64_t k_out, double sign) {
  std::vector<double> c(size_t(n_in * k_out)), s(size_t(n_in * k_out));
  for (int64_t n = 0; n < n_in; ++n)
    for (int64_t k = 0; k < k_out; ++k) {
      // n*k mod period keeps the angle small (exact for the index products here).
      double a = sign * 2.0 * M_PI * double((n * k) % period) / double(period);
      c[size_t(n * k_out + k)] = std::cos(a);
      s[size_t(n * k_out + k)] = std::sin(a);
    }
  return {from_vector(c, {n_in, k_out}, dev), from_vector(s, {n_in, k_out}, dev)};
}

// x: [..., N] real and imaginary parts (im may be undefined); the transform along the last axis.
std::pair<Tensor, Tensor> transform(const Device& dev, const Tensor& re, const Tensor& im, int64_t period, int64_t bins, bool inverse) {
  int64_t n = re.shape().back();
  auto [c, s] = twiddles(dev, n, period, bins, inverse ? 1.0 : -1.0);
  // (a + ib)(cos + i sin) = (a cos - b sin) + i (a sin + b cos)
  Tensor out_re = matmul(re, c), out_im = matmul(re, s);
  if (im.defined()) {
    out_re = out_re - matmul(im, s);
    out_im = out_im + matmul(im, c);
  }
  if (inverse) {
    out_re = out_re / double(period);
    out_im = out_im / double(period);
  }
  return {out_re, out_im};
}

void dft_op(NodeContext& c) {
  Tensor x = c.in(0);
  if (!is_float(x.dtype())) c.unsupported(absl::StrCat("input dtype ", dtype_name(x.dtype())));
  int64_t r = x.ndim();
  if (r < 3) c.invalid("input must be [batch, signal..., 1 or 2]");
  int64_t parts = x.shape().back();
  if (parts != 1 && parts != 2) c.invalid("the last dimension must be 1 (real) or 2 (complex)");
  int64_t axis = c.attr_int("axis", 1);
  if (axis < 0) axis += r;
  if (axis < 1 || axis >= r - 1) c.invalid(absl::StrCat("axis ", c.attr_int("axis", 1), " is not a signal axis"));
  bool inverse = c.attr_int("inverse", 0) != 0, onesided = c.attr_int("onesided", 0) != 0;
  if (inverse && onesided) c.unsupported("an inverse one-sided DFT");
  Tensor w = x.dtype() == DType::kFloat64 ? x : cast(x, DType::kFloat64);
  Tensor re = slice(w, r - 1, 0, 1).squeeze(r - 1);
  Tensor im = parts == 2 ? slice(w, r - 1, 1, 2).squeeze(r - 1) : Tensor();
  re = transpose(re, axis, -1);
  if (im.defined()) im = transpose(im, axis, -1);
  int64_t n = re.shape().back();
  if (c.has_input(1)) {
    const HostTensor& len = c.host(1, "dft_length");
    if (len.numel() != 1 || len.int_at(0) <= 0) c.invalid("dft_length must be a positive scalar");
    int64_t want = len.int_at(0);
    std::vector<std::pair<int64_t, int64_t>> widths(size_t(re.ndim()), {0, 0});
    widths.back() = {0, want - n};  // zero-padded or cropped to dft_length
    re = pad(re, widths, 0.0);
    if (im.defined()) im = pad(im, widths, 0.0);
    n = want;
  }
  int64_t bins = onesided ? n / 2 + 1 : n;
  auto [ore, oim] = transform(c.device(), re, im, n, bins, inverse);
  Tensor y = stack({transpose(ore, axis, -1), transpose(oim, axis, -1)}, -1);
  c.set(0, cast(y, x.dtype()));
}

void stft_op(NodeContext& c) {
  Tensor x = c.in(0);
  if (!is_float(x.dtype())) c.unsupported(absl::StrCat("input dtype ", dtype_name(x.dtype())));
  if (x.ndim() != 3 || (x.shape()[2] != 1 && x.shape()[2] != 2)) c.invalid("signal must be [batch, length, 1 or 2]");
  const HostTensor& step_h = c.host(1, "frame_step");
  if (step_h.numel() != 1 || step_h.int_at(0) <= 0) c.invalid("frame_step must be a positive scalar");
  int64_t step = step_h.int_at(0);
  Tensor window = c.has_input(2) ? c.in(2) : Tensor();
  int64_t frame = 0;
  if (c.has_input(3)) {
    const HostTensor& f = c.host(3, "frame_length");
    if (f.numel() != 1 || f.int_at(0) <= 0) c.invalid("frame_length must be a positive scalar");
    frame = f.int_at(0);
  } else if (window.defined()) {
    frame = window.numel();
  } else {
    c.invalid("needs a window or a frame_length");
  }
  if (window.defined() && window.numel() != frame) c.invalid("the window's length differs from frame_length");
  int64_t length = x.shape()[1];
  if (frame > length) c.invalid("frame_length is longer than the signal");
  int64_t frames = (length - frame) / step + 1;
  if (frames > 4096) c.unsupported(absl::StrCat(frames, " frames (frames are sliced at import, up to 4096)"));
  bool onesided = c.attr_int("onesided", 1) != 0;
  Tensor w = x.dtype() == DType::kFloat64 ? x : cast(x, DType::kFloat64);
  std::vector<Tensor> re_frames, im_frames;
  for (int64_t f = 0; f < frames; ++f) {
    Tensor seg = slice(w, 1, f * step, f * step + frame);  // [batch, frame, parts]
    re_frames.push_back(slice(seg, 2, 0, 1).squeeze(2));
    if (x.shape()[2] == 2) im_frames.push_back(slice(seg, 2, 1, 2).squeeze(2));
  }
  Tensor re = stack(re_frames, 1), im = im_frames.empty() ? Tensor() : stack(im_frames, 1);  // [batch, frames, frame]
  if (window.defined()) {
    Tensor win = cast(window, DType::kFloat64).reshape({1, 1, frame});
    re = re * win;
    if (im.defined()) im = im * win;
  }
  if (im.defined() && onesided) c.invalid("a one-sided STFT needs a real signal");
  auto [ore, oim] = transform(c.device(), re, im, frame, onesided ? frame / 2 + 1 : frame, false);
  c.set(0, cast(stack({ore, oim}, -1), x.dtype()));
}

}  // namespace

void register_signal_ops(OpTable& t) {
  t["DFT"] = {dft_op, {"axis", "inverse", "onesided"}, {1}};
  t["STFT"] = {stft_op, {"onesided"}, {1, 3}};
}

}  // namespace kiln::onnx

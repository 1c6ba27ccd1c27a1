// Convolution as one contraction over sliding windows (implicit GEMM): the windows of the padded
// input, grouped as [N, G, C/G * K..., O...], are the rhs of a batched matmul with the weights
// [G, C_out/G, C/G * K...]; the product [N, G, C_out/G, O...] is the NCHW output as it stands.
// A transposed convolution is the convolution of the stride-dilated input with the flipped,
// transposed weights.
#include "kiln/conv.h"

#include "absl/strings/str_cat.h"
#include "frontend/lazy.h"
#include "frontend/window.h"

namespace kiln {
namespace {
using detail::fail;

void check_operands(const std::string& label, const Tensor& x, const Tensor& w) {
  detail::common_device(label, {x, w});
  if (x.ndim() < 3 || x.ndim() > 5)
    fail(label, absl::StrCat("input must be [N, C, spatial...] with 1 to 3 spatial dims, got ", shape_str(x.shape())));
  if (w.ndim() != x.ndim())
    fail(label, absl::StrCat("weight ", shape_str(w.shape()), " must have the rank of input ", shape_str(x.shape())));
  if (x.dtype() == DType::kBool || w.dtype() == DType::kBool) fail(label, "bool operands are not supported");
}

std::vector<int64_t> spatial(const Shape& s) { return std::vector<int64_t>(s.begin() + 2, s.end()); }

}  // namespace

Tensor conv(const Tensor& x, const Tensor& w, const ConvOptions& o) {
  check_operands("conv", x, w);
  int64_t G = o.groups, C = x.shape()[1], Cout = w.shape()[0];
  if (G < 1) fail("conv", absl::StrCat("groups must be positive, got ", G));
  if (C % G != 0 || Cout % G != 0 || w.shape()[1] * G != C)
    fail("conv", absl::StrCat("input ", shape_str(x.shape()), " and weight ", shape_str(w.shape()), " do not match ",
                              G, " group(s): expected weight [C_out, ", C % G == 0 ? C / G : C,
                              ", ...] with C_out divisible by the groups"));
  detail::WindowSpec spec =
      detail::plan_windows("conv", x, spatial(w.shape()), o.strides, o.padding, o.dilation, /*ceil_mode=*/false);
  Tensor win = detail::sliding_windows("conv", x, spec, 0.0);  // [N, C, O..., K...]
  size_t s = spec.kernel.size();
  int64_t N = x.shape()[0], Cg = C / G, Kt = Cg, M = 1;
  Shape grouped = {N, G, Cg};
  std::vector<int64_t> perm = {0, 1, 2};
  for (size_t d = 0; d < s; ++d) {
    grouped.push_back(spec.out[d]);
    M *= spec.out[d];
    Kt *= spec.kernel[d];
    perm.push_back(int64_t(3 + s + d));
  }
  for (size_t d = 0; d < s; ++d) {
    grouped.push_back(spec.kernel[d]);
    perm.push_back(int64_t(3 + d));
  }
  Tensor cols = reshape(permute(reshape(win, grouped), perm), {N, G, Kt, M});
  Tensor y = matmul(reshape(w, {G, Cout / G, Kt}), cols);  // [N, G, C_out/G, M]
  Shape out = {N, Cout};
  out.insert(out.end(), spec.out.begin(), spec.out.end());
  return reshape(y, out);
}

Tensor conv_transpose(const Tensor& x, const Tensor& w, const ConvTransposeOptions& o) {
  const std::string label = "conv_transpose";
  check_operands(label, x, w);
  size_t s = size_t(x.ndim() - 2);
  int64_t G = o.groups, Cin = x.shape()[1];
  if (G < 1) fail(label, absl::StrCat("groups must be positive, got ", G));
  if (w.shape()[0] != Cin || Cin % G != 0)
    fail(label, absl::StrCat("input ", shape_str(x.shape()), " and weight ", shape_str(w.shape()), " do not match ",
                             G, " group(s): expected weight [", Cin, ", C_out / groups, ...] with ", Cin,
                             " divisible by the groups"));
  auto list = [&](const char* what, const std::vector<int64_t>& v, int64_t fallback, int64_t minimum) {
    std::vector<int64_t> r = v.empty() ? std::vector<int64_t>(s, fallback) : v;
    if (r.size() != s) fail(label, absl::StrCat(what, " has ", r.size(), " values for ", s, " spatial dims"));
    for (int64_t e : r)
      if (e < minimum) fail(label, absl::StrCat(what, " ", shape_str(r), " must be at least ", minimum));
    return r;
  };
  std::vector<int64_t> st = list("strides", o.strides, 1, 1), dil = list("dilation", o.dilation, 1, 1);
  std::vector<int64_t> op = list("output_padding", o.output_padding, 0, 0);
  std::vector<std::pair<int64_t, int64_t>> pads = o.padding;
  if (pads.empty()) pads.assign(s, {0, 0});
  if (pads.size() != s) fail(label, absl::StrCat("padding has ", pads.size(), " pairs for ", s, " spatial dims"));
  for (auto [lo, hi] : pads)
    if (lo < 0 || hi < 0) fail(label, "padding must be non-negative");
  if (!o.output_size.empty() && !o.output_padding.empty())
    fail(label, "give output_size or output_padding, not both");
  std::vector<int64_t> out_size;
  for (size_t d = 0; d < s; ++d) {
    int64_t in = x.shape()[d + 2], K = w.shape()[d + 2];
    int64_t smallest = (in - 1) * st[d] - pads[d].first - pads[d].second + dil[d] * (K - 1) + 1;
    if (!o.output_size.empty()) {
      if (o.output_size.size() != s)
        fail(label, absl::StrCat("output_size has ", o.output_size.size(), " values for ", s, " spatial dims"));
      op[d] = o.output_size[d] - smallest;
    }
    if (op[d] < 0 || op[d] >= std::max(st[d], dil[d]))
      fail(label, absl::StrCat("output padding ", op[d], " of spatial dim ", d, " must be in [0, max(stride, dilation))"
                               , o.output_size.empty() ? "" : absl::StrCat(" (output_size ", o.output_size[d], ")")));
    if (smallest + op[d] < 1)
      fail(label, absl::StrCat("padding leaves no output along spatial dim ", d, " of ", shape_str(x.shape())));
    out_size.push_back(smallest + op[d]);
  }
  // The stride-dilated input: x[.., i] at i * stride, zeros between ([.., L, 1] padded to
  // [.., L, stride], flattened, the trailing zeros cut off).
  int64_t N = x.shape()[0];
  Shape split = {N, Cin}, merged = {N, Cin};
  std::vector<std::pair<int64_t, int64_t>> gaps = {{0, 0}, {0, 0}};
  for (size_t d = 0; d < s; ++d) {
    int64_t in = x.shape()[d + 2];
    split.insert(split.end(), {in, 1});
    merged.push_back(in * st[d]);
    gaps.push_back({0, 0});
    gaps.push_back({0, st[d] - 1});
  }
  Tensor xd = reshape(pad(reshape(x, split), gaps), merged);
  for (size_t d = 0; d < s; ++d) xd = slice(xd, int64_t(d + 2), 0, (x.shape()[d + 2] - 1) * st[d] + 1);
  // Full padding (dilation * (K - 1)) less the removed padding; negative widths crop.
  std::vector<std::pair<int64_t, int64_t>> widths = {{0, 0}, {0, 0}};
  for (size_t d = 0; d < s; ++d) {
    int64_t full = dil[d] * (w.shape()[d + 2] - 1);
    widths.push_back({full - pads[d].first, full - pads[d].second + op[d]});
  }
  xd = pad(xd, widths);
  // Weights [C_in, C_out/G, K...] -> [C_out, C_in/G, K...], flipped along every spatial dim.
  int64_t Cog = w.shape()[1], Cig = Cin / G;
  Shape wg = {G, Cig, Cog}, wc = {G * Cog, Cig};
  std::vector<int64_t> perm = {0, 2, 1};
  for (size_t d = 0; d < s; ++d) {
    wg.push_back(w.shape()[d + 2]);
    wc.push_back(w.shape()[d + 2]);
    perm.push_back(int64_t(d + 3));
  }
  Tensor wt = reshape(permute(reshape(w, wg), perm), wc);
  for (size_t d = 0; d < s; ++d) wt = slice(wt, int64_t(d + 2), -1, -wt.shape()[d + 2] - 1, -1);
  ConvOptions co;
  co.dilation = dil;
  co.groups = G;
  Tensor y = conv(xd, wt, co);
  Shape want = {N, G * Cog};
  want.insert(want.end(), out_size.begin(), out_size.end());
  if (y.shape() != want)
    fail(label, absl::StrCat("internal: output ", shape_str(y.shape()), " is not ", shape_str(want)));
  return y;
}

}  // namespace kiln

// Convolution and pooling: Conv, ConvInteger, ConvTranspose, MaxPool, AveragePool, LpPool, through
// kiln::conv, conv_transpose and the pools (kiln/conv.h). This file resolves ONNX's padding
// attributes (auto_pad, pads, output_shape) into explicit (before, after) pairs.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "frontend/onnx/ops.h"
#include "kiln/conv.h"

namespace kiln::onnx {
namespace {

using Pads = std::vector<std::pair<int64_t, int64_t>>;

int64_t floor_div(int64_t a, int64_t b) { return a / b - ((a % b != 0) && ((a < 0) != (b < 0))); }

void require_spatial(NodeContext& c) {
  if (c.rank(0) < 3 || c.rank(0) > 5)
    c.unsupported(absl::StrCat("input of rank ", c.rank(0), " (kiln convolves and pools 1 to 3 spatial dims)"));
}

// A per-spatial-dim attribute (strides, dilations, kernel_shape) with its default.
std::vector<int64_t> spatial_attr(NodeContext& c, const std::string& name, size_t s, int64_t fallback) {
  std::vector<int64_t> v = c.attr_ints(name, std::vector<int64_t>(s, fallback));
  if (v.size() != s) c.invalid(absl::StrCat(name, " has ", v.size(), " values for ", s, " spatial dims"));
  for (int64_t x : v)
    if (x < 1) c.invalid(absl::StrCat(name, " must be positive"));
  return v;
}

// Explicit pads ([begin..., end...]) or auto_pad's: SAME_* pads so that out = ceil(in / stride),
// the odd cell after (UPPER) or before (LOWER); VALID none.
Pads resolve_pads(NodeContext& c, const Shape& in, const std::vector<int64_t>& kernel,
                  const std::vector<int64_t>& strides, const std::vector<int64_t>& dilations) {
  size_t s = kernel.size();
  std::string mode = c.attr_string("auto_pad", "NOTSET");
  Pads p(s, {0, 0});
  if (mode == "NOTSET") {
    std::vector<int64_t> v = c.attr_ints("pads", std::vector<int64_t>(2 * s, 0));
    if (v.size() != 2 * s) c.invalid(absl::StrCat("pads has ", v.size(), " values for ", s, " spatial dims"));
    for (size_t d = 0; d < s; ++d) {
      if (v[d] < 0 || v[s + d] < 0) c.unsupported("negative pads");
      p[d] = {v[d], v[s + d]};
    }
    return p;
  }
  if (mode == "VALID") return p;
  if (mode != "SAME_UPPER" && mode != "SAME_LOWER") c.invalid(absl::StrCat("unknown auto_pad '", mode, "'"));
  for (size_t d = 0; d < s; ++d) {
    int64_t n = in[d + 2], out = (n + strides[d] - 1) / strides[d];
    int64_t total = std::max<int64_t>(0, (out - 1) * strides[d] + dilations[d] * (kernel[d] - 1) + 1 - n);
    int64_t small = total / 2;
    p[d] = mode == "SAME_UPPER" ? std::make_pair(small, total - small) : std::make_pair(total - small, small);
  }
  return p;
}

void add_bias(NodeContext& c, Tensor* y) {
  if (!c.has_input(2)) return;
  Tensor b = c.in(2);
  int64_t C = y->shape()[1];
  if (b.ndim() != 1 || b.shape()[0] != C)
    c.invalid(absl::StrCat("bias has shape ", shape_str(b.shape()), "; expected [", C, "]"));
  Shape s(y->shape().size(), 1);
  s[1] = C;
  *y = *y + reshape(cast(b, y->dtype()), s);
}

void check_kernel_shape(NodeContext& c, const Shape& w) {
  if (!c.has_attr("kernel_shape")) return;
  std::vector<int64_t> k = c.attr_ints("kernel_shape");
  if (k != std::vector<int64_t>(w.begin() + 2, w.end()))
    c.invalid(absl::StrCat("kernel_shape ", shape_str(k), " does not match the weight ", shape_str(w)));
}

// The checks Conv, ConvInteger and ConvTranspose share; returns the number of spatial dims.
size_t check_conv_operands(NodeContext& c, bool integer = false) {
  require_spatial(c);
  auto fits = [&](DType t) { return integer ? t == DType::kInt8 || t == DType::kUInt8 : is_float(t); };
  if (!fits(c.dtype(0)) || !fits(c.dtype(1)) || (!integer && c.dtype(1) != c.dtype(0)))
    c.unsupported(absl::StrCat("input dtype ", dtype_name(c.dtype(0)), " with weight dtype ", dtype_name(c.dtype(1)),
                               integer ? " (ConvInteger takes int8 and uint8)" : " (kiln convolves floats of one dtype)"));
  if (c.rank(1) != c.rank(0)) c.invalid(absl::StrCat("weight of rank ", c.rank(1), " for input of rank ", c.rank(0)));
  check_kernel_shape(c, c.shape(1));
  return size_t(c.rank(0) - 2);
}

// ConvInteger: (x - x_zero_point) convolved with (w - w_zero_point) in int32 (zero points: a
// scalar for x; a scalar or one per output channel for w). Padding is zero after the shift, as
// padding with the zero point before it.
Tensor shifted(NodeContext& c, size_t i, size_t zp, bool per_channel) {
  Tensor v = cast(c.in(i), DType::kInt32);
  if (!c.has_input(zp)) return v;
  Tensor z = cast(c.in(zp), DType::kInt32);
  if (z.numel() != 1 && !(per_channel && z.ndim() == 1 && z.shape()[0] == c.shape(i)[0]))
    c.unsupported(absl::StrCat("zero point of shape ", shape_str(z.shape()), " for input ", i));
  Shape s(size_t(c.rank(i)), 1);
  if (z.numel() != 1) s[0] = z.shape()[0];
  return v - reshape(z, s);
}

void conv_op(NodeContext& c) {
  bool integer = c.node().op_type == "ConvInteger";
  size_t s = check_conv_operands(c, integer);
  ConvOptions o;
  o.strides = spatial_attr(c, "strides", s, 1);
  o.dilation = spatial_attr(c, "dilations", s, 1);
  o.groups = c.attr_int("group", 1);
  const Shape& w = c.shape(1);
  o.padding = resolve_pads(c, c.shape(0), std::vector<int64_t>(w.begin() + 2, w.end()), o.strides, o.dilation);
  if (integer) {
    c.set(0, conv(shifted(c, 0, 2, false), shifted(c, 1, 3, true), o));
    return;
  }
  Tensor y = conv(c.in(0), c.in(1), o);
  add_bias(c, &y);
  c.set(0, y);
}

void conv_transpose_op(NodeContext& c) {
  size_t s = check_conv_operands(c);
  const Shape& x = c.shape(0);
  const Shape& w = c.shape(1);
  ConvTransposeOptions o;
  o.strides = spatial_attr(c, "strides", s, 1);
  o.dilation = spatial_attr(c, "dilations", s, 1);
  o.groups = c.attr_int("group", 1);
  std::vector<int64_t> op = c.attr_ints("output_padding", std::vector<int64_t>(s, 0));
  if (op.size() != s) c.invalid(absl::StrCat("output_padding has ", op.size(), " values for ", s, " spatial dims"));
  std::string mode = c.attr_string("auto_pad", "NOTSET");
  if (c.has_attr("output_shape") || mode == "SAME_UPPER" || mode == "SAME_LOWER") {
    // The pads follow from the output size: total = stride * (in - 1) + output_padding +
    // dilated kernel - out, split as ONNX says (the odd cell at the start unless SAME_UPPER).
    std::vector<int64_t> out = c.attr_ints("output_shape");
    if (out.size() == s + 2) out.erase(out.begin(), out.begin() + 2);
    if (out.empty())
      for (size_t d = 0; d < s; ++d) out.push_back(x[d + 2] * o.strides[d]);
    if (out.size() != s) c.invalid(absl::StrCat("output_shape has ", out.size(), " values for ", s, " spatial dims"));
    o.padding.assign(s, {0, 0});
    for (size_t d = 0; d < s; ++d) {
      int64_t total = o.strides[d] * (x[d + 2] - 1) + op[d] + o.dilation[d] * (w[d + 2] - 1) + 1 - out[d];
      int64_t half = floor_div(total, 2);
      int64_t lo = mode == "SAME_UPPER" ? half : total - half, hi = total - lo;
      // A negative end pad is output padding (more outputs at the end); a negative start pad
      // would shift the output, which kiln's transposed convolution does not express.
      if (lo < 0) c.unsupported(absl::StrCat("output_shape ", shape_str(out), " that needs a negative start pad"));
      if (hi < 0) {
        op[d] += -hi;
        hi = 0;
      }
      o.padding[d] = {lo, hi};
    }
  } else {
    o.padding = resolve_pads(c, x, std::vector<int64_t>(w.begin() + 2, w.end()), o.strides, o.dilation);
  }
  for (size_t d = 0; d < s; ++d)
    if (op[d] < 0 || op[d] >= std::max(o.strides[d], o.dilation[d]))
      c.unsupported(absl::StrCat("output padding ", op[d], " (from output_padding or output_shape) outside [0, ",
                                 "max(stride, dilation))"));
  o.output_padding = op;
  Tensor y = conv_transpose(c.in(0), c.in(1), o);
  add_bias(c, &y);
  c.set(0, y);
}

PoolOptions pool_options(NodeContext& c) {
  require_spatial(c);
  size_t s = size_t(c.rank(0) - 2);
  if (!c.has_attr("kernel_shape")) c.invalid("kernel_shape is required");
  PoolOptions o;
  o.kernel = spatial_attr(c, "kernel_shape", s, 1);
  o.strides = spatial_attr(c, "strides", s, 1);
  o.dilation = spatial_attr(c, "dilations", s, 1);
  o.ceil_mode = c.attr_int("ceil_mode", 0) != 0;
  o.padding = resolve_pads(c, c.shape(0), o.kernel, o.strides, o.dilation);
  return o;
}

void max_pool_op(NodeContext& c) {
  if (!is_float(c.dtype(0)) && c.dtype(0) != DType::kInt8 && c.dtype(0) != DType::kUInt8)
    c.unsupported(absl::StrCat("dtype ", dtype_name(c.dtype(0))));
  PoolOptions o = pool_options(c);
  c.set(0, max_pool(c.in(0), o));
  // storage_order numbers the Indices output's spatial dims row- (0) or column-major (1).
  int64_t order = c.attr_int("storage_order", 0);
  if (order != 0 && order != 1) c.invalid(absl::StrCat("storage_order must be 0 or 1, got ", order));
  if (c.wants_output(1)) c.set(1, max_pool_indices(c.in(0), o, order == 1));
}

void average_pool_op(NodeContext& c) {
  if (!is_float(c.dtype(0))) c.unsupported(absl::StrCat("dtype ", dtype_name(c.dtype(0))));
  PoolOptions o = pool_options(c);
  o.count_include_pad = c.attr_int("count_include_pad", 0) != 0;
  c.set(0, avg_pool(c.in(0), o));
}

void lp_pool_op(NodeContext& c) {
  if (!is_float(c.dtype(0))) c.unsupported(absl::StrCat("dtype ", dtype_name(c.dtype(0))));
  double p = c.opset() < 2 ? c.attr_float("p", 2.0) : double(c.attr_int("p", 2));  // a float in LpPool-1
  if (!(p > 0) || std::isinf(p)) c.invalid(absl::StrCat("p must be positive, got ", p));
  c.set(0, lp_pool(c.in(0), p, pool_options(c)));
}

// MaxUnpool: zeros of the unpooled shape with X's values put at the flat positions I holds
// (MaxPool's Indices, numbered over the whole tensor). One scatter into the flattened output:
// exactly the spec's meaning whatever the indices are (MaxPool's are distinct; ONNX leaves
// duplicates unspecified and kiln's scatter keeps the last; an index outside the output is
// dropped). The unpooled spatial size is (in - 1) * stride + kernel - pads; a larger
// output_shape holds that result in its leading corner, zeros after it (as ONNX's reference).
void max_unpool_op(NodeContext& c) {
  require_spatial(c);
  if (!is_float(c.dtype(0))) c.unsupported(absl::StrCat("dtype ", dtype_name(c.dtype(0))));
  c.require_dtype(1, {DType::kInt64});
  const Shape& x = c.shape(0);
  if (c.shape(1) != x)
    c.invalid(absl::StrCat("the indices have shape ", shape_str(c.shape(1)), "; X has ", shape_str(x)));
  const size_t s = x.size() - 2;
  if (!c.has_attr("kernel_shape")) c.invalid("kernel_shape is required");
  std::vector<int64_t> kernel = spatial_attr(c, "kernel_shape", s, 1), strides = spatial_attr(c, "strides", s, 1);
  std::vector<int64_t> pads = c.attr_ints("pads", std::vector<int64_t>(2 * s, 0));
  if (pads.size() != 2 * s) c.invalid(absl::StrCat("pads has ", pads.size(), " values for ", s, " spatial dims"));
  for (int64_t p : pads)
    if (p < 0) c.invalid("pads must not be negative");
  Shape unpooled = {x[0], x[1]};
  for (size_t d = 0; d < s; ++d) unpooled.push_back((x[d + 2] - 1) * strides[d] + kernel[d] - pads[d] - pads[d + s]);
  for (int64_t d : unpooled)
    if (d < 1) c.invalid(absl::StrCat("the unpooled shape ", shape_str(unpooled), " is empty"));
  const int64_t n = shape_numel(x);
  Tensor flat = scatter(zeros({shape_numel(unpooled)}, c.dtype(0), c.device()), 0, reshape(c.in(1), {n}),
                        reshape(c.in(0), {n}));
  Tensor y = reshape(flat, unpooled);
  if (c.has_input(2)) {
    Shape out = c.host_ints(2, "output_shape");
    bool fits = out.size() == x.size();
    std::vector<std::pair<int64_t, int64_t>> widths;
    for (size_t d = 0; fits && d < out.size(); ++d) {
      fits = out[d] >= unpooled[d] && (d >= 2 || out[d] == unpooled[d]);
      widths.push_back({0, out[d] - unpooled[d]});
    }
    if (!fits)
      c.invalid(absl::StrCat("output_shape ", shape_str(out), " cannot hold the unpooled ", shape_str(unpooled)));
    y = pad(y, widths);
  }
  c.set(0, y);
}

}  // namespace

void register_conv_ops(OpTable& t) {
  t["MaxUnpool"] = {max_unpool_op, {"kernel_shape", "pads", "strides"}, {2}};  // output_shape is read on the host
  t["Conv"] = {conv_op, {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"}, {}};
  t["ConvInteger"] = {conv_op, {"auto_pad", "dilations", "group", "kernel_shape", "pads", "strides"}, {}};
  t["ConvTranspose"] = {conv_transpose_op,
                        {"auto_pad", "dilations", "group", "kernel_shape", "output_padding", "output_shape", "pads",
                         "strides"},
                        {}};
  t["MaxPool"] = {max_pool_op,
                  {"auto_pad", "ceil_mode", "dilations", "kernel_shape", "pads", "storage_order", "strides"},
                  {}};
  t["AveragePool"] = {average_pool_op,
                      {"auto_pad", "ceil_mode", "count_include_pad", "dilations", "kernel_shape", "pads", "strides"},
                      {}};
  t["LpPool"] = {lp_pool_op, {"auto_pad", "ceil_mode", "dilations", "kernel_shape", "p", "pads", "strides"}, {}};
}

}  // namespace kiln::onnx

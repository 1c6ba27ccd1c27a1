// Movement and shape ops: Reshape, Transpose, Flatten, Squeeze, Unsqueeze, Expand, Slice, Pad,
// Concat, Split, Tile, Gather, DepthToSpace, SpaceToDepth, Shape, Size. They
// become kiln views (no copies); their shape operands must be known at import (ops.h).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "frontend/onnx/ops.h"

namespace kiln::onnx {
namespace {

std::vector<int64_t> normalized_axes(NodeContext& c, const std::vector<int64_t>& axes, int64_t rank) {
  std::vector<int64_t> r;
  for (int64_t a : axes) {
    int64_t n = c.axis(a, rank);
    if (std::find(r.begin(), r.end(), n) != r.end()) c.invalid(absl::StrCat("axis ", a, " appears twice"));
    r.push_back(n);
  }
  return r;
}

void reshape_op(NodeContext& c) {
  Tensor x = c.in(0);
  std::vector<int64_t> shape = c.host_ints(1, "shape");
  bool allowzero = c.attr_int("allowzero", 0) != 0;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == 0 && !allowzero) {
      if (int64_t(d) >= x.ndim()) c.invalid(absl::StrCat("shape ", shape_str(shape), " copies dimension ", d, " the input lacks"));
      shape[d] = x.shape()[d];
    }
    if (shape[d] < -1) c.invalid(absl::StrCat("invalid dimension ", shape[d], " in shape ", shape_str(shape)));
  }
  c.set(0, reshape(x, shape));
}

void transpose_op(NodeContext& c) {
  Tensor x = c.in(0);
  std::vector<int64_t> perm = c.attr_ints("perm");
  if (perm.empty())
    for (int64_t d = x.ndim() - 1; d >= 0; --d) perm.push_back(d);
  if (int64_t(perm.size()) != x.ndim()) c.invalid(absl::StrCat("perm ", shape_str(perm), " does not match rank ", x.ndim()));
  c.set(0, permute(x, perm));
}

void flatten_op(NodeContext& c) {
  Tensor x = c.in(0);
  int64_t r = x.ndim();
  int64_t axis = c.attr_int("axis", 1);
  if (axis < -r || axis > r) c.invalid(absl::StrCat("axis ", axis, " is out of range for rank ", r));
  if (axis < 0) axis += r;
  int64_t a = 1, b = 1;
  for (int64_t d = 0; d < r; ++d) (d < axis ? a : b) *= x.shape()[size_t(d)];
  c.set(0, reshape(x, {a, b}));
}

void squeeze_op(NodeContext& c) {
  Tensor x = c.in(0);
  Shape out;
  std::optional<std::vector<int64_t>> given = c.moved_operand(1, "axes");
  if (!given) {
    for (int64_t d : x.shape())
      if (d != 1) out.push_back(d);
  } else {
    std::vector<int64_t> axes = normalized_axes(c, *given, x.ndim());
    for (int64_t d = 0; d < x.ndim(); ++d) {
      bool drop = std::find(axes.begin(), axes.end(), d) != axes.end();
      if (drop && x.shape()[size_t(d)] != 1) c.invalid(absl::StrCat("cannot squeeze axis ", d, " of size ", x.shape()[size_t(d)]));
      if (!drop) out.push_back(x.shape()[size_t(d)]);
    }
  }
  c.set(0, reshape(x, out));
}

void unsqueeze_op(NodeContext& c) {
  Tensor x = c.in(0);
  std::optional<std::vector<int64_t>> operand = c.moved_operand(1, "axes");
  if (!operand) c.invalid("axes are required");
  std::vector<int64_t> given = *operand;
  int64_t out_rank = x.ndim() + int64_t(given.size());
  std::vector<int64_t> axes = normalized_axes(c, given, out_rank);
  Shape out;
  size_t k = 0;
  for (int64_t d = 0; d < out_rank; ++d) {
    if (std::find(axes.begin(), axes.end(), d) != axes.end()) out.push_back(1);
    else out.push_back(x.shape()[k++]);
  }
  c.set(0, reshape(x, out));
}

void expand_op(NodeContext& c) {
  Tensor x = c.in(0);
  std::vector<int64_t> shape = c.host_ints(1, "shape");
  size_t rank = std::max(shape.size(), size_t(x.ndim()));
  Shape out(rank);
  for (size_t i = 0; i < rank; ++i) {
    int64_t a = i + x.ndim() >= rank ? x.shape()[i + x.ndim() - rank] : 1;
    int64_t b = i + shape.size() >= rank ? shape[i + shape.size() - rank] : 1;
    if (a != b && a != 1 && b != 1)
      c.invalid(absl::StrCat("cannot expand ", shape_str(x.shape()), " to ", shape_str(shape)));
    out[i] = a == 1 ? b : a;
  }
  if (int64_t(rank) > x.ndim()) {
    Shape padded(rank - size_t(x.ndim()), 1);
    padded.insert(padded.end(), x.shape().begin(), x.shape().end());
    x = reshape(x, padded);
  }
  c.set(0, expand(x, out));
}

void slice_op(NodeContext& c) {
  Tensor x = c.in(0);
  std::vector<int64_t> starts = c.host_ints(1, "starts"), ends = c.host_ints(2, "ends");
  if (starts.size() != ends.size()) c.invalid("starts and ends differ in length");
  std::vector<int64_t> axes, steps(starts.size(), 1);
  if (c.has_input(3)) axes = c.host_ints(3, "axes");
  else
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(int64_t(i));
  if (c.has_input(4)) steps = c.host_ints(4, "steps");
  if (axes.size() != starts.size() || steps.size() != starts.size()) c.invalid("starts, ends, axes and steps differ in length");
  axes = normalized_axes(c, axes, x.ndim());
  for (size_t i = 0; i < axes.size(); ++i) {
    int64_t n = x.shape()[size_t(axes[i])], step = steps[i];
    if (step == 0) c.invalid("a step is 0");
    int64_t s = starts[i], e = ends[i];
    if (s < 0) s += n;
    if (e < 0) e += n;
    if (step > 0) {
      s = std::clamp<int64_t>(s, 0, n);
      e = std::clamp<int64_t>(e, 0, n);
    } else {
      if (n == 0) {
        x = slice(x, axes[i], 0, 0, 1);
        continue;
      }
      s = std::clamp<int64_t>(s, 0, n - 1);
      e = std::clamp<int64_t>(e, -1, n - 1);
      if (e < 0) e = -n - 1;  // kiln's slice counts a negative stop from the end: this one means "before 0"
    }
    x = slice(x, axes[i], s, e, step);
  }
  c.set(0, x);
}

// Edge and reflect padding along one axis, from slices of the input.
Tensor pad_copies(NodeContext& c, const Tensor& x, int64_t axis, int64_t lo, int64_t hi, bool reflect) {
  int64_t n = x.shape()[size_t(axis)];
  if (n == 0) c.invalid("cannot pad an empty axis by edge or reflect");
  if (reflect && (lo > n - 1 || hi > n - 1)) c.unsupported(absl::StrCat("reflect pads wider than the axis (", n, ") minus one"));
  std::vector<Tensor> parts;
  auto repeat = [&](const Tensor& one, int64_t count) {
    Shape s = one.shape();
    s[size_t(axis)] = count;
    return expand(one, s);
  };
  if (lo > 0) parts.push_back(reflect ? slice(x, axis, lo, 0, -1) : repeat(slice(x, axis, 0, 1), lo));
  parts.push_back(x);
  int64_t stop = n - 2 - hi < 0 ? -n - 1 : n - 2 - hi;  // a negative stop would count from the end
  if (hi > 0) parts.push_back(reflect ? slice(x, axis, n - 2, stop, -1) : repeat(slice(x, axis, n - 1, n), hi));
  return parts.size() == 1 ? x : concat(parts, axis);
}

void pad_op(NodeContext& c) {
  Tensor x = c.in(0);
  std::vector<int64_t> pads = c.host_ints(1, "pads");
  int64_t r = x.ndim();
  if (int64_t(pads.size()) != 2 * r) c.invalid(absl::StrCat("pads has ", pads.size(), " values for rank ", r));
  std::string mode = c.attr_string("mode", "constant");
  if (mode != "constant" && mode != "edge" && mode != "reflect") c.unsupported(absl::StrCat("mode '", mode, "'"));
  std::vector<std::pair<int64_t, int64_t>> widths;
  for (int64_t d = 0; d < r; ++d) widths.push_back({pads[size_t(d)], pads[size_t(d + r)]});
  if (mode == "constant") {
    Tensor padded = pad(x, widths, 0.0);
    if (c.has_input(2)) {
      // The value may be computed at run time: padded positions take it through a mask.
      Tensor mask = pad(ones(x.shape(), DType::kBool, x.device()), widths, 0.0);
      Tensor v = c.in(2);
      if (v.numel() != 1) c.invalid("constant_value must hold one value");
      padded = where(mask, padded, cast(v.reshape({}), x.dtype()));
    }
    c.set(0, padded);
    return;
  }
  // Negative widths crop first; the rest copies edges or reflections.
  std::vector<std::pair<int64_t, int64_t>> crop;
  for (auto [lo, hi] : widths) crop.push_back({std::min<int64_t>(lo, 0), std::min<int64_t>(hi, 0)});
  x = pad(x, crop, 0.0);
  for (int64_t d = 0; d < r; ++d)
    x = pad_copies(c, x, d, std::max<int64_t>(widths[size_t(d)].first, 0), std::max<int64_t>(widths[size_t(d)].second, 0), mode == "reflect");
  c.set(0, x);
}

void concat_op(NodeContext& c) {
  if (c.num_inputs() == 0) c.invalid("needs at least one input");
  std::vector<Tensor> xs;
  for (size_t i = 0; i < c.num_inputs(); ++i) xs.push_back(c.in(i));
  if (!c.has_attr("axis")) c.invalid("attribute 'axis' is required");
  int64_t axis = c.axis(c.attr_int("axis", 0), xs[0].ndim());
  // Empty inputs along the axis add nothing (kiln's concat may not take them).
  std::vector<Tensor> kept;
  for (const Tensor& t : xs)
    if (t.ndim() != xs[0].ndim()) c.invalid("inputs differ in rank");
    else if (t.shape()[size_t(axis)] != 0) kept.push_back(t);
  if (kept.empty()) kept.push_back(xs[0]);
  c.set(0, kept.size() == 1 ? kept[0] : concat(kept, axis));
}

void split_op(NodeContext& c) {
  Tensor x = c.in(0);
  int64_t axis = c.axis(c.attr_int("axis", 0), x.ndim());
  int64_t n = x.shape()[size_t(axis)];
  size_t outs = c.num_outputs();
  std::vector<int64_t> sizes;
  if (std::optional<std::vector<int64_t>> split = c.moved_operand(1, "split")) {
    sizes = *split;
    if (sizes.size() != outs) c.invalid(absl::StrCat("split has ", sizes.size(), " sizes for ", outs, " outputs"));
  } else {
    if (outs == 0 || n % int64_t(outs) != 0) c.invalid(absl::StrCat("axis of size ", n, " does not split evenly into ", outs, " outputs"));
    sizes.assign(outs, n / int64_t(outs));
  }
  int64_t total = 0;
  for (int64_t s : sizes) {
    if (s < 0) c.invalid("a split size is negative");
    total += s;
  }
  if (total != n) c.invalid(absl::StrCat("split sizes add up to ", total, ", the axis has ", n));
  int64_t at = 0;
  for (size_t i = 0; i < outs; ++i) {
    c.set(i, slice(x, axis, at, at + sizes[i]));
    at += sizes[i];
  }
}

void tile_op(NodeContext& c) {
  Tensor x = c.in(0);
  std::vector<int64_t> reps = c.host_ints(1, "repeats");
  if (int64_t(reps.size()) != x.ndim()) c.invalid(absl::StrCat("repeats has ", reps.size(), " values for rank ", x.ndim()));
  Shape inter, expanded, out;
  for (int64_t d = 0; d < x.ndim(); ++d) {
    if (reps[size_t(d)] < 0) c.invalid("a repeat count is negative");
    inter.push_back(1);
    inter.push_back(x.shape()[size_t(d)]);
    expanded.push_back(reps[size_t(d)]);
    expanded.push_back(x.shape()[size_t(d)]);
    out.push_back(reps[size_t(d)] * x.shape()[size_t(d)]);
  }
  c.set(0, reshape(expand(reshape(x, inter), expanded), out));
}

// Gather along an axis: a few indices known at import become slices (views that fuse with the
// producer of the data); other indices, run-time ones above all, are kiln's gather.
void gather_op(NodeContext& c) {
  Tensor x = c.in(0);
  int64_t axis = c.axis(c.attr_int("axis", 0), x.ndim());
  c.require_dtype(1, {DType::kInt32, DType::kInt64});
  int64_t n = x.shape()[size_t(axis)];
  if (!c.is_host(1)) {
    c.set(0, gather(x, axis, c.in(1)));
    return;
  }
  // Indices known at import are checked here (ONNX calls one out of range an error).
  const HostTensor& idx = c.host(1, "indices");
  for (int64_t k = 0; k < idx.numel(); ++k)
    if (idx.int_at(k) < -n || idx.int_at(k) >= n)
      c.invalid(absl::StrCat("index ", idx.int_at(k), " is out of range for an axis of size ", n));
  if (idx.numel() > 8) {
    c.set(0, gather(x, axis, c.in(1)));
    return;
  }
  std::vector<Tensor> parts;
  for (int64_t k = 0; k < idx.numel(); ++k) {
    int64_t i = idx.int_at(k);
    if (i < 0) i += n;
    parts.push_back(slice(x, axis, i, i + 1));
  }
  Shape out(x.shape().begin(), x.shape().begin() + axis);
  out.insert(out.end(), idx.shape.begin(), idx.shape.end());
  out.insert(out.end(), x.shape().begin() + axis + 1, x.shape().end());
  if (parts.empty()) {
    c.set(0, zeros(out, x.dtype(), x.device()));
    return;
  }
  c.set(0, reshape(parts.size() == 1 ? parts[0] : concat(parts, axis), out));
}

void depth_to_space(NodeContext& c, bool to_space) {
  Tensor x = c.in(0);
  if (x.ndim() != 4) c.invalid("input must be 4-D (N, C, H, W)");
  int64_t b = c.attr_int("blocksize", 0);
  if (b <= 0) c.invalid("blocksize must be positive");
  int64_t N = x.shape()[0], C = x.shape()[1], H = x.shape()[2], W = x.shape()[3];
  if (to_space) {
    if (C % (b * b)) c.invalid("channels must be a multiple of blocksize^2");
    bool crd = c.attr_string("mode", "DCR") == "CRD";
    Tensor t = crd ? permute(reshape(x, {N, C / (b * b), b, b, H, W}), {0, 1, 4, 2, 5, 3})
                   : permute(reshape(x, {N, b, b, C / (b * b), H, W}), {0, 3, 4, 1, 5, 2});
    c.set(0, reshape(t, {N, C / (b * b), H * b, W * b}));
  } else {
    if (H % b || W % b) c.invalid("height and width must be multiples of blocksize");
    Tensor t = permute(reshape(x, {N, C, H / b, b, W / b, b}), {0, 3, 5, 1, 2, 4});
    c.set(0, reshape(t, {N, C * b * b, H / b, W / b}));
  }
}

void shape_op(NodeContext& c) {
  const Shape& s = c.shape(0);
  int64_t r = int64_t(s.size());
  int64_t start = c.attr_int("start", 0), end = c.attr_int("end", r);
  if (start < 0) start += r;
  if (end < 0) end += r;
  start = std::clamp<int64_t>(start, 0, r);
  end = std::clamp<int64_t>(end, 0, r);
  std::vector<int64_t> dims;
  for (int64_t d = start; d < end; ++d) dims.push_back(s[size_t(d)]);
  c.set_host(0, HostTensor::from_ints(dims, {int64_t(dims.size())}));
}

}  // namespace

void register_shape_ops(OpTable& t) {
  t["Reshape"] = {reshape_op, {"allowzero"}, {1}};
  t["Transpose"] = {transpose_op, {"perm"}, {}};
  t["Flatten"] = {flatten_op, {"axis"}, {}};
  t["Squeeze"] = {squeeze_op, {"axes"}, {1}};
  t["Unsqueeze"] = {unsqueeze_op, {"axes"}, {1}};
  t["Expand"] = {expand_op, {}, {1}};
  t["Slice"] = {slice_op, {}, {1, 2, 3, 4}};
  t["Pad"] = {pad_op, {"mode"}, {1}};
  t["Concat"] = {concat_op, {"axis"}, {}};
  t["Split"] = {split_op, {"axis", "split"}, {1}};
  t["Tile"] = {tile_op, {}, {1}};
  t["Gather"] = {gather_op, {"axis"}, {}};
  t["DepthToSpace"] = {[](NodeContext& c) { depth_to_space(c, true); }, {"blocksize", "mode"}, {}};
  t["SpaceToDepth"] = {[](NodeContext& c) { depth_to_space(c, false); }, {"blocksize"}, {}};
  t["Shape"] = {shape_op, {"start", "end"}, {}};
  t["Size"] = {[](NodeContext& c) { c.set_host(0, HostTensor::from_ints({shape_numel(c.shape(0))}, {})); }, {}, {}};
}

}  // namespace kiln::onnx

// Network ops: MatMul, Gemm, Softmax/LogSoftmax/Hardmax, the normalizations (Layer, Batch in
// inference, Instance, Lp, MeanVariance), global pooling (a mean or max over the spatial axes)
// and CumSum (a matmul with a triangular mask). Normalizations of f16/bf16 inputs compute their
// statistics in f32, as ONNX's stash_type does.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "frontend/onnx/ops.h"

namespace kiln::onnx {
namespace {

std::vector<int64_t> range_axes(int64_t from, int64_t to) {
  std::vector<int64_t> r;
  for (int64_t d = from; d < to; ++d) r.push_back(d);
  return r;
}

Tensor stats_dtype(const Tensor& x) {
  return x.dtype() == DType::kFloat16 || x.dtype() == DType::kBFloat16 ? cast(x, DType::kFloat32) : x;
}

void require_float(NodeContext& c, size_t i) {
  if (!is_float(c.dtype(i))) c.unsupported(absl::StrCat("input ", i, " has dtype ", dtype_name(c.dtype(i)), " (kiln computes it for floats)"));
}

// A per-channel parameter [C] shaped to broadcast against [N, C, d1, d2, ...].
Tensor per_channel(NodeContext& c, const Tensor& p, int64_t rank, int64_t channels) {
  if (p.ndim() != 1 || p.shape()[0] != channels)
    c.invalid(absl::StrCat("a per-channel parameter has shape ", shape_str(p.shape()), "; expected [", channels, "]"));
  Shape s(size_t(rank), 1);
  s[1] = channels;
  return reshape(p, s);
}

void gemm_op(NodeContext& c) {
  Tensor a = c.in(0), b = c.in(1);
  if (a.ndim() != 2 || b.ndim() != 2) c.invalid("A and B must be 2-D");
  if (c.attr_int("transA", 0)) a = a.t();
  if (c.attr_int("transB", 0)) b = b.t();
  double alpha = c.attr_float("alpha", 1.0), beta = c.attr_float("beta", 1.0);
  Tensor y = matmul(a, b);
  if (alpha != 1.0) y = cast(y * alpha, y.dtype());
  if (c.has_input(2)) {
    Tensor bias = c.in(2);
    if (beta != 1.0) bias = cast(bias * beta, bias.dtype());
    Tensor r = y + bias;
    if (r.shape() != y.shape()) c.invalid(absl::StrCat("C of shape ", shape_str(bias.shape()), " does not broadcast to ", shape_str(y.shape())));
    y = r;
  }
  c.set(0, y);
}

void softmax_op(NodeContext& c, int kind) {
  require_float(c, 0);
  Tensor x = c.in(0);
  if (c.opset() < 13) {
    // Before opset 13 the input is coerced to 2-D at `axis` (default 1) and normalized per row.
    Shape s = x.shape();
    int64_t axis = c.attr_int("axis", 1);
    if (axis < -x.ndim() || axis > x.ndim()) c.invalid(absl::StrCat("axis ", axis, " is out of range for rank ", x.ndim()));
    if (axis < 0) axis += x.ndim();
    int64_t rows = 1, cols = 1;
    for (int64_t d = 0; d < x.ndim(); ++d) (d < axis ? rows : cols) *= s[size_t(d)];
    Tensor flat = reshape(x, {rows, cols});
    Tensor y = kind == 0 ? softmax(flat, 1) : kind == 1 ? log_softmax(flat, 1) : cast(equal(reshape(arange(cols, DType::kInt64, x.device()), {1, cols}), argmax(flat, 1, true)), x.dtype());
    c.set(0, reshape(y, s));
    return;
  }
  int64_t axis = c.axis(c.attr_int("axis", -1), x.ndim());
  if (kind == 0) c.set(0, softmax(x, axis));
  else if (kind == 1) c.set(0, log_softmax(x, axis));
  else {
    int64_t n = x.shape()[size_t(axis)];
    Shape s(size_t(x.ndim()), 1);
    s[size_t(axis)] = n;
    Tensor iota = reshape(arange(n, DType::kInt64, x.device()), s);
    c.set(0, cast(equal(iota, argmax(x, axis, true)), x.dtype()));
  }
}

void layer_norm_op(NodeContext& c) {
  require_float(c, 0);
  Tensor x = c.in(0);
  int64_t axis = c.axis(c.attr_int("axis", -1), x.ndim());
  double eps = c.attr_float("epsilon", 1e-5);
  if (c.attr_int("stash_type", 1) != 1) c.unsupported("stash_type other than 1 (float32)");
  std::vector<int64_t> axes = range_axes(axis, x.ndim());
  Tensor w = stats_dtype(x);
  Tensor m = mean(w, axes, true);
  Tensor d = w - m;
  Tensor inv = rsqrt(mean(d * d, axes, true) + eps);
  Tensor y = d * inv * cast(c.in(1), w.dtype());
  if (c.has_input(2)) y = y + cast(c.in(2), w.dtype());
  if (y.shape() != x.shape()) c.invalid("scale or bias does not broadcast to the input's shape");
  c.set(0, cast(y, x.dtype()));
  if (c.wants_output(1)) c.set(1, m);
  if (c.wants_output(2)) c.set(2, inv);
}

void batch_norm_op(NodeContext& c) {
  require_float(c, 0);
  Tensor x = c.in(0);
  if (x.ndim() < 2) c.invalid("input must have at least 2 dimensions");
  int64_t C = x.shape()[1], r = x.ndim();
  Tensor w = stats_dtype(x);
  DType t = w.dtype();
  Tensor scale = per_channel(c, cast(c.in(1), t), r, C), bias = per_channel(c, cast(c.in(2), t), r, C);
  Tensor m = per_channel(c, cast(c.in(3), t), r, C), var = per_channel(c, cast(c.in(4), t), r, C);
  double eps = c.attr_float("epsilon", 1e-5);
  bool training = c.attr_int("training_mode", 0) != 0;
  if (!training) {
    for (size_t i = 1; i < c.num_outputs(); ++i)
      if (c.wants_output(i)) c.invalid("running mean and variance are outputs in training mode only");
    c.set(0, cast((w - m) * rsqrt(var + eps) * scale + bias, x.dtype()));
    return;
  }
  // Training mode: normalize with the batch's statistics (population variance) and output the
  // updated running statistics.
  std::vector<int64_t> axes = {0};
  for (int64_t d = 2; d < r; ++d) axes.push_back(d);
  Tensor bm = mean(w, axes, true);
  Tensor d = w - bm;
  Tensor bv = mean(d * d, axes, true);
  c.set(0, cast(d * rsqrt(bv + eps) * scale + bias, x.dtype()));
  double momentum = c.attr_float("momentum", 0.9);
  if (c.wants_output(1)) c.set(1, cast(reshape(m * momentum + bm * (1.0 - momentum), {C}), c.dtype(3)));
  if (c.wants_output(2)) c.set(2, cast(reshape(var * momentum + bv * (1.0 - momentum), {C}), c.dtype(4)));
}

// Local response normalization across channels: each channel divided by a power of the sum of
// squares of its `size` neighbours (a sum of shifted slices of the zero-padded squares).
void lrn_op(NodeContext& c) {
  require_float(c, 0);
  Tensor x = c.in(0);
  if (x.ndim() < 3) c.invalid("input must have at least 3 dimensions");
  int64_t size = c.attr_int("size", 0);
  if (size <= 0) c.invalid("size must be positive");
  double alpha = c.attr_float("alpha", 1e-4), beta = c.attr_float("beta", 0.75), bias = c.attr_float("bias", 1.0);
  Tensor w = x.dtype() == DType::kFloat64 ? x : cast(x, DType::kFloat64);
  int64_t C = x.shape()[1], lo = (size - 1) / 2, hi = size - 1 - lo;
  std::vector<std::pair<int64_t, int64_t>> widths(size_t(x.ndim()), {0, 0});
  widths[1] = {lo, hi};
  Tensor sq = pad(w * w, widths, 0.0);
  Tensor total = slice(sq, 1, 0, C);
  for (int64_t k = 1; k < size; ++k) total = total + slice(sq, 1, k, k + C);
  c.set(0, cast(w / pow(total * (alpha / double(size)) + bias, beta), x.dtype()));
}

void instance_norm_op(NodeContext& c) {
  require_float(c, 0);
  Tensor x = c.in(0);
  if (x.ndim() < 3) c.invalid("input must have at least 3 dimensions");
  int64_t C = x.shape()[1], r = x.ndim();
  Tensor w = stats_dtype(x);
  std::vector<int64_t> axes = range_axes(2, r);
  Tensor m = mean(w, axes, true);
  Tensor d = w - m;
  Tensor y = d * rsqrt(mean(d * d, axes, true) + c.attr_float("epsilon", 1e-5));
  y = y * per_channel(c, cast(c.in(1), w.dtype()), r, C) + per_channel(c, cast(c.in(2), w.dtype()), r, C);
  c.set(0, cast(y, x.dtype()));
}

void lp_norm_op(NodeContext& c) {
  require_float(c, 0);
  Tensor x = c.in(0);
  int64_t axis = c.axis(c.attr_int("axis", -1), x.ndim());
  int64_t p = c.attr_int("p", 2);
  Tensor norm;
  if (p == 1) norm = sum(abs(x), {axis}, true);
  else if (p == 2) norm = sqrt(sum(x * x, {axis}, true));
  else c.invalid(absl::StrCat("p must be 1 or 2, got ", p));
  c.set(0, cast(x / norm, x.dtype()));
}

void mvn_op(NodeContext& c) {
  require_float(c, 0);
  Tensor x = c.in(0);
  std::vector<int64_t> axes;
  for (int64_t a : c.attr_ints("axes", {0, 2, 3})) axes.push_back(c.axis(a, x.ndim()));
  Tensor w = stats_dtype(x);
  Tensor m = mean(w, axes, true);
  Tensor var = mean(w * w, axes, true) - m * m;
  c.set(0, cast((w - m) / (sqrt(var) + 1e-9), x.dtype()));
}

void global_pool_op(NodeContext& c, bool is_max) {
  Tensor x = c.in(0);
  if (x.ndim() < 3) c.invalid("input must have at least 3 dimensions (N, C, spatial...)");
  std::vector<int64_t> axes = range_axes(2, x.ndim());
  if (is_max) c.set(0, max(x, axes, true));
  else {
    require_float(c, 0);
    c.set(0, mean(x, axes, true));
  }
}

void cumsum_op(NodeContext& c) {
  Tensor x = c.in(0);
  const HostTensor& ax = c.host(1, "axis");
  if (ax.numel() != 1) c.invalid("axis must hold one value");
  int64_t axis = c.axis(ax.int_at(0), x.ndim());
  bool exclusive = c.attr_int("exclusive", 0) != 0, reverse = c.attr_int("reverse", 0) != 0;
  if (!is_float(x.dtype())) c.unsupported(absl::StrCat("CumSum of ", dtype_name(x.dtype()), " (kiln builds it from a float matmul)"));
  int64_t n = x.shape()[size_t(axis)];
  // mask[i][j] = 1 where input i contributes to output j.
  Tensor i = reshape(arange(n, DType::kInt64, x.device()), {n, 1}), j = reshape(arange(n, DType::kInt64, x.device()), {1, n});
  Tensor mask = reverse ? (exclusive ? i > j : i >= j) : (exclusive ? i < j : i <= j);
  Tensor moved = transpose(x, axis, -1);
  Tensor y = matmul(moved, cast(mask, x.dtype()));
  c.set(0, transpose(y, axis, -1));
}

// Det of [..., n, n]: the Leibniz sum over the n! permutations of signed products of one element
// per row, for n <= kMaxDetOrder (24 products of 4 at most, fused into one kernel). Larger
// matrices need an LU decomposition kiln does not have yet.
constexpr int64_t kMaxDetOrder = 4;

void det_op(NodeContext& c) {
  if (!is_float(c.dtype(0))) c.unsupported(absl::StrCat("dtype ", dtype_name(c.dtype(0))));
  const Shape& s = c.shape(0);
  if (s.size() < 2 || s[s.size() - 1] != s[s.size() - 2])
    c.invalid(absl::StrCat("the input ", shape_str(s), " is not a (batch of) square matrices"));
  const int64_t n = s.back();
  if (n > kMaxDetOrder)
    c.unsupported(absl::StrCat("Det of ", n, "x", n, " matrices (up to ", kMaxDetOrder, "x", kMaxDetOrder,
                               "; larger ones need an LU decomposition kiln does not have yet)"));
  Shape batch(s.begin(), s.end() - 2);
  if (n == 0) {  // the determinant of an empty matrix is 1
    c.set(0, full(batch, 1.0, c.dtype(0), c.device()));
    return;
  }
  Tensor x = c.in(0);
  auto element = [&](int64_t i, int64_t j) { return slice(slice(x, -2, i, i + 1), -1, j, j + 1); };
  std::vector<int64_t> perm(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) perm[size_t(i)] = i;
  Tensor sum;
  do {
    int inversions = 0;
    for (int64_t a = 0; a < n; ++a)
      for (int64_t b = a + 1; b < n; ++b) inversions += perm[size_t(a)] > perm[size_t(b)];
    Tensor term = element(0, perm[0]);
    for (int64_t i = 1; i < n; ++i) term = term * element(i, perm[size_t(i)]);
    if (inversions % 2) term = neg(term);
    sum = sum.defined() ? sum + term : term;
  } while (std::next_permutation(perm.begin(), perm.end()));
  c.set(0, reshape(sum, batch));
}

}  // namespace

void register_nn_ops(OpTable& t) {
  t["Det"] = {det_op, {}, {}};
  t["MatMul"] = {[](NodeContext& c) {
                   if (c.dtype(0) != c.dtype(1)) c.invalid("operands have different dtypes");
                   if (c.rank(0) == 0 || c.rank(1) == 0) c.invalid("operands must have at least one dimension");
                   c.set(0, matmul(c.in(0), c.in(1)));
                 },
                 {}, {}};
  t["Gemm"] = {gemm_op, {"alpha", "beta", "transA", "transB"}, {}};
  t["Softmax"] = {[](NodeContext& c) { softmax_op(c, 0); }, {"axis"}, {}};
  t["LogSoftmax"] = {[](NodeContext& c) { softmax_op(c, 1); }, {"axis"}, {}};
  t["Hardmax"] = {[](NodeContext& c) { softmax_op(c, 2); }, {"axis"}, {}};
  t["LayerNormalization"] = {layer_norm_op, {"axis", "epsilon", "stash_type"}, {}};
  t["BatchNormalization"] = {batch_norm_op, {"epsilon", "momentum", "training_mode"}, {}};
  t["LRN"] = {lrn_op, {"size", "alpha", "beta", "bias"}, {}};
  t["InstanceNormalization"] = {instance_norm_op, {"epsilon"}, {}};
  t["LpNormalization"] = {lp_norm_op, {"axis", "p"}, {}};
  t["MeanVarianceNormalization"] = {mvn_op, {"axes"}, {}};
  t["GlobalAveragePool"] = {[](NodeContext& c) { global_pool_op(c, false); }, {}, {}};
  t["GlobalMaxPool"] = {[](NodeContext& c) { global_pool_op(c, true); }, {}, {}};
  t["CumSum"] = {cumsum_op, {"exclusive", "reverse"}, {1}};
}

}  // namespace kiln::onnx

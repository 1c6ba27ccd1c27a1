// Contraction with NumPy matmul semantics, and composites built from primitives so that the
// fuser sees through them.
#include <atomic>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "frontend/lazy.h"
#include "ir/graph.h"

namespace kiln {
namespace {
using detail::fail;
}  // namespace

namespace {

// The process's default precision: KILN_MATMUL_PRECISION until set_matmul_precision; -1 until
// first read (an unknown value is an error at the first matmul, and at every one after it).
std::atomic<int> g_precision{-1};

MatmulPrecision default_precision() {
  int p = g_precision.load(std::memory_order_relaxed);
  if (p >= 0) return MatmulPrecision(p);
  const char* env = std::getenv("KILN_MATMUL_PRECISION");
  std::string v = env ? env : "";
  if (v.empty() || v == "exact") p = int(MatmulPrecision::kExact);
  else if (v == "tf32") p = int(MatmulPrecision::kTf32);
  else fail("matmul", absl::StrCat("KILN_MATMUL_PRECISION must be 'exact' or 'tf32', got '", v, "'"));
  g_precision.store(p, std::memory_order_relaxed);
  return MatmulPrecision(p);
}

Tensor matmul_at(const Tensor& a, const Tensor& b, MatmulPrecision precision, bool explicit_precision);

}  // namespace

void set_matmul_precision(MatmulPrecision p) {
  if (p != MatmulPrecision::kExact && p != MatmulPrecision::kTf32)
    fail("set_matmul_precision", absl::StrCat("unknown precision ", int(p)));
  g_precision.store(int(p), std::memory_order_relaxed);
}

MatmulPrecision matmul_precision() { return default_precision(); }

Tensor matmul(const Tensor& a, const Tensor& b) { return matmul_at(a, b, default_precision(), false); }

Tensor matmul(const Tensor& a, const Tensor& b, MatmulPrecision precision) {
  if (precision != MatmulPrecision::kExact && precision != MatmulPrecision::kTf32)
    fail("matmul", absl::StrCat("unknown precision ", int(precision)));
  return matmul_at(a, b, precision, true);
}

namespace {

Tensor matmul_at(const Tensor& a, const Tensor& b, MatmulPrecision precision, bool explicit_precision) {
  detail::common_device("matmul", {a, b});
  if (a.ndim() == 0 || b.ndim() == 0)
    fail("matmul", absl::StrCat("operands must have at least one dimension, got ", shape_str(a.shape()),
                                " and ", shape_str(b.shape())));
  if (a.dtype() == DType::kBool || b.dtype() == DType::kBool) fail("matmul", "bool operands are not supported");
  DType t = promote_types(a.dtype(), b.dtype());
  bool a_vec = a.ndim() == 1, b_vec = b.ndim() == 1;
  Tensor x = a_vec ? a.reshape({1, a.shape()[0]}) : a;
  Tensor y = b_vec ? b.reshape({b.shape()[0], 1}) : b;
  int64_t K = x.shape().back(), K2 = y.shape()[y.ndim() - 2];
  if (K != K2)
    fail("matmul", absl::StrCat("shapes ", shape_str(a.shape()), " and ", shape_str(b.shape()),
                                " are not aligned (", K, " != ", K2, ")"));
  Shape xb(x.shape().begin(), x.shape().end() - 2), yb(y.shape().begin(), y.shape().end() - 2);
  auto batch = ir::broadcast_shapes(xb, yb, "matmul");
  if (!batch.ok())
    fail("matmul", absl::StrCat("batch dimensions of ", shape_str(a.shape()), " and ", shape_str(b.shape()),
                                " cannot be broadcast together"));
  int64_t M = x.shape()[x.ndim() - 2], N = y.shape().back();
  Shape xs = *batch, ys = *batch, out = *batch;
  xs.insert(xs.end(), {M, K});
  ys.insert(ys.end(), {K, N});
  out.insert(out.end(), {M, N});
  x = detail::broadcast_to_shape("matmul", detail::cast_to(x, t), xs);
  y = detail::broadcast_to_shape("matmul", detail::cast_to(y, t), ys);
  // TF32 is about float32 products: the default leaves other dtypes exact, an explicit request
  // for them is a mistake worth saying.
  const bool tf32 = precision == MatmulPrecision::kTf32 && t == DType::kFloat32;
  if (precision == MatmulPrecision::kTf32 && !tf32 && explicit_precision)
    fail("matmul", absl::StrCat("TF32 precision applies to float32 operands; these multiply as ", dtype_name(t)));
  Tensor r = detail::record("matmul", ir::Op::kDot, t, out, {x, y}, tf32 ? std::vector<int64_t>{1} : std::vector<int64_t>{});
  Shape final_shape = *batch;
  if (!a_vec) final_shape.push_back(M);
  if (!b_vec) final_shape.push_back(N);
  return r.reshape(final_shape);
}

}  // namespace

Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias) { return matmul(x, weight) + bias; }

Tensor softmax(const Tensor& a, int64_t axis) {
  int64_t ax = detail::normalize_axis("softmax", axis, a.ndim());
  Tensor x = is_float(a.dtype()) ? a : cast(a, DType::kFloat32);
  Tensor e = exp(x - max(x, {ax}, true));
  return e / sum(e, {ax}, true);
}

Tensor log_softmax(const Tensor& a, int64_t axis) {
  int64_t ax = detail::normalize_axis("log_softmax", axis, a.ndim());
  Tensor x = is_float(a.dtype()) ? a : cast(a, DType::kFloat32);
  Tensor s = x - max(x, {ax}, true);
  return s - log(sum(exp(s), {ax}, true));
}

namespace {
// Axes normalized by a norm whose weight has shape `w`: the trailing w.ndim() axes of x.
std::vector<int64_t> norm_axes(const std::string& label, const Tensor& x, const Tensor& w) {
  if (w.ndim() == 0 || w.ndim() > x.ndim())
    fail(label, absl::StrCat("weight shape ", shape_str(w.shape()), " does not match input ", shape_str(x.shape())));
  std::vector<int64_t> axes;
  for (int64_t i = 0; i < w.ndim(); ++i) {
    int64_t d = x.ndim() - w.ndim() + i;
    if (x.shape()[d] != w.shape()[i])
      fail(label, absl::StrCat("weight shape ", shape_str(w.shape()), " does not match the trailing dims of ",
                               shape_str(x.shape())));
    axes.push_back(d);
  }
  return axes;
}
}  // namespace

Tensor layer_norm(const Tensor& x_in, const Tensor& weight, const Tensor& bias, double eps) {
  std::vector<int64_t> axes = norm_axes("layer_norm", x_in, weight);
  if (bias.shape() != weight.shape())
    fail("layer_norm", absl::StrCat("bias shape ", shape_str(bias.shape()), " differs from weight shape ",
                                    shape_str(weight.shape())));
  Tensor x = is_float(x_in.dtype()) ? x_in : cast(x_in, DType::kFloat32);
  Tensor xc = x - mean(x, axes, true);
  Tensor var = mean(xc * xc, axes, true);
  return xc * rsqrt(var + eps) * weight + bias;
}

Tensor rms_norm(const Tensor& x_in, const Tensor& weight, double eps) {
  std::vector<int64_t> axes = norm_axes("rms_norm", x_in, weight);
  Tensor x = is_float(x_in.dtype()) ? x_in : cast(x_in, DType::kFloat32);
  return x * rsqrt(mean(x * x, axes, true) + eps) * weight;
}

}  // namespace kiln

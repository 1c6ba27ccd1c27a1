// scaled_dot_product_attention: checks the operands, broadcasts them to one batch shape and
// records ONE attention node; passes/attention.h decides whether a fused kernel computes it.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "frontend/lazy.h"
#include "ir/graph.h"

namespace kiln {

Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const AttentionOptions& options) {
  const std::string label = "scaled_dot_product_attention";
  std::vector<Tensor> all{q, k, v};
  if (options.mask.defined()) all.push_back(options.mask);
  detail::common_device(label, all);
  if (q.ndim() < 2 || k.ndim() < 2 || v.ndim() < 2)
    detail::fail(label, absl::StrCat("q, k and v need at least 2 dims ([..., S, D]), got ", shape_str(q.shape()), ", ",
                                     shape_str(k.shape()), " and ", shape_str(v.shape())));
  if (!is_float(q.dtype()) || q.dtype() != k.dtype() || q.dtype() != v.dtype())
    detail::fail(label, absl::StrCat("q, k and v must share one floating-point dtype, got ", dtype_name(q.dtype()),
                                     ", ", dtype_name(k.dtype()), " and ", dtype_name(v.dtype())));
  const int64_t Sq = q.shape()[q.ndim() - 2], D = q.shape().back();
  const int64_t Sk = k.shape()[k.ndim() - 2];
  if (k.shape().back() != D)
    detail::fail(label, absl::StrCat("q ", shape_str(q.shape()), " and k ", shape_str(k.shape()),
                                     " differ in the head dim"));
  if (v.shape()[v.ndim() - 2] != Sk)
    detail::fail(label, absl::StrCat("k ", shape_str(k.shape()), " and v ", shape_str(v.shape()),
                                     " differ in the key length"));
  if (!(options.scale >= 0) || std::isinf(options.scale))
    detail::fail(label, absl::StrCat("scale must be finite and positive (0 = 1/sqrt(D)), got ", options.scale));
  const int64_t Dv = v.shape().back();
  Shape qb(q.shape().begin(), q.shape().end() - 2), kb(k.shape().begin(), k.shape().end() - 2),
      vb(v.shape().begin(), v.shape().end() - 2);
  auto batch = ir::broadcast_shapes(qb, kb, label);
  if (batch.ok()) batch = ir::broadcast_shapes(*batch, vb, label);
  if (!batch.ok())
    detail::fail(label, absl::StrCat("leading dims of q ", shape_str(q.shape()), ", k ", shape_str(k.shape()),
                                     " and v ", shape_str(v.shape()), " cannot be broadcast together"));
  auto with = [&](int64_t a, int64_t b) {
    Shape s = *batch;
    s.insert(s.end(), {a, b});
    return s;
  };
  std::vector<Tensor> in{detail::broadcast_to_shape(label, q, with(Sq, D)),
                         detail::broadcast_to_shape(label, k, with(Sk, D)),
                         detail::broadcast_to_shape(label, v, with(Sk, Dv))};
  if (options.mask.defined()) {
    const Tensor& m = options.mask;
    const Shape want = with(Sq, Sk);
    if (m.dtype() != DType::kBool && !is_float(m.dtype()))
      detail::fail(label, absl::StrCat("mask must be bool (true = attend) or floating-point (added to the scores), got ",
                                       dtype_name(m.dtype())));
    auto b = ir::broadcast_shapes(m.shape(), want, label);
    if (!b.ok() || *b != want)
      detail::fail(label, absl::StrCat("mask ", shape_str(m.shape()), " does not broadcast to the scores' shape ",
                                       shape_str(want)));
    Tensor bias = m.dtype() == DType::kBool ? where(m, 0.0, detail::constant(-INFINITY, DType::kFloat32, m.shape(),
                                                                              detail::common_device(label, {m})))
                                            : m;
    in.push_back(detail::broadcast_to_shape(label, bias, want));
  }
  const double scale = options.scale > 0 ? options.scale : 1.0 / std::sqrt(double(D));
  return detail::record(label, ir::Op::kAttention, q.dtype(), with(Sq, Dv), in, {options.causal ? 1 : 0},
                        Scalar::from_double(scale));
}

}  // namespace kiln

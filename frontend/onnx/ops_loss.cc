// NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss. Picking each element's target class is
// a one-hot comparison of the labels with an iota over the class axis, summed over that axis:
// work proportional to the input (which the loss reads whole anyway), exact (a where, not a
// product), and it fuses with the reduction that follows.
#include "absl/strings/str_cat.h"
#include "frontend/onnx/ops.h"

namespace kiln::onnx {
namespace {

// input: [N, C, d1...] log-probabilities; target: [N, d1...] class indices.
Tensor nll(NodeContext& c, const Tensor& input, const Tensor& target, const Tensor* weight) {
  if (!is_float(input.dtype())) c.unsupported(absl::StrCat("input dtype ", dtype_name(input.dtype())));
  if (is_float(target.dtype()) || target.dtype() == DType::kBool) c.invalid("the target must hold integers");
  int64_t r = input.ndim();
  if (r < 2) c.invalid("the input must be at least 2-D (N, C, ...)");
  int64_t C = input.shape()[1];
  Shape want = input.shape();
  want.erase(want.begin() + 1);
  if (target.shape() != want) c.invalid(absl::StrCat("target shape ", shape_str(target.shape()), " does not match input ", shape_str(input.shape())));
  std::string reduction = c.attr_string("reduction", "mean");
  if (reduction != "none" && reduction != "sum" && reduction != "mean") c.invalid(absl::StrCat("unknown reduction '", reduction, "'"));
  Shape iota_shape(size_t(r), 1);
  iota_shape[1] = C;
  Tensor t = unsqueeze(cast(target, DType::kInt64), 1);
  Tensor onehot = equal(t, reshape(arange(C, DType::kInt64, input.device()), iota_shape));
  Tensor zero = zeros({}, input.dtype(), input.device());
  Tensor picked = sum(where(onehot, input, zero), {1});
  bool ignore = c.has_attr("ignore_index");
  Tensor valid = ignore ? squeeze(t != double(c.attr_int("ignore_index", 0)), 1) : Tensor();
  Tensor w;
  if (weight) {
    if (weight->shape() != Shape{C}) c.invalid(absl::StrCat("weight has shape ", shape_str(weight->shape()), "; expected [", C, "]"));
    w = sum(where(onehot, reshape(cast(*weight, input.dtype()), iota_shape), zero), {1});
  } else {
    w = ones(picked.shape(), input.dtype(), input.device());
  }
  if (ignore) w = where(valid, w, zero);
  Tensor loss = -(picked * w);
  if (ignore) loss = where(valid, loss, zero);
  if (reduction == "none") return loss;
  if (reduction == "sum") return sum(loss);
  return cast(sum(loss) / sum(w), input.dtype());
}

void nll_op(NodeContext& c) {
  Tensor w = c.has_input(2) ? c.in(2) : Tensor();
  c.set(0, nll(c, c.in(0), c.in(1), c.has_input(2) ? &w : nullptr));
}

void softmax_ce_op(NodeContext& c) {
  Tensor scores = c.in(0);
  if (!is_float(scores.dtype())) c.unsupported(absl::StrCat("input dtype ", dtype_name(scores.dtype())));
  if (scores.ndim() < 2) c.invalid("scores must be at least 2-D (N, C, ...)");
  Tensor logp = log_softmax(scores, 1);
  Tensor w = c.has_input(2) ? c.in(2) : Tensor();
  c.set(0, nll(c, logp, c.in(1), c.has_input(2) ? &w : nullptr));
  if (c.wants_output(1)) c.set(1, logp);
}

}  // namespace

void register_loss_ops(OpTable& t) {
  t["NegativeLogLikelihoodLoss"] = {nll_op, {"reduction", "ignore_index"}, {}};
  t["SoftmaxCrossEntropyLoss"] = {softmax_ce_op, {"reduction", "ignore_index"}, {}};
}

}  // namespace kiln::onnx

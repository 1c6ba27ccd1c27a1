// Member forms of the free-function ops.
#include "kiln/tensor.h"

namespace kiln {

Tensor Tensor::operator-() const { return neg(*this); }
Tensor Tensor::exp() const { return kiln::exp(*this); }
Tensor Tensor::log() const { return kiln::log(*this); }
Tensor Tensor::sqrt() const { return kiln::sqrt(*this); }
Tensor Tensor::rsqrt() const { return kiln::rsqrt(*this); }
Tensor Tensor::abs() const { return kiln::abs(*this); }
Tensor Tensor::sin() const { return kiln::sin(*this); }
Tensor Tensor::cos() const { return kiln::cos(*this); }
Tensor Tensor::tanh() const { return kiln::tanh(*this); }
Tensor Tensor::sigmoid() const { return kiln::sigmoid(*this); }
Tensor Tensor::relu() const { return kiln::relu(*this); }
Tensor Tensor::gelu(bool tanh_approx) const { return kiln::gelu(*this, tanh_approx); }
Tensor Tensor::erf() const { return kiln::erf(*this); }
Tensor Tensor::floor() const { return kiln::floor(*this); }
Tensor Tensor::ceil() const { return kiln::ceil(*this); }
Tensor Tensor::reciprocal() const { return kiln::reciprocal(*this); }
Tensor Tensor::silu() const { return kiln::silu(*this); }
Tensor Tensor::pow(const Tensor& e) const { return kiln::pow(*this, e); }
Tensor Tensor::pow(double e) const { return kiln::pow(*this, e); }
Tensor Tensor::clamp(double lo, double hi) const { return kiln::clamp(*this, lo, hi); }
Tensor Tensor::logical_not() const { return kiln::logical_not(*this); }
Tensor Tensor::cast(DType t) const { return kiln::cast(*this, t); }
Tensor Tensor::sum(std::vector<int64_t> axes, bool keepdim) const { return kiln::sum(*this, std::move(axes), keepdim); }
Tensor Tensor::max(std::vector<int64_t> axes, bool keepdim) const { return kiln::max(*this, std::move(axes), keepdim); }
Tensor Tensor::min(std::vector<int64_t> axes, bool keepdim) const { return kiln::min(*this, std::move(axes), keepdim); }
Tensor Tensor::mean(std::vector<int64_t> axes, bool keepdim) const { return kiln::mean(*this, std::move(axes), keepdim); }
Tensor Tensor::prod(std::vector<int64_t> axes, bool keepdim) const { return kiln::prod(*this, std::move(axes), keepdim); }
Tensor Tensor::argmax(int64_t axis, bool keepdim) const { return kiln::argmax(*this, axis, keepdim); }
Tensor Tensor::argmin(int64_t axis, bool keepdim) const { return kiln::argmin(*this, axis, keepdim); }
Tensor Tensor::argmax() const { return kiln::argmax(*this); }
Tensor Tensor::argmin() const { return kiln::argmin(*this); }
Tensor Tensor::reshape(Shape shape) const { return kiln::reshape(*this, std::move(shape)); }
Tensor Tensor::permute(std::vector<int64_t> perm) const { return kiln::permute(*this, std::move(perm)); }
Tensor Tensor::transpose(int64_t a, int64_t b) const { return kiln::transpose(*this, a, b); }
Tensor Tensor::t() const { return kiln::transpose(*this, -2, -1); }
Tensor Tensor::expand(Shape shape) const { return kiln::expand(*this, std::move(shape)); }
Tensor Tensor::slice(int64_t axis, int64_t start, int64_t stop, int64_t step) const {
  return kiln::slice(*this, axis, start, stop, step);
}
Tensor Tensor::pad(std::vector<std::pair<int64_t, int64_t>> widths, double value) const {
  return kiln::pad(*this, std::move(widths), value);
}
Tensor Tensor::squeeze() const { return kiln::squeeze(*this); }
Tensor Tensor::squeeze(int64_t axis) const { return kiln::squeeze(*this, axis); }
Tensor Tensor::unsqueeze(int64_t axis) const { return kiln::unsqueeze(*this, axis); }
Tensor Tensor::flatten(int64_t s, int64_t e) const { return kiln::flatten(*this, s, e); }
Tensor Tensor::contiguous() const { return *this; }
Tensor Tensor::matmul(const Tensor& other) const { return kiln::matmul(*this, other); }
Tensor Tensor::softmax(int64_t axis) const { return kiln::softmax(*this, axis); }
Tensor Tensor::log_softmax(int64_t axis) const { return kiln::log_softmax(*this, axis); }

}  // namespace kiln

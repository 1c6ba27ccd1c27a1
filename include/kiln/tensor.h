// kiln::Tensor and the op library.
//
// A Tensor is a cheap handle (a shared pointer) to a node of a lazily recorded graph. Ops record
// nodes and check shapes/dtypes immediately (throwing kiln::Error naming the op and the shapes);
// nothing is computed until a result is needed: to_vector(), item(), realize().
#pragma once

#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "kiln/device.h"
#include "kiln/dtype.h"
#include "kiln/error.h"

namespace kiln {

namespace detail {
struct LazyNode;
struct Access;  // the frontend's way in (frontend/lazy.h)
}

class Tensor {
 public:
  Tensor() = default;

  // --- properties -----------------------------------------------------------------------
  const Shape& shape() const;
  DType dtype() const;
  int64_t numel() const;
  int64_t ndim() const;
  int64_t size(int64_t axis) const;  // negative axes count from the end
  Device device() const;
  bool defined() const { return node_ != nullptr; }
  bool is_realized() const;

  // --- realization ----------------------------------------------------------------------
  // Materializes the value on its device (no host copy). Returns *this for chaining.
  const Tensor& realize() const;
  // Realizes and copies to the host, converting to T (float, double, int64_t, int32_t, int16_t,
  // int8_t, uint32_t, uint16_t, uint8_t, bool; uint16_t of a f16 or bf16 tensor gives its raw bits).
  template <typename T>
  std::vector<T> to_vector() const;
  // Realizes and downloads into memory the caller owns and may reuse (`count` elements of the
  // tensor's own element type: float for float32, double, int64_t, int32_t, int16_t, int8_t,
  // uint32_t, uint16_t, uint8_t).
  // Throws kiln::Error when T is not the tensor's element type or `count` is not its size.
  template <typename T>
  void copy_to(T* dst, int64_t count) const;
  // The single element of a one-element tensor, as double.
  double item() const;
  // Copies to another device (realizes first).
  Tensor to(const Device& device) const;

  // --- member forms of the ops ------------------------------------------------------------
  Tensor operator-() const;
  Tensor exp() const;
  Tensor log() const;
  Tensor sqrt() const;
  Tensor rsqrt() const;
  Tensor abs() const;
  Tensor sin() const;
  Tensor cos() const;
  Tensor tanh() const;
  Tensor sigmoid() const;
  Tensor relu() const;
  Tensor gelu(bool tanh_approx = false) const;
  Tensor erf() const;
  Tensor floor() const;
  Tensor ceil() const;
  Tensor reciprocal() const;
  Tensor silu() const;
  Tensor pow(const Tensor& e) const;
  Tensor pow(double e) const;
  Tensor clamp(double lo, double hi) const;
  Tensor logical_not() const;
  Tensor cast(DType t) const;

  Tensor sum(std::vector<int64_t> axes = {}, bool keepdim = false) const;
  Tensor max(std::vector<int64_t> axes = {}, bool keepdim = false) const;
  Tensor min(std::vector<int64_t> axes = {}, bool keepdim = false) const;
  Tensor mean(std::vector<int64_t> axes = {}, bool keepdim = false) const;
  Tensor prod(std::vector<int64_t> axes = {}, bool keepdim = false) const;
  Tensor argmax(int64_t axis, bool keepdim = false) const;
  Tensor argmin(int64_t axis, bool keepdim = false) const;
  Tensor argmax() const;  // over the flattened tensor
  Tensor argmin() const;

  Tensor reshape(Shape shape) const;
  Tensor view(Shape shape) const { return reshape(std::move(shape)); }
  Tensor permute(std::vector<int64_t> perm) const;
  Tensor transpose(int64_t a, int64_t b) const;
  Tensor t() const;  // transpose of the last two axes
  Tensor expand(Shape shape) const;
  Tensor broadcast_to(Shape shape) const { return expand(std::move(shape)); }
  Tensor slice(int64_t axis, int64_t start, int64_t stop, int64_t step = 1) const;
  Tensor pad(std::vector<std::pair<int64_t, int64_t>> widths, double value = 0.0) const;
  Tensor squeeze() const;
  Tensor squeeze(int64_t axis) const;
  Tensor unsqueeze(int64_t axis) const;
  Tensor flatten(int64_t start_axis = 0, int64_t end_axis = -1) const;
  Tensor contiguous() const;  // returns *this: kiln tensors have no user-visible layout

  Tensor matmul(const Tensor& other) const;
  Tensor softmax(int64_t axis) const;
  Tensor log_softmax(int64_t axis) const;


 private:
  friend struct detail::Access;
  explicit Tensor(std::shared_ptr<detail::LazyNode> node) : node_(std::move(node)) {}
  void check_defined(const char* what) const;
  std::shared_ptr<detail::LazyNode> node_;
};

// --- creation ----------------------------------------------------------------------------
// Copies host data. T in {float, double, int64_t, int32_t, int16_t, int8_t, uint32_t, uint16_t,
// uint8_t, bool}; dtype is
// deduced from T unless given (the data is then converted).
template <typename T>
Tensor from_vector(const std::vector<T>& data, Shape shape, const Device& device = Device());
template <typename T>
Tensor from_vector(const std::vector<T>& data, Shape shape, DType dtype, const Device& device = Device());
template <typename T>
Tensor from_data(const T* data, Shape shape, const Device& device = Device());
Tensor scalar(double value, DType dtype = float32, const Device& device = Device());
Tensor full(Shape shape, double value, DType dtype = float32, const Device& device = Device());
Tensor zeros(Shape shape, DType dtype = float32, const Device& device = Device());
Tensor ones(Shape shape, DType dtype = float32, const Device& device = Device());
Tensor zeros_like(const Tensor& t);
Tensor ones_like(const Tensor& t);
Tensor full_like(const Tensor& t, double value);
Tensor arange(int64_t n, DType dtype = int64, const Device& device = Device());
Tensor arange(double start, double stop, double step = 1.0, DType dtype = float32,
              const Device& device = Device());
// Uniform in [0, 1) and standard normal; the same seed gives the same values on every device
// (up to the device's float rounding).
Tensor rand(Shape shape, uint64_t seed, DType dtype = float32, const Device& device = Device());
Tensor randn(Shape shape, uint64_t seed, DType dtype = float32, const Device& device = Device());

// --- elementwise -------------------------------------------------------------------------
Tensor operator+(const Tensor& a, const Tensor& b);
Tensor operator-(const Tensor& a, const Tensor& b);
Tensor operator*(const Tensor& a, const Tensor& b);
Tensor operator/(const Tensor& a, const Tensor& b);  // true division (ints promote to float32)
Tensor operator+(const Tensor& a, double b);
Tensor operator-(const Tensor& a, double b);
Tensor operator*(const Tensor& a, double b);
Tensor operator/(const Tensor& a, double b);
Tensor operator+(double a, const Tensor& b);
Tensor operator-(double a, const Tensor& b);
Tensor operator*(double a, const Tensor& b);
Tensor operator/(double a, const Tensor& b);
Tensor operator<(const Tensor& a, const Tensor& b);
Tensor operator<=(const Tensor& a, const Tensor& b);
Tensor operator>(const Tensor& a, const Tensor& b);
Tensor operator>=(const Tensor& a, const Tensor& b);
Tensor operator==(const Tensor& a, const Tensor& b);
Tensor operator!=(const Tensor& a, const Tensor& b);
Tensor operator<(const Tensor& a, double b);
Tensor operator<=(const Tensor& a, double b);
Tensor operator>(const Tensor& a, double b);
Tensor operator>=(const Tensor& a, double b);
Tensor operator==(const Tensor& a, double b);
Tensor operator!=(const Tensor& a, double b);
Tensor operator&&(const Tensor& a, const Tensor& b);
Tensor operator||(const Tensor& a, const Tensor& b);
Tensor operator!(const Tensor& a);

Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor neg(const Tensor& a);
// Integer division of integer tensors (operands promote as for +, and broadcast): trunc_divide
// rounds toward zero (C's /), floor_divide toward -infinity (Python's //); fmod is the remainder
// of trunc_divide (the dividend's sign, C's %), remainder that of floor_divide (the divisor's
// sign, Python's %). Division by zero gives 0, quotient and remainder alike; the most negative
// value divided by -1 wraps to itself (remainder 0), as + and * wrap. Floating-point or bool
// operands are an error (kiln::Error naming the op; for floats use floor(a / b)).
Tensor trunc_divide(const Tensor& a, const Tensor& b);
Tensor floor_divide(const Tensor& a, const Tensor& b);
Tensor fmod(const Tensor& a, const Tensor& b);
Tensor remainder(const Tensor& a, const Tensor& b);
Tensor exp(const Tensor& a);
Tensor log(const Tensor& a);
Tensor sqrt(const Tensor& a);
Tensor rsqrt(const Tensor& a);
Tensor abs(const Tensor& a);
Tensor sin(const Tensor& a);
Tensor cos(const Tensor& a);
Tensor tanh(const Tensor& a);
Tensor sigmoid(const Tensor& a);
Tensor relu(const Tensor& a);
Tensor gelu(const Tensor& a, bool tanh_approx = false);
Tensor erf(const Tensor& a);
Tensor floor(const Tensor& a);
Tensor ceil(const Tensor& a);
Tensor reciprocal(const Tensor& a);
Tensor silu(const Tensor& a);
Tensor pow(const Tensor& a, const Tensor& b);
Tensor pow(const Tensor& a, double b);
Tensor maximum(const Tensor& a, const Tensor& b);
Tensor minimum(const Tensor& a, const Tensor& b);
Tensor where(const Tensor& cond, const Tensor& a, const Tensor& b);
Tensor where(const Tensor& cond, const Tensor& a, double b);
Tensor where(const Tensor& cond, double a, const Tensor& b);
Tensor clamp(const Tensor& a, double lo, double hi);
Tensor logical_and(const Tensor& a, const Tensor& b);
Tensor logical_or(const Tensor& a, const Tensor& b);
Tensor logical_not(const Tensor& a);
Tensor cast(const Tensor& a, DType t);
Tensor less(const Tensor& a, const Tensor& b);
Tensor less_equal(const Tensor& a, const Tensor& b);
Tensor greater(const Tensor& a, const Tensor& b);
Tensor greater_equal(const Tensor& a, const Tensor& b);
Tensor equal(const Tensor& a, const Tensor& b);
Tensor not_equal(const Tensor& a, const Tensor& b);

// --- reductions (empty axes = all axes) ----------------------------------------------------
Tensor sum(const Tensor& a, std::vector<int64_t> axes = {}, bool keepdim = false);
Tensor max(const Tensor& a, std::vector<int64_t> axes = {}, bool keepdim = false);
Tensor min(const Tensor& a, std::vector<int64_t> axes = {}, bool keepdim = false);
Tensor mean(const Tensor& a, std::vector<int64_t> axes = {}, bool keepdim = false);
Tensor prod(const Tensor& a, std::vector<int64_t> axes = {}, bool keepdim = false);
Tensor argmax(const Tensor& a, int64_t axis, bool keepdim = false);
Tensor argmin(const Tensor& a, int64_t axis, bool keepdim = false);
Tensor argmax(const Tensor& a);
Tensor argmin(const Tensor& a);

// --- movement ----------------------------------------------------------------------------
Tensor reshape(const Tensor& a, Shape shape);
Tensor permute(const Tensor& a, std::vector<int64_t> perm);
Tensor transpose(const Tensor& a, int64_t axis0, int64_t axis1);
Tensor expand(const Tensor& a, Shape shape);
Tensor broadcast_to(const Tensor& a, Shape shape);
Tensor slice(const Tensor& a, int64_t axis, int64_t start, int64_t stop, int64_t step = 1);
Tensor pad(const Tensor& a, std::vector<std::pair<int64_t, int64_t>> widths, double value = 0.0);
Tensor concat(const std::vector<Tensor>& tensors, int64_t axis = 0);
Tensor stack(const std::vector<Tensor>& tensors, int64_t axis = 0);
Tensor squeeze(const Tensor& a);
Tensor squeeze(const Tensor& a, int64_t axis);
Tensor unsqueeze(const Tensor& a, int64_t axis);
Tensor flatten(const Tensor& a, int64_t start_axis = 0, int64_t end_axis = -1);
Tensor contiguous(const Tensor& a);

// --- gather and scatter: positions held by an index tensor, read at run time ----------------
// Indices have an integer dtype. A negative index counts from the end of its axis (-1 is the
// last element); an index still outside the axis never touches memory outside the tensor: a
// gather reads 0 (false) there and a scatter ignores that update. Gathers fuse with the
// producers of their indices and the consumers of their result (the gathered-from tensor is
// read from memory).
//
// PyTorch's gather / NumPy's take_along_axis / ONNX GatherElements: result[i] = a[i with its
// `axis` coordinate replaced by indices[i]]; indices have a's rank and dims no larger than a's
// outside `axis`; the result has indices' shape.
Tensor take_along_axis(const Tensor& a, const Tensor& indices, int64_t axis);
// ONNX Gather / PyTorch index_select (for 1-D indices) / embedding lookup: whole slices along
// `axis`; the result's shape is a.shape[:axis] + indices.shape + a.shape[axis+1:].
Tensor gather(const Tensor& a, int64_t axis, const Tensor& indices);
// ONNX GatherND: the last dim of `indices` holds index tuples into the dims of `a` after the
// `batch_dims` leading dims (which `a` and `indices` share); result: batch + indices' other
// dims + the dims of `a` the tuples do not index.
Tensor gather_nd(const Tensor& a, const Tensor& indices, int64_t batch_dims = 0);
// How a scatter combines an update with the value already there (and duplicate updates with
// each other). kNone: the update replaces it; among duplicates the last one along the axis wins
// (ONNX leaves that case unspecified).
enum class ScatterReduction { kNone, kAdd, kMul, kMax, kMin };
// PyTorch's scatter / scatter_reduce(include_self) / ONNX ScatterElements: a copy of `data`
// with updates[i] combined into the element at i with its `axis` coordinate replaced by
// indices[i]; updates have indices' shape, indices have data's rank and dims no larger than
// data's outside `axis`. Updates apply along `axis` in order, in one thread per position of the
// other axes (so a scatter over one long axis runs serially; DESIGN.md).
Tensor scatter(const Tensor& data, int64_t axis, const Tensor& indices, const Tensor& updates,
               ScatterReduction reduction = ScatterReduction::kNone);
// ONNX ScatterND: index tuples (the last dim of `indices`) into data's leading dims; updates
// have the shape indices.shape[:-1] + data.shape[tuple length:].
Tensor scatter_nd(const Tensor& data, const Tensor& indices, const Tensor& updates,
                  ScatterReduction reduction = ScatterReduction::kNone);

// --- segmented reductions: ragged rows given by run-time offsets -----------------------------
// PyTorch's segment_reduce(offsets=...) / TensorFlow's segment ops / a CSR row reduction: row s
// of the result folds data rows [offsets[s], offsets[s + 1]) elementwise over data's other dims,
// so data [N, R...] and offsets [S + 1] give [S, R...]. Offsets have an integer dtype and are
// read at run time: each is clamped into [0, N], an end below its start is an empty segment, and
// segments may overlap or come in any order. An empty segment holds the identity: 0 for a sum, 1
// for a product, -inf / +inf (an integer dtype's lowest / highest value) for max / min; float max
// and min propagate NaN. Each segment costs its own rows (no padding to the longest); on CUDA the
// kernel pulls segments from a work queue when rows are narrow (DESIGN.md, "Ragged work").
Tensor segment_sum(const Tensor& data, const Tensor& offsets);
Tensor segment_prod(const Tensor& data, const Tensor& offsets);
Tensor segment_max(const Tensor& data, const Tensor& offsets);
Tensor segment_min(const Tensor& data, const Tensor& offsets);

// --- contraction and composites ------------------------------------------------------------
Tensor matmul(const Tensor& a, const Tensor& b);

// How float32 matmuls (and convolutions, which are matmuls) may compute. kExact, the default:
// f32 products and f32 sums. kTf32: the operands may be rounded to TF32 (f32's range, a 10-bit
// mantissa: relative error up to 2^-11 per operand) to run on tensor cores (CUDA sm_80+), sums
// stay f32. A permission, not a demand: devices without TF32 compute exactly; other dtypes are
// unaffected. The setting in force when a matmul is recorded is part of its graph node (IR text
// `precision=tf32`), so it is part of the cache key and of exported graphs.
enum class MatmulPrecision { kExact, kTf32 };
// The process's default for later matmuls; KILN_MATMUL_PRECISION=exact|tf32 sets the initial one.
void set_matmul_precision(MatmulPrecision p);
MatmulPrecision matmul_precision();
// One matmul at an explicit precision; kTf32 with operands that are not float32 is an error.
Tensor matmul(const Tensor& a, const Tensor& b, MatmulPrecision precision);
Tensor linear(const Tensor& x, const Tensor& weight, const Tensor& bias);  // x @ weight + bias
Tensor softmax(const Tensor& a, int64_t axis = -1);
Tensor log_softmax(const Tensor& a, int64_t axis = -1);
Tensor layer_norm(const Tensor& x, const Tensor& weight, const Tensor& bias, double eps = 1e-5);
Tensor rms_norm(const Tensor& x, const Tensor& weight, double eps = 1e-6);

// Attention: softmax(q @ k^T * scale + mask) @ v over q [..., Sq, D], k [..., Sk, D],
// v [..., Sk, Dv] (leading dims broadcast), as ONE flash-attention kernel where the device has
// one (CUDA sm_80+: bf16/f16, head dims 64 and 128) and as fused primitives in f32 elsewhere.
struct AttentionOptions {
  bool causal = false;  // query i attends to keys j <= i (top-left aligned, as PyTorch's is_causal)
  // Broadcastable to [..., Sq, Sk]: bool (true = attend) or float (added to the scores).
  // Undefined (default-constructed) = no mask.
  Tensor mask;
  double scale = 0.0;  // 0 = 1 / sqrt(D)
};
Tensor scaled_dot_product_attention(const Tensor& q, const Tensor& k, const Tensor& v,
                                    const AttentionOptions& options = {});

// Realizes several tensors as ONE graph (shared work is computed once).
void realize(const std::vector<Tensor>& tensors);

// The values of several tensors, converted like Tensor::to_vector<T> (the same T; uint16_t
// converts f16/bf16 too): the lazy ones realize as one graph, then every copy is queued
// before the host waits, so the downloads overlap each other instead of each waiting in turn.
template <typename T>
std::vector<std::vector<T>> to_vectors(const std::vector<Tensor>& tensors);

// Text of the graph that realizing `tensors` would run (the IR text format).
std::string graph_text(const std::vector<Tensor>& tensors);

}  // namespace kiln

// Tensor properties, realization and host readback.
#include <cstring>

#include "absl/strings/str_cat.h"
#include "frontend/lazy.h"
#include "ir/half.h"
#include "runtime/device.h"
#include "support/trace.h"

namespace kiln {
namespace detail {
void realize_nodes(const std::vector<NodePtr>& nodes);
std::string graph_text_of(const std::vector<NodePtr>& nodes);
bool node_is_realized(const NodePtr& node);
}  // namespace detail

void Tensor::check_defined(const char* what) const {
  if (!node_) throw Error(absl::FailedPreconditionError(absl::StrCat(what, ": undefined tensor")));
}

const Shape& Tensor::shape() const {
  check_defined("shape");
  return node_->shape;
}
DType Tensor::dtype() const {
  check_defined("dtype");
  return node_->dtype;
}
int64_t Tensor::numel() const { return shape_numel(shape()); }
int64_t Tensor::ndim() const { return int64_t(shape().size()); }
int64_t Tensor::size(int64_t axis) const { return shape()[detail::normalize_axis("size", axis, ndim())]; }
Device Tensor::device() const {
  check_defined("device");
  return detail::Access::device(node_->device);
}
bool Tensor::is_realized() const { return node_ && detail::node_is_realized(node_); }

const Tensor& Tensor::realize() const {
  check_defined("realize");
  detail::realize_nodes({node_});
  return *this;
}

void realize(const std::vector<Tensor>& tensors) {
  std::vector<detail::NodePtr> nodes;
  for (const Tensor& t : tensors) {
    if (!t.defined()) throw Error(absl::InvalidArgumentError("realize: undefined tensor"));
    nodes.push_back(detail::node_of(t));
  }
  detail::common_device("realize", tensors);
  detail::realize_nodes(nodes);
}

std::string graph_text(const std::vector<Tensor>& tensors) {
  std::vector<detail::NodePtr> nodes;
  for (const Tensor& t : tensors) nodes.push_back(detail::node_of(t));
  return detail::graph_text_of(nodes);
}

namespace {

// Downloads realized tensors into `dsts` (numel * dtype size bytes each): one download_many
// per device.
void read_many(const std::vector<Tensor>& ts, const std::vector<void*>& dsts) {
  std::vector<runtime::Device*> devices;
  std::vector<std::vector<runtime::Device::Download>> per_device;
  for (size_t i = 0; i < ts.size(); ++i) {
    const auto& buf = detail::node_of(ts[i])->buffer;
    const int64_t bytes = ts[i].numel() * dtype_size(ts[i].dtype());
    if (bytes == 0) continue;
    size_t d = 0;
    while (d < devices.size() && devices[d] != buf->device()) ++d;
    if (d == devices.size()) {
      devices.push_back(buf->device());
      per_device.emplace_back();
    }
    per_device[d].push_back({buf.get(), dsts[i], bytes});
  }
  support::TraceSpan span("download (waits for the device)");
  for (size_t d = 0; d < devices.size(); ++d)
    if (absl::Status s = devices[d]->download_many(per_device[d]); !s.ok()) throw Error(s);
}

// The realized bytes of `t` downloaded straight into `dst` (numel * dtype size bytes).
void read_into(const Tensor& t, void* dst) {
  t.realize();
  read_many({t}, {dst});
}

// Reads the realized bytes of `t` to the host.
std::vector<uint8_t> read_bytes(const Tensor& t) {
  std::vector<uint8_t> bytes(size_t(t.numel() * dtype_size(t.dtype())));
  read_into(t, bytes.data());
  return bytes;
}

template <typename T>
T convert_element(DType dt, const uint8_t* p) {
  switch (dt) {
    case DType::kBool: return T(*p != 0);
    case DType::kUInt8: return T(*p);
    case DType::kInt8: return T(int8_t(*p));
    case DType::kInt32: { int32_t v; std::memcpy(&v, p, 4); return T(v); }
    case DType::kInt64: { int64_t v; std::memcpy(&v, p, 8); return T(v); }
    case DType::kFloat16: { uint16_t v; std::memcpy(&v, p, 2); return T(ir::half_to_float(v)); }
    case DType::kBFloat16: { uint16_t v; std::memcpy(&v, p, 2); return T(ir::bf16_to_float(v)); }
    case DType::kFloat32: { float v; std::memcpy(&v, p, 4); return T(v); }
    case DType::kFloat64: { double v; std::memcpy(&v, p, 8); return T(v); }
    case DType::kInt16: { int16_t v; std::memcpy(&v, p, 2); return T(v); }
    case DType::kUInt16: { uint16_t v; std::memcpy(&v, p, 2); return T(v); }
    case DType::kUInt32: { uint32_t v; std::memcpy(&v, p, 4); return T(v); }
  }
  return T();
}

template <typename T>
constexpr bool stored_as(DType dt) {
  if constexpr (std::is_same_v<T, float>) return dt == DType::kFloat32;
  if constexpr (std::is_same_v<T, double>) return dt == DType::kFloat64;
  if constexpr (std::is_same_v<T, int32_t>) return dt == DType::kInt32;
  if constexpr (std::is_same_v<T, int64_t>) return dt == DType::kInt64;
  if constexpr (std::is_same_v<T, int8_t>) return dt == DType::kInt8;
  if constexpr (std::is_same_v<T, uint8_t>) return dt == DType::kUInt8;
  if constexpr (std::is_same_v<T, int16_t>) return dt == DType::kInt16;
  if constexpr (std::is_same_v<T, uint16_t>) return dt == DType::kUInt16;
  if constexpr (std::is_same_v<T, uint32_t>) return dt == DType::kUInt32;
  return false;
}

}  // namespace

template <typename T>
std::vector<T> Tensor::to_vector() const {
  check_defined("to_vector");
  return std::move(to_vectors<T>({*this})[0]);
}

// A f16 or bf16 tensor gives its raw 16-bit patterns; any other converts like every T.
template <>
std::vector<uint16_t> Tensor::to_vector<uint16_t>() const {
  check_defined("to_vector");
  if (dtype() != DType::kFloat16 && dtype() != DType::kBFloat16) return std::move(to_vectors<uint16_t>({*this})[0]);
  std::vector<uint8_t> bytes = read_bytes(*this);
  std::vector<uint16_t> out(static_cast<size_t>(numel()));
  std::memcpy(out.data(), bytes.data(), bytes.size());
  return out;
}

template <typename T>
void Tensor::copy_to(T* dst, int64_t count) const {
  check_defined("copy_to");
  if (!stored_as<T>(dtype()))
    throw Error(absl::InvalidArgumentError(absl::StrCat("copy_to: the tensor holds ", dtype_name(dtype()),
                                                        "; copy_to takes its own element type (to_vector converts)")));
  if (count != numel())
    throw Error(absl::InvalidArgumentError(
        absl::StrCat("copy_to: ", count, " elements given for a tensor of ", numel(), " (shape ", shape_str(shape()), ")")));
  if (!dst && count > 0) throw Error(absl::InvalidArgumentError("copy_to: null destination"));
  read_into(*this, dst);
}


template <typename T>
std::vector<std::vector<T>> to_vectors(const std::vector<Tensor>& tensors) {
  for (const Tensor& t : tensors)
    if (!t.defined()) throw Error(absl::InvalidArgumentError("to_vectors: undefined tensor"));
  // The lazy ones realize as one graph per device.
  std::vector<std::vector<Tensor>> lazy;
  for (const Tensor& t : tensors) {
    if (t.is_realized()) continue;
    size_t g = 0;
    while (g < lazy.size() && detail::node_of(lazy[g][0])->device != detail::node_of(t)->device) ++g;
    if (g == lazy.size()) lazy.emplace_back();
    lazy[g].push_back(t);
  }
  for (const auto& group : lazy) realize(group);
  std::vector<std::vector<T>> out(tensors.size());
  // A tensor stored as T downloads into its result; any other is downloaded raw and converted.
  std::vector<std::vector<uint8_t>> raw(tensors.size());
  std::vector<bool> converted(tensors.size());
  std::vector<void*> dsts(tensors.size());
  for (size_t i = 0; i < tensors.size(); ++i) {
    const Tensor& t = tensors[i];
    if constexpr (!std::is_same_v<T, bool>) {  // std::vector<bool> has no data()
      if (stored_as<T>(t.dtype())) {
        out[i].resize(size_t(t.numel()));
        dsts[i] = out[i].data();
        continue;
      }
    }
    converted[i] = true;
    raw[i].resize(size_t(t.numel() * dtype_size(t.dtype())));
    dsts[i] = raw[i].data();
  }
  read_many(tensors, dsts);
  for (size_t i = 0; i < tensors.size(); ++i) {
    if (!converted[i]) continue;
    const DType dt = tensors[i].dtype();
    const int64_t n = tensors[i].numel(), es = dtype_size(dt);
    out[i].resize(size_t(n));
    for (int64_t k = 0; k < n; ++k) out[i][size_t(k)] = convert_element<T>(dt, raw[i].data() + k * es);
  }
  return out;
}

template std::vector<std::vector<float>> to_vectors<float>(const std::vector<Tensor>&);
template std::vector<std::vector<double>> to_vectors<double>(const std::vector<Tensor>&);
template std::vector<std::vector<int32_t>> to_vectors<int32_t>(const std::vector<Tensor>&);
template std::vector<std::vector<int64_t>> to_vectors<int64_t>(const std::vector<Tensor>&);
template std::vector<std::vector<int8_t>> to_vectors<int8_t>(const std::vector<Tensor>&);
template std::vector<std::vector<uint8_t>> to_vectors<uint8_t>(const std::vector<Tensor>&);
template std::vector<std::vector<bool>> to_vectors<bool>(const std::vector<Tensor>&);
template std::vector<std::vector<int16_t>> to_vectors<int16_t>(const std::vector<Tensor>&);
template std::vector<std::vector<uint16_t>> to_vectors<uint16_t>(const std::vector<Tensor>&);
template std::vector<std::vector<uint32_t>> to_vectors<uint32_t>(const std::vector<Tensor>&);

template void Tensor::copy_to<float>(float*, int64_t) const;
template void Tensor::copy_to<double>(double*, int64_t) const;
template void Tensor::copy_to<int32_t>(int32_t*, int64_t) const;
template void Tensor::copy_to<int64_t>(int64_t*, int64_t) const;
template void Tensor::copy_to<int8_t>(int8_t*, int64_t) const;
template void Tensor::copy_to<uint8_t>(uint8_t*, int64_t) const;
template void Tensor::copy_to<int16_t>(int16_t*, int64_t) const;
template void Tensor::copy_to<uint16_t>(uint16_t*, int64_t) const;
template void Tensor::copy_to<uint32_t>(uint32_t*, int64_t) const;

template std::vector<float> Tensor::to_vector<float>() const;
template std::vector<double> Tensor::to_vector<double>() const;
template std::vector<int32_t> Tensor::to_vector<int32_t>() const;
template std::vector<int64_t> Tensor::to_vector<int64_t>() const;
template std::vector<int8_t> Tensor::to_vector<int8_t>() const;
template std::vector<uint8_t> Tensor::to_vector<uint8_t>() const;
template std::vector<bool> Tensor::to_vector<bool>() const;
template std::vector<int16_t> Tensor::to_vector<int16_t>() const;
template std::vector<uint32_t> Tensor::to_vector<uint32_t>() const;

double Tensor::item() const {
  if (numel() != 1)
    throw Error(absl::InvalidArgumentError(
        absl::StrCat("item: tensor of shape ", shape_str(shape()), " has ", numel(), " elements, not 1")));
  return to_vector<double>()[0];
}

Tensor Tensor::to(const Device& device) const {
  check_defined("to");
  if (detail::impl_of(device) == node_->device) return *this;
  std::vector<uint8_t> bytes = read_bytes(*this);
  auto buf = detail::impl_of(device)->alloc(int64_t(bytes.size()));
  if (!buf.ok()) throw Error(buf.status());
  absl::Status s = detail::impl_of(device)->upload(buf->get(), bytes.data(), int64_t(bytes.size()));
  if (!s.ok()) throw Error(s);
  return detail::from_buffer(*std::move(buf), dtype(), shape());
}

}  // namespace kiln

// NodeContext: inputs, attributes with defaults, outputs and errors that name the node.
#include "frontend/onnx/context.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace kiln::onnx {

Tensor to_tensor(const HostTensor& h, const Device& device) {
  int64_t n = h.numel();
  auto copy = [&](auto* tag) {
    using T = std::remove_pointer_t<decltype(tag)>;
    std::vector<T> v(static_cast<size_t>(n));
    if (n) std::memcpy(v.data(), h.bytes.data(), size_t(n) * sizeof(T));
    return from_vector<T>(v, h.shape, device);
  };
  switch (h.dtype) {
    case DType::kFloat32: return copy((float*)nullptr);
    case DType::kFloat64: return copy((double*)nullptr);
    case DType::kInt32: return copy((int32_t*)nullptr);
    case DType::kInt64: return copy((int64_t*)nullptr);
    case DType::kInt8: return copy((int8_t*)nullptr);
    case DType::kUInt8: return copy((uint8_t*)nullptr);
    case DType::kInt16: return copy((int16_t*)nullptr);
    case DType::kUInt16: return copy((uint16_t*)nullptr);
    case DType::kUInt32: return copy((uint32_t*)nullptr);
    case DType::kBool: {
      std::vector<uint8_t> v(h.bytes.begin(), h.bytes.end());
      return from_vector<uint8_t>(v, h.shape, DType::kBool, device);
    }
    case DType::kFloat16:
    case DType::kBFloat16: {
      std::vector<float> v(static_cast<size_t>(n));
      for (int64_t i = 0; i < n; ++i) v[size_t(i)] = float(h.double_at(i));
      return from_vector<float>(v, h.shape, h.dtype, device);
    }
  }
  return {};
}

const Value& NodeContext::value(size_t i) const {
  if (!has_input(i)) invalid(absl::StrCat("input ", i, " is required"));
  return *inputs_[i];
}

Tensor NodeContext::in(size_t i) {
  const Value& v = value(i);
  if (!v.tensor.defined()) inputs_[i]->tensor = to_tensor(*v.host, device_);
  return inputs_[i]->tensor;
}

const HostTensor& NodeContext::host(size_t i, const std::string& what) const {
  const Value& v = value(i);
  if (!v.host)
    unsupported(absl::StrCat(what, " (input ", i, " '", node_.inputs[i],
                             "') must be known when the model is imported (a constant, an initializer, or computed from shapes); "
                             "here it is computed at run time"));
  return *v.host;
}

const Attribute* NodeContext::find(const std::string& name, Attribute::Kind kind) const {
  auto it = node_.attributes.find(name);
  if (it == node_.attributes.end()) return nullptr;
  if (it->second.kind != kind) invalid(absl::StrCat("attribute '", name, "' has type ", it->second.type_name));
  return &it->second;
}

int64_t NodeContext::attr_int(const std::string& name, int64_t fallback) const {
  const Attribute* a = find(name, Attribute::Kind::kInt);
  return a ? a->i : fallback;
}
double NodeContext::attr_float(const std::string& name, double fallback) const {
  const Attribute* a = find(name, Attribute::Kind::kFloat);
  return a ? a->f : fallback;
}
std::string NodeContext::attr_string(const std::string& name, const std::string& fallback) const {
  const Attribute* a = find(name, Attribute::Kind::kString);
  return a ? a->s : fallback;
}
std::vector<int64_t> NodeContext::attr_ints(const std::string& name, std::vector<int64_t> fallback) const {
  const Attribute* a = find(name, Attribute::Kind::kInts);
  return a ? a->ints : fallback;
}
std::vector<double> NodeContext::attr_floats(const std::string& name, std::vector<double> fallback) const {
  const Attribute* a = find(name, Attribute::Kind::kFloats);
  return a ? a->floats : fallback;
}
const HostTensor& NodeContext::attr_tensor(const std::string& name) const {
  const Attribute* a = find(name, Attribute::Kind::kTensor);
  if (!a) invalid(absl::StrCat("attribute '", name, "' is required"));
  if (!a->t) throw ImportError{a->tensor_error};  // its message names the node already
  return *a->t;
}

void NodeContext::set(size_t i, Tensor t) {
  if (i >= outputs_->size()) return;
  Value& v = (*outputs_)[i];
  v.dtype = t.dtype();
  v.shape = t.shape();
  v.tensor = std::move(t);
  v.host = nullptr;
}

void NodeContext::set_host(size_t i, HostTensor h) {
  if (i >= outputs_->size()) return;
  Value& v = (*outputs_)[i];
  v.dtype = h.dtype;
  v.shape = h.shape;
  v.tensor = Tensor();
  v.host = std::make_shared<const HostTensor>(std::move(h));
}

void NodeContext::set_value(size_t i, Value v) {
  if (i < outputs_->size()) (*outputs_)[i] = std::move(v);
}

const Graph& NodeContext::attr_graph(const std::string& name) const {
  const Attribute* a = find(name, Attribute::Kind::kGraph);
  if (!a || !a->g) invalid(absl::StrCat("attribute '", name, "' is required"));
  return *a->g;
}

std::vector<Value> NodeContext::run_subgraph(const Graph& g, const std::vector<Value>& inputs) const {
  if (!runner_) unsupported("subgraphs are not supported here");
  if (inputs.size() != g.inputs.size()) invalid(absl::StrCat("the subgraph takes ", g.inputs.size(), " inputs, given ", inputs.size()));
  return runner_(g, inputs);
}

void NodeContext::unsupported(const std::string& message) const {
  throw ImportError{absl::UnimplementedError(absl::StrCat(label(), ": ", message))};
}
void NodeContext::invalid(const std::string& message) const {
  throw ImportError{absl::InvalidArgumentError(absl::StrCat(label(), ": ", message))};
}

int64_t NodeContext::axis(int64_t a, int64_t rank, const std::string& what) const {
  if (a < -rank || a >= rank) invalid(absl::StrCat(what, " ", a, " is out of range for rank ", rank));
  return a < 0 ? a + rank : a;
}

void NodeContext::require_dtype(size_t i, std::initializer_list<DType> allowed) const {
  DType t = dtype(i);
  for (DType a : allowed)
    if (a == t) return;
  std::string names;
  for (DType a : allowed) absl::StrAppend(&names, names.empty() ? "" : ", ", dtype_name(a));
  unsupported(absl::StrCat("input ", i, " has dtype ", dtype_name(t), "; kiln supports ", names, " here"));
}

std::optional<std::vector<int64_t>> NodeContext::moved_operand(size_t i, const std::string& attr, int64_t since) const {
  if (opset_ < since) {
    if (has_input(i)) invalid(absl::StrCat("input ", i, " is an attribute ('", attr, "') before opset ", since));
    if (!has_attr(attr)) return std::nullopt;
    return attr_ints(attr);
  }
  if (has_attr(attr)) invalid(absl::StrCat("'", attr, "' is an input from opset ", since, ", not an attribute"));
  if (!has_input(i)) return std::nullopt;
  return host_ints(i, attr);
}

}  // namespace kiln::onnx

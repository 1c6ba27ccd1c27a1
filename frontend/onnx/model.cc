// kiln::onnx::Model (kiln/onnx.h): parse and check at load, upload the initializers, build once
// with placeholder inputs when every input shape is static (so load reports every import
// error), then one kiln::Jit per distinct set of value-input values.
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "frontend/onnx/builder.h"
#include "frontend/onnx/ops.h"
#include "frontend/onnx/parse.h"
#include "kiln/onnx.h"

namespace kiln::onnx {

struct Model::Impl {
  std::string origin;
  Graph graph;
  Device device;
  std::map<std::string, Value> initializers;
  std::vector<ValueSpec> inputs, outputs;
  mutable std::mutex mu;
  mutable std::map<std::string, std::unique_ptr<Jit>> jits;  // by the values of the value inputs

  [[noreturn]] void fail(const std::string& m) const { throw Error(absl::InvalidArgumentError(absl::StrCat(origin, ": ", m))); }
  std::vector<Tensor> build(const std::vector<Tensor>& in, const std::vector<std::shared_ptr<const HostTensor>>& values) const;
};

namespace {

[[noreturn]] void rethrow_with(const std::string& origin, const Error& e) {
  throw Error(absl::Status(e.status().code(), absl::StrCat(origin, ": ", e.status().message())));
}

HostTensor read_host(const Tensor& t) {
  HostTensor h = HostTensor::zeros(t.dtype(), t.shape());
  auto copy = [&](auto v) {
    if (!v.empty()) std::memcpy(h.bytes.data(), v.data(), h.bytes.size());
  };
  switch (t.dtype()) {
    case DType::kFloat32: copy(t.to_vector<float>()); break;
    case DType::kFloat64: copy(t.to_vector<double>()); break;
    case DType::kInt32: copy(t.to_vector<int32_t>()); break;
    case DType::kInt64: copy(t.to_vector<int64_t>()); break;
    case DType::kInt8: copy(t.to_vector<int8_t>()); break;
    case DType::kInt16: copy(t.to_vector<int16_t>()); break;
    case DType::kUInt16: copy(t.to_vector<uint16_t>()); break;
    case DType::kUInt32: copy(t.to_vector<uint32_t>()); break;
    case DType::kUInt8:
    case DType::kBool: copy(t.to_vector<uint8_t>()); break;
    case DType::kFloat16:
    case DType::kBFloat16: copy(t.to_vector<uint16_t>()); break;
  }
  return h;
}

}  // namespace

std::vector<Tensor> Model::Impl::build(const std::vector<Tensor>& in, const std::vector<std::shared_ptr<const HostTensor>>& values) const {
  std::vector<Value> vs;
  for (size_t i = 0; i < in.size(); ++i) vs.push_back(Value{in[i].dtype(), in[i].shape(), in[i], values[i]});
  try {
    return build_graph(graph, initializers, vs, device);
  } catch (const Error& e) {
    rethrow_with(origin, e);
  }
}

namespace {

std::shared_ptr<const Model::Impl> make_model(const std::string& bytes, const Device& device, const std::string& origin,
                                              const std::string& base_dir) {
  auto g = parse_model(bytes, origin, base_dir);
  throw_if_error(g.status());
  if (absl::Status s = check_supported(*g); !s.ok()) throw Error(absl::Status(s.code(), absl::StrCat(origin, ": ", s.message())));
  auto m = std::make_shared<Model::Impl>();
  m->origin = origin;
  m->graph = *std::move(g);
  m->device = device;
  std::vector<bool> value = value_inputs(m->graph);
  for (size_t i = 0; i < m->graph.inputs.size(); ++i) {
    const ValueInfo& v = m->graph.inputs[i];
    if (!v.has_shape)
      throw Error(absl::UnimplementedError(absl::StrCat(origin, ": input '", v.name, "' has no shape (kiln needs at least its rank)")));
    m->inputs.push_back({v.name, v.dtype, v.shape, bool(value[i])});
  }
  for (const ValueInfo& v : m->graph.outputs) m->outputs.push_back({v.name, v.dtype, v.shape, false});
  // Small initializers stay on the host (the folder reads them; they are uploaded when a device
  // op uses them); large ones are uploaded once, here.
  for (auto& [name, h] : m->graph.initializers) {
    Value v{h.dtype, h.shape, Tensor(), nullptr};
    if (h.numel() <= kFoldLimit) v.host = std::make_shared<const HostTensor>(h);
    else v.tensor = to_tensor(h, device);
    m->initializers[name] = std::move(v);
  }
  m->graph.initializers.clear();
  // Every input shape static and no value inputs: build once now, so load reports what a call would.
  bool static_shapes = true;
  for (const ValueSpec& s : m->inputs) {
    static_shapes = static_shapes && !s.value_input;
    for (int64_t d : s.shape) static_shapes = static_shapes && d >= 0;
  }
  if (static_shapes) {
    std::vector<Tensor> placeholders;
    for (const ValueSpec& s : m->inputs) placeholders.push_back(zeros(s.shape, s.dtype, device));
    m->build(placeholders, std::vector<std::shared_ptr<const HostTensor>>(placeholders.size()));
  }
  return m;
}

}  // namespace

Model load_bytes(const std::string& bytes, const Device& device, const std::string& origin) {
  return Model(make_model(bytes, device, origin, ""));
}

Model load(const std::string& path, const Device& device) {
  std::ifstream f(path, std::ios::binary);
  if (!f) throw Error(absl::NotFoundError(absl::StrCat(path, ": cannot open")));
  std::stringstream ss;
  ss << f.rdbuf();
  // External data is looked for beside the model file.
  std::string dir = std::filesystem::path(path).parent_path().string();
  return Model(make_model(ss.str(), device, path, dir.empty() ? "." : dir));
}

Model load(const std::string& path) { return onnx::load(path, default_device()); }

std::vector<Tensor> Model::operator()(const std::vector<Tensor>& inputs) const {
  if (!impl_) throw Error(absl::FailedPreconditionError("kiln::onnx::Model: not loaded (use kiln::onnx::load)"));
  const Impl& m = *impl_;
  if (inputs.size() != m.inputs.size()) m.fail(absl::StrCat("the model takes ", m.inputs.size(), " inputs, got ", inputs.size()));
  std::vector<std::shared_ptr<const HostTensor>> values(inputs.size());
  std::string key;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const ValueSpec& want = m.inputs[i];
    const Tensor& t = inputs[i];
    if (!t.defined()) m.fail(absl::StrCat("input '", want.name, "' is an undefined tensor"));
    bool ok = t.dtype() == want.dtype && t.shape().size() == want.shape.size();
    for (size_t d = 0; ok && d < want.shape.size(); ++d) ok = want.shape[d] < 0 || want.shape[d] == t.shape()[d];
    if (!ok)
      m.fail(absl::StrCat("input '", want.name, "' is ", dtype_name(t.dtype()), shape_str(t.shape()), "; the model takes ",
                          dtype_name(want.dtype), shape_str(want.shape)));
    if (t.device() != m.device) m.fail(absl::StrCat("input '", want.name, "' is on ", t.device().name(), "; the model was loaded on ", m.device.name()));
    if (want.value_input) {
      values[i] = std::make_shared<const HostTensor>(read_host(t));
      absl::StrAppend(&key, i, ":", shape_str(t.shape()), ":", dtype_name(t.dtype()), ":", values[i]->bytes.size(), ":");
      key += values[i]->bytes;
    }
  }
  if (inputs.empty()) {
    std::vector<Tensor> outs = m.build({}, {});
    realize(outs);
    return outs;
  }
  const Jit* jit;
  {
    std::lock_guard<std::mutex> lock(m.mu);
    auto& slot = m.jits[key];
    if (!slot) {
      const Impl* self = &m;
      slot = std::make_unique<Jit>([self, values](const std::vector<Tensor>& in) { return self->build(in, values); });
    }
    jit = slot.get();
  }
  return (*jit)(inputs);
}

std::vector<Tensor> Model::operator()(const std::map<std::string, Tensor>& inputs) const {
  if (!impl_) throw Error(absl::FailedPreconditionError("kiln::onnx::Model: not loaded (use kiln::onnx::load)"));
  const Impl& m = *impl_;
  for (const auto& [name, t] : inputs) {
    bool known = false;
    for (const ValueSpec& s : m.inputs) known = known || s.name == name;
    if (!known) {
      std::string names;
      for (const ValueSpec& s : m.inputs) absl::StrAppend(&names, names.empty() ? "" : ", ", s.name);
      m.fail(absl::StrCat("the model has no input named '", name, "' (its inputs: ", names, ")"));
    }
  }
  std::vector<Tensor> ordered;
  for (const ValueSpec& s : m.inputs) {
    auto it = inputs.find(s.name);
    if (it == inputs.end()) m.fail(absl::StrCat("the input '", s.name, "' is missing"));
    ordered.push_back(it->second);
  }
  return (*this)(ordered);
}

const std::vector<ValueSpec>& Model::inputs() const { return impl_->inputs; }
const std::vector<ValueSpec>& Model::outputs() const { return impl_->outputs; }
int64_t Model::opset() const { return impl_->graph.opset; }
Device Model::device() const { return impl_->device; }

Jit::Fn Model::function() const {
  if (!impl_) throw Error(absl::FailedPreconditionError("kiln::onnx::Model: not loaded (use kiln::onnx::load)"));
  std::shared_ptr<const Impl> m = impl_;
  for (const ValueSpec& s : m->inputs)
    if (s.value_input)
      m->fail(absl::StrCat("input '", s.name, "' decides shapes by its values; the model cannot be traced without them"));
  return [m](const std::vector<Tensor>& in) {
    return m->build(in, std::vector<std::shared_ptr<const HostTensor>>(in.size()));
  };
}

}  // namespace kiln::onnx

// kiln::Model (kiln/model.h): an artifact's section loaded on a device, replayed through the
// JIT's own run path (replay::run_compiled), so a model call is a JIT replay without the trace.
#include "kiln/model.h"

#include "absl/strings/str_cat.h"
#include "artifact/artifact.h"
#include "artifact/load.h"
#include "frontend/lazy.h"
#include "frontend/model_loader.h"
#include "replay/compile_or_replay.h"

namespace kiln {

struct Model::Impl {
  std::string path;
  std::string target;
  replay::CompiledGraph compiled;
  std::vector<int> input_position;  // graph input position of each signature input (-1: unused)
  std::vector<int> constant_position;
  std::vector<std::shared_ptr<runtime::Buffer>> constants;
  std::vector<TensorInfo> inputs, outputs;
  int num_positions = 0;

  [[noreturn]] void fail(const std::string& m) const { throw Error(absl::InvalidArgumentError(absl::StrCat(path, ": ", m))); }
};

Model detail::load_model(const artifact::Artifact& art, runtime::Device* dev, const std::string& origin) {
  auto loaded = artifact::load(art, dev);
  if (!loaded.ok()) throw Error(absl::Status(loaded.status().code(), absl::StrCat(origin, ": ", loaded.status().message())));
  auto m = std::make_shared<Model::Impl>();
  m->path = origin;
  m->target = loaded->section->label();
  m->compiled.device = dev;
  m->compiled.exe = std::move(loaded->executable);
  m->compiled.buffers = loaded->section->program.buffers;
  m->compiled.outputs = loaded->section->program.outputs;
  m->num_positions = loaded->section->program.num_inputs;
  const ir::ExportedGraph& g = art.graph;
  m->input_position = g.input_positions();
  m->constant_position = g.constant_positions();
  for (const ir::ConstantData& c : g.constants) {
    auto buf = dev->alloc(int64_t(c.bytes.size()));
    throw_if_error(buf.status());
    throw_if_error(dev->upload(buf->get(), c.bytes.data(), int64_t(c.bytes.size())));
    m->constants.push_back(*std::move(buf));
  }
  for (const ir::TensorSpec& t : g.signature.inputs) m->inputs.push_back({t.name, t.dtype, t.shape});
  for (const ir::TensorSpec& t : g.signature.outputs) m->outputs.push_back({t.name, t.dtype, t.shape});
  return detail::Access::model(std::move(m));
}

Model load(const std::string& path, const Device& device) {
  auto art = artifact::read_file(path);
  throw_if_error(art.status());
  return detail::load_model(*art, detail::impl_of(device), path);
}

Model load(const std::string& path) { return load(path, default_device()); }

std::vector<Tensor> Model::operator()(const std::vector<Tensor>& inputs) const {
  if (!impl_) throw Error(absl::FailedPreconditionError("kiln::Model: not loaded (use kiln::load)"));
  const Impl& m = *impl_;
  if (inputs.size() != m.inputs.size())
    m.fail(absl::StrCat("the model takes ", m.inputs.size(), " inputs, got ", inputs.size()));
  for (size_t i = 0; i < inputs.size(); ++i) {
    const TensorInfo& want = m.inputs[i];
    const Tensor& t = inputs[i];
    if (t.dtype() != want.dtype || t.shape() != want.shape)
      m.fail(absl::StrCat("input '", want.name, "' is ", dtype_name(t.dtype()), shape_str(t.shape()), "; the model takes ",
                          dtype_name(want.dtype), shape_str(want.shape)));
    if (detail::node_of(t)->device != m.compiled.device)
      m.fail(absl::StrCat("input '", want.name, "' is on ", t.device().name(), "; the model was loaded on ", m.compiled.device->name()));
  }
  realize(inputs);
  std::vector<std::shared_ptr<runtime::Buffer>> bound(size_t(m.num_positions));
  for (size_t i = 0; i < inputs.size(); ++i)
    if (m.input_position[i] >= 0) bound[size_t(m.input_position[i])] = detail::node_of(inputs[i])->buffer;
  for (size_t k = 0; k < m.constants.size(); ++k) bound[size_t(m.constant_position[k])] = m.constants[k];
  auto outs = replay::run_compiled(m.compiled, bound);
  throw_if_error(outs.status());
  std::vector<Tensor> result;
  for (size_t k = 0; k < outs->size(); ++k) result.push_back(detail::from_buffer((*outs)[k], m.outputs[k].dtype, m.outputs[k].shape));
  return result;
}

std::vector<Tensor> Model::operator()(const std::map<std::string, Tensor>& inputs) const {
  if (!impl_) throw Error(absl::FailedPreconditionError("kiln::Model: not loaded (use kiln::load)"));
  const Impl& m = *impl_;
  std::vector<Tensor> ordered;
  for (const auto& [name, t] : inputs) {
    bool known = false;
    for (const TensorInfo& want : m.inputs) known = known || want.name == name;
    if (!known) {
      std::string names;
      for (const TensorInfo& w : m.inputs) absl::StrAppend(&names, names.empty() ? "" : ", ", w.name);
      m.fail(absl::StrCat("the model has no input named '", name, "' (its inputs: ", names, ")"));
    }
  }
  for (const TensorInfo& want : m.inputs) {
    auto it = inputs.find(want.name);
    if (it == inputs.end()) m.fail(absl::StrCat("the input '", want.name, "' is missing"));
    ordered.push_back(it->second);
  }
  return (*this)(ordered);
}

const std::vector<TensorInfo>& Model::inputs() const { return impl_->inputs; }
const std::vector<TensorInfo>& Model::outputs() const { return impl_->outputs; }
std::string Model::target() const { return impl_->target; }
Device Model::device() const { return detail::Access::device(impl_->compiled.device); }

}  // namespace kiln

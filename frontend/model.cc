// kiln::Model (kiln/model.h): an artifact's section loaded on a device, replayed through the
// JIT's own run path (replay::run_compiled), so a model call is a JIT replay without the trace.
#include "kiln/model.h"

#include <algorithm>
#include <cstdio>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "artifact/artifact.h"
#include "artifact/load.h"
#include "artifact/symbolic.h"
#include "artifact/targets.h"
#include "frontend/lazy.h"
#include "frontend/model_loader.h"
#include "replay/compile_or_replay.h"
#include "replay/shared_sizes.h"
#include "runtime/compile_cache.h"
#include "runtime/registry.h"
#include "runtime/stats.h"
#include "support/options.h"

namespace kiln {

namespace {

// The executables of a symbolic model's sizes other than the base (the most recent first).
constexpr size_t kModelSizes = 16;

struct SizeExe {
  std::vector<int64_t> values;
  std::shared_ptr<const replay::CompiledGraph> compiled;
  std::vector<Shape> out_shapes;
};

}  // namespace

struct Model::Impl {
  std::string path;
  std::string target;
  replay::CompiledGraph compiled;  // at the base sizes
  // Symbolic dimensions: the graph (constants' bytes dropped: they are on the device), the
  // section's template and binaries, the compiler of its target, the sizes loaded so far.
  ir::ExportedGraph graph;
  artifact::TargetSection section;
  std::shared_ptr<const runtime::Compiler> compiler;
  mutable std::mutex mu;
  mutable std::vector<SizeExe> sizes;
  mutable replay::SharedSizes shared;  // the sizes' executables (one, resized per size, on CUDA)

  // The executable and output shapes for inputs of `shapes` (symbolic models; throws for inputs
  // that do not fit the signature).
  SizeExe at(const std::vector<int64_t>& values) const;
  std::vector<Scalar> params(const std::vector<int64_t>& values) const {
    std::vector<Scalar> p;
    for (int64_t v : values) p.push_back(Scalar::from_int(v));
    return p;
  }
  std::vector<int> input_position;  // graph input position of each signature input (-1: unused)
  std::vector<int> constant_position;
  std::vector<std::shared_ptr<runtime::Buffer>> constants;
  std::vector<TensorInfo> inputs, outputs;
  int num_positions = 0;

  [[noreturn]] void fail(const std::string& m) const { throw Error(absl::InvalidArgumentError(absl::StrCat(path, ": ", m))); }
};

namespace {

TensorInfo info(const ir::ExportedGraph& g, bool input, size_t i) {
  const ir::TensorSpec& t = input ? g.signature.inputs[i] : g.signature.outputs[i];
  TensorInfo r{t.name, t.dtype, t.shape, {}};
  const ir::SymField::Kind kind = input ? ir::SymField::kInputDim : ir::SymField::kOutputDim;
  for (const ir::SymField& f : g.symbols.fields)
    if (f.kind == kind && f.index == int(i)) {
      r.dims.resize(t.shape.size());
      r.dims[size_t(f.slot)] = f.expr.str(g.symbols.names);
    }
  return r;
}

}  // namespace

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
  for (size_t i = 0; i < g.signature.inputs.size(); ++i) m->inputs.push_back(info(g, true, i));
  for (size_t i = 0; i < g.signature.outputs.size(); ++i) m->outputs.push_back(info(g, false, i));
  // The signature (and a symbolic model's template); the constants' bytes are on the device only.
  m->graph.signature = g.signature;
  m->graph.symbols = g.symbols;
  if (!g.symbols.empty()) m->graph.graph = g.graph;
  for (const ir::ConstantData& c : g.constants) m->graph.constants.push_back({c.dtype, c.shape, {}});
  if (!g.symbols.empty()) {
    m->compiled.params = loaded->section->program.params;
    m->section.backend = loaded->section->backend;
    m->section.profile = loaded->section->profile;
    m->section.code = loaded->section->code;
    m->section.binaries = loaded->section->binaries;
    m->section.fusion = loaded->section->fusion;
    if (m->section.profile.empty()) {
      auto c = runtime::compiler_for(dev);
      throw_if_error(c.status());
      m->compiler = *std::move(c);
    } else {
      auto info = artifact::resolve({m->section.backend, m->section.profile});
      throw_if_error(info.status());
      auto c = runtime::make_compiler(m->section.backend, *info);
      throw_if_error(c.status());
      m->compiler = std::shared_ptr<const runtime::Compiler>(std::move(*c));
    }
  }
  return detail::Access::model(std::move(m));
}

SizeExe Model::Impl::at(const std::vector<int64_t>& values) const {
  std::lock_guard<std::mutex> lock(mu);
  for (size_t i = 0; i < sizes.size(); ++i)
    if (sizes[i].values == values) {
      std::rotate(sizes.begin(), sizes.begin() + long(i), sizes.begin() + long(i) + 1);
      return sizes[0];
    }
  auto shaped = ir::instantiate(graph, values);
  if (!shaped.ok()) fail(std::string(shaped.status().message()));
  const int64_t compiled_before = runtime::counters().kernels_compiled;
  absl::StatusOr<runtime::CompiledProgram> program;
  {
    runtime::ProvideBinaries provide(&section.binaries);
    runtime::RememberBinaries remember;
    program = artifact::compile_at(shaped->graph, values, *compiler, section.code, section.fusion);
  }
  throw_if_error(program.status());
  auto exe = shared.load(this->compiled.device, *program);
  throw_if_error(exe.status());
  const int64_t own = runtime::counters().kernels_compiled - compiled_before;
  if (own > 0 && support::debug_level() >= 1) {
    std::string s;
    for (size_t k = 0; k < values.size(); ++k) absl::StrAppend(&s, k ? ", " : "", graph.symbols.names[k], "=", values[k]);
    std::fprintf(stderr, "kiln: model %s: %s compiled %lld kernel(s) of its own (it plans other code than the template)\n",
                 path.c_str(), s.c_str(), (long long)own);
  }
  auto c = std::make_shared<replay::CompiledGraph>();
  c->device = this->compiled.device;
  c->exe = *std::move(exe);
  c->buffers = program->buffers;
  c->outputs = program->outputs;
  c->params = program->params;
  SizeExe e{values, std::move(c), {}};
  for (const ir::TensorSpec& t : shaped->signature.outputs) e.out_shapes.push_back(t.shape);
  sizes.insert(sizes.begin(), e);
  if (sizes.size() > kModelSizes) sizes.pop_back();
  return e;
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
    if (t.dtype() != want.dtype || (t.shape() != want.shape && m.graph.symbols.empty()))
      m.fail(absl::StrCat("input '", want.name, "' is ", dtype_name(t.dtype()), shape_str(t.shape()), "; the model takes ",
                          ir::sym_type_str(m.graph, true, int(i))));
    if (detail::node_of(t)->device != m.compiled.device)
      m.fail(absl::StrCat("input '", want.name, "' is on ", t.device().name(), "; the model was loaded on ", m.compiled.device->name()));
  }
  // A symbolic model runs the executable of the inputs' sizes (the base one when they are those).
  const replay::CompiledGraph* run = &m.compiled;
  std::vector<Scalar> params;
  std::vector<Shape> out_shapes;
  for (const TensorInfo& o : m.outputs) out_shapes.push_back(o.shape);
  SizeExe sized;
  if (!m.graph.symbols.empty()) {
    std::vector<Shape> shapes;
    for (const Tensor& t : inputs) shapes.push_back(t.shape());
    auto values = ir::bind_symbols(m.graph, shapes);
    if (!values.ok()) m.fail(std::string(values.status().message()));
    params = m.params(*values);
    if (*values != m.graph.symbols.base) {
      sized = m.at(*values);
      run = sized.compiled.get();
      out_shapes = sized.out_shapes;
    }
  }
  realize(inputs);
  std::vector<std::shared_ptr<runtime::Buffer>> bound(size_t(m.num_positions));
  for (size_t i = 0; i < inputs.size(); ++i)
    if (m.input_position[i] >= 0) bound[size_t(m.input_position[i])] = detail::node_of(inputs[i])->buffer;
  for (size_t k = 0; k < m.constants.size(); ++k) bound[size_t(m.constant_position[k])] = m.constants[k];
  auto outs = replay::run_compiled(*run, bound, params);
  throw_if_error(outs.status());
  std::vector<Tensor> result;
  for (size_t k = 0; k < outs->size(); ++k) result.push_back(detail::from_buffer((*outs)[k], m.outputs[k].dtype, out_shapes[k]));
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

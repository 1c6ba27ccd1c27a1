// kiln::jit: per-signature traces replayed through replay::run_compiled.
#include "kiln/jit.h"

#include <mutex>

#include "absl/strings/str_cat.h"
#include "frontend/capture.h"
#include "frontend/lazy.h"
#include "replay/compile_or_replay.h"

namespace kiln {

namespace {

struct Signature {
  runtime::Device* device;
  std::vector<DType> dtypes;
  std::vector<Shape> shapes;
  std::vector<int> alias;  // index of the first argument sharing this argument's buffer
  bool operator==(const Signature& o) const {
    return device == o.device && dtypes == o.dtypes && shapes == o.shapes && alias == o.alias;
  }
};

struct Trace {
  Signature sig;
  std::shared_ptr<const replay::CompiledGraph> compiled;
  // Source of each graph input: an argument index, or (when < 0) a captured buffer.
  std::vector<int> from_arg;
  std::vector<std::shared_ptr<runtime::Buffer>> captured;  // parallel to from_arg
  std::vector<DType> out_dtypes;
  std::vector<Shape> out_shapes;
};

}  // namespace

struct Jit::Impl {
  Fn fn;
  mutable std::mutex mu;
  std::vector<std::shared_ptr<Trace>> traces;
};

Jit::Jit(Fn fn) : impl_(std::make_shared<Impl>()) { impl_->fn = std::move(fn); }

const Jit::Fn& Jit::function() const { return impl_->fn; }

int Jit::traces() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return int(impl_->traces.size());
}

std::vector<Tensor> Jit::operator()(const std::vector<Tensor>& inputs) const {
  if (inputs.empty()) throw Error(absl::InvalidArgumentError("jit: needs at least one input tensor"));
  runtime::Device* dev = detail::common_device("jit", inputs);
  bool lazy = false;
  for (const Tensor& t : inputs) lazy = lazy || !t.is_realized();
  if (lazy) realize(inputs);
  Signature sig{dev, {}, {}, {}};
  std::vector<std::shared_ptr<runtime::Buffer>> bufs;
  for (size_t i = 0; i < inputs.size(); ++i) {
    sig.dtypes.push_back(inputs[i].dtype());
    sig.shapes.push_back(inputs[i].shape());
    bufs.push_back(detail::node_of(inputs[i])->buffer);
    int first = int(i);
    for (size_t j = 0; j < i; ++j)
      if (bufs[j] == bufs[i]) {
        first = int(j);
        break;
      }
    sig.alias.push_back(first);
  }
  std::shared_ptr<Trace> trace;
  {
    std::lock_guard<std::mutex> lock(impl_->mu);
    for (const auto& t : impl_->traces)
      if (t->sig == sig) trace = t;
  }
  if (!trace) {
    trace = std::make_shared<Trace>();
    trace->sig = sig;
    std::vector<Tensor> outs = impl_->fn(inputs);
    if (outs.empty()) throw Error(absl::InvalidArgumentError("jit: the traced function returned no tensors"));
    detail::common_device("jit", outs);
    std::vector<std::shared_ptr<runtime::Buffer>> graph_inputs;
    ir::Graph g = detail::capture(outs, &graph_inputs);
    for (const auto& b : graph_inputs) {
      int arg = -1;
      for (size_t i = 0; i < bufs.size() && arg < 0; ++i)
        if (bufs[i] == b) arg = int(i);
      trace->from_arg.push_back(arg);
      trace->captured.push_back(arg < 0 ? b : nullptr);
    }
    for (const Tensor& t : outs) {
      trace->out_dtypes.push_back(t.dtype());
      trace->out_shapes.push_back(t.shape());
    }
    auto c = replay::compile_graph(dev, g);
    if (!c.ok()) throw Error(c.status());
    trace->compiled = *c;
    std::lock_guard<std::mutex> lock(impl_->mu);
    impl_->traces.push_back(trace);
  }
  std::vector<std::shared_ptr<runtime::Buffer>> in(trace->from_arg.size());
  for (size_t k = 0; k < in.size(); ++k) in[k] = trace->from_arg[k] >= 0 ? bufs[trace->from_arg[k]] : trace->captured[k];
  auto outs = replay::run_compiled(*trace->compiled, in);
  if (!outs.ok()) throw Error(outs.status());
  std::vector<Tensor> result;
  result.reserve(outs->size());
  for (size_t k = 0; k < outs->size(); ++k)
    result.push_back(detail::from_buffer((*outs)[k], trace->out_dtypes[k], trace->out_shapes[k]));
  return result;
}

}  // namespace kiln

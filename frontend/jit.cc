// kiln::jit: per-signature traces replayed through replay::run_compiled; symbolic dims share one
// compiled code across sizes (passes/symbolic.h).
#include "kiln/jit.h"

#include <algorithm>
#include <cstdio>
#include <future>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "frontend/capture.h"
#include "frontend/lazy.h"
#include "ir/params.h"
#include "replay/compile_or_replay.h"
#include "runtime/stats.h"
#include "support/options.h"

namespace kiln {

namespace {

struct Signature {
  runtime::Device* device;
  std::vector<DType> dtypes;
  std::vector<Shape> shapes;  // a family's signature has -1 at its symbolic dims
  std::vector<int> alias;  // index of the first argument sharing this argument's buffer
  bool operator==(const Signature& o) const {
    return device == o.device && dtypes == o.dtypes && shapes == o.shapes && alias == o.alias;
  }
};

struct Trace {
  Signature sig;
  std::shared_ptr<const replay::CompiledGraph> compiled;
  // A family's size holds its executable weakly: the bounded executable cache owns it, and a size
  // it evicted is planned and loaded again (its code stays in memory) on its next call.
  std::weak_ptr<const replay::CompiledGraph> weak;
  // Source of each graph input: an argument index, or (when < 0) a captured buffer.
  std::vector<int> from_arg;
  std::vector<std::shared_ptr<runtime::Buffer>> captured;  // parallel to from_arg
  std::vector<DType> out_dtypes;
  std::vector<Shape> out_shapes;
  std::vector<Scalar> params;  // the values a run passes: the symbols' sizes (families only)
};

// The traces of one signature up to the sizes of its symbolic dims (the most recent ones).
constexpr size_t kFamilySizes = 16;
struct Family {
  Signature sig;
  std::mutex mu;  // one trace of the family at a time (the first derives the template)
  bool tried = false;
  std::shared_ptr<const replay::SymbolicCode> code;  // null when it could not be derived
  // The base probe size's graph and sizes: its code is what the sizes after the first share,
  // compiled beside the first call's own.
  ir::Graph base;
  std::vector<int64_t> base_values;
  std::vector<std::pair<std::vector<int64_t>, std::shared_ptr<Trace>>> sizes;  // most recent first
};

std::string dims_str(const std::vector<Dim>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) absl::StrAppend(&s, i ? "," : "", d[i].symbolic() ? d[i].name() : std::to_string(d[i].size()));
  return s + "]";
}

}  // namespace

struct Jit::Impl {
  Fn fn;
  InputDims dims;
  std::vector<std::string> symbols;  // names in order of first appearance in dims
  mutable std::mutex mu;
  std::vector<std::shared_ptr<Trace>> traces;
  std::vector<std::shared_ptr<Family>> families;
  int traced = 0;

  // The size of each symbol in this call (InvalidArgument for inputs that do not fit `dims`).
  absl::StatusOr<std::vector<int64_t>> bind(const std::vector<Shape>& shapes) const;
  // `sig` with -1 at the symbolic dims.
  Signature abstract(Signature sig) const;
  // Runs fn on `inputs` and compiles its graph (marked by `sym` when given).
  absl::StatusOr<std::shared_ptr<Trace>> record(runtime::Device* dev, const std::vector<Tensor>& inputs,
                                                const std::vector<std::shared_ptr<runtime::Buffer>>& bufs,
                                                const Signature& sig, const replay::SymbolicCode* code,
                                                const std::vector<int64_t>& values) const;
  // Plans fn at probe sizes and derives the family's template (left null, with a KILN_DEBUG
  // note, when it cannot be).
  void derive(Family& f, runtime::Device* dev, const std::vector<int64_t>& values) const;
  // fn's graph on uninitialized inputs of `sig`'s dtypes and aliasing with symbol s at values[s].
  absl::StatusOr<ir::Graph> probe(runtime::Device* dev, const Signature& sig, const std::vector<int64_t>& values) const;
};

Jit::Jit(Fn fn) : impl_(std::make_shared<Impl>()) { impl_->fn = std::move(fn); }

Jit::Jit(Fn fn, InputDims dims) : Jit(std::move(fn)) {
  for (const auto& shape : dims)
    for (const Dim& d : shape) {
      if (d.symbolic()) {
        if (std::find(impl_->symbols.begin(), impl_->symbols.end(), d.name()) == impl_->symbols.end())
          impl_->symbols.push_back(d.name());
      } else if (d.size() < 0) {
        throw Error(absl::InvalidArgumentError(absl::StrCat("jit: a declared dim of size ", d.size(), " in ", dims_str(shape))));
      }
    }
  impl_->dims = std::move(dims);
}

const Jit::Fn& Jit::function() const { return impl_->fn; }
const InputDims& Jit::dims() const { return impl_->dims; }

int Jit::traces() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->traced;
}

absl::StatusOr<std::vector<int64_t>> Jit::Impl::bind(const std::vector<Shape>& shapes) const {
  if (dims.size() > shapes.size())
    return absl::InvalidArgumentError(absl::StrCat("jit: dims declared for ", dims.size(), " inputs; the call passes ", shapes.size()));
  std::vector<int64_t> values(symbols.size(), -1);
  std::vector<std::pair<size_t, size_t>> where(symbols.size());  // the (input, dim) that bound each
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i].empty()) continue;
    if (dims[i].size() != shapes[i].size())
      return absl::InvalidArgumentError(absl::StrCat("jit: input ", i, " has shape ", shape_str(shapes[i]), "; declared ",
                                                     dims_str(dims[i])));
    for (size_t d = 0; d < dims[i].size(); ++d) {
      const Dim& dim = dims[i][d];
      const int64_t n = shapes[i][d];
      if (!dim.symbolic()) {
        if (dim.size() != n)
          return absl::InvalidArgumentError(absl::StrCat("jit: input ", i, " has shape ", shape_str(shapes[i]), "; declared ",
                                                         dims_str(dims[i]), " (dim ", d, " is ", n, ", not ", dim.size(), ")"));
        continue;
      }
      const size_t s = size_t(std::find(symbols.begin(), symbols.end(), dim.name()) - symbols.begin());
      if (values[s] >= 0 && values[s] != n)
        return absl::InvalidArgumentError(absl::StrCat("jit: symbolic dimension '", dim.name(), "' is ", values[s], " at input ",
                                                       where[s].first, " dim ", where[s].second, " and ", n, " at input ", i,
                                                       " dim ", d));
      if (values[s] < 0) values[s] = n, where[s] = {i, d};
    }
  }
  return values;
}

Signature Jit::Impl::abstract(Signature sig) const {
  for (size_t i = 0; i < dims.size() && i < sig.shapes.size(); ++i)
    for (size_t d = 0; d < dims[i].size(); ++d)
      if (dims[i][d].symbolic()) sig.shapes[i][d] = -1;
  return sig;
}

absl::StatusOr<std::shared_ptr<Trace>> Jit::Impl::record(runtime::Device* dev, const std::vector<Tensor>& inputs,
                                                         const std::vector<std::shared_ptr<runtime::Buffer>>& bufs,
                                                         const Signature& sig, const replay::SymbolicCode* code,
                                                         const std::vector<int64_t>& values) const {
  auto trace = std::make_shared<Trace>();
  trace->sig = sig;
  std::vector<Tensor> outs = fn(inputs);
  if (outs.empty()) return absl::InvalidArgumentError("jit: the traced function returned no tensors");
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
  auto c = code ? replay::compile_graph(dev, g, *code, values) : replay::compile_graph(dev, g);
  if (!c.ok()) return c.status();
  trace->compiled = *c;
  trace->params = ir::param_values(g);
  if (code)
    for (int64_t v : values) trace->params.push_back(Scalar::from_int(v));
  return trace;
}

absl::StatusOr<ir::Graph> Jit::Impl::probe(runtime::Device* dev, const Signature& sig, const std::vector<int64_t>& values) const {
  std::vector<Tensor> args;
  for (size_t i = 0; i < sig.shapes.size(); ++i) {
    if (sig.alias[i] != int(i)) {
      args.push_back(args[size_t(sig.alias[i])]);
      continue;
    }
    Shape shape = sig.shapes[i];
    for (size_t d = 0; i < dims.size() && d < dims[i].size(); ++d)
      if (dims[i][d].symbolic())
        shape[d] = values[size_t(std::find(symbols.begin(), symbols.end(), dims[i][d].name()) - symbols.begin())];
    auto buf = dev->alloc(std::max<int64_t>(shape_numel(shape) * int64_t(dtype_size(sig.dtypes[i])), 1));
    if (!buf.ok()) return buf.status();
    args.push_back(detail::from_buffer(*std::move(buf), sig.dtypes[i], shape));
  }
  try {
    std::vector<Tensor> outs = fn(args);
    if (outs.empty()) return absl::InvalidArgumentError("the traced function returned no tensors");
    std::vector<std::shared_ptr<runtime::Buffer>> graph_inputs;
    return detail::capture(outs, &graph_inputs);
  } catch (const Error& e) {
    return absl::InvalidArgumentError(e.status().message());
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(e.what());
  }
}

void Jit::Impl::derive(Family& f, runtime::Device* dev, const std::vector<int64_t>& values) const {
  f.tried = true;
  // Probe sizes: multiples of the call's own (a function that needs, say, an even batch gets
  // one), at least 256 so that they plan the kernels large sizes get: the call's own size when it
  // is that large (its inputs' memory is the probe's), and one more multiple.
  std::vector<int64_t> base(values.size()), up(values.size());
  for (size_t s = 0; s < values.size(); ++s) {
    const int64_t v = std::max<int64_t>(values[s], 1);
    base[s] = v * ((256 + v - 1) / v);
    up[s] = base[s] + v;
  }
  auto fail = [&](const absl::Status& why) {
    if (support::debug_level() >= 1)
      std::fprintf(stderr, "kiln: jit: symbolic dims: each size compiles its own code: %s\n", std::string(why.message()).c_str());
  };
  // The function failing at other sizes (its record-time checks: two symbols combined where
  // they must be equal) is an error of the declared dims; anything else (memory for the probe
  // inputs) only costs the sharing.
  auto refuse = [&](const std::vector<int64_t>& v, const absl::Status& why) {
    std::string at;
    for (size_t s = 0; s < v.size(); ++s) absl::StrAppend(&at, s ? ", " : "", "'", symbols[s], "' = ", v[s]);
    throw Error(absl::InvalidArgumentError(absl::StrCat("jit: the function does not hold for its declared symbolic dims: at ",
                                                        at, ": ", why.message())));
  };
  auto g0 = probe(dev, f.sig, base);
  if (!g0.ok() && g0.status().code() == absl::StatusCode::kInvalidArgument) refuse(base, g0.status());
  if (!g0.ok()) return fail(g0.status());
  std::vector<ir::Graph> probes;
  for (size_t s = 0; s < values.size(); ++s) {
    std::vector<int64_t> v = base;
    v[s] = up[s];
    auto g = probe(dev, f.sig, v);
    if (!g.ok() && g.status().code() == absl::StatusCode::kInvalidArgument) refuse(v, g.status());
    if (!g.ok()) return fail(g.status());
    probes.push_back(*std::move(g));
  }
  auto code = replay::derive_symbolic(dev, *g0, base, probes, up);
  if (!code.ok()) return fail(code.status());
  f.code = *std::move(code);
  f.base = *std::move(g0);
  f.base_values = base;
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
  std::shared_ptr<const replay::CompiledGraph> exe;  // what this call runs
  if (impl_->symbols.empty()) {
    if (!impl_->dims.empty()) throw_if_error(impl_->bind(sig.shapes).status());
    {
      std::lock_guard<std::mutex> lock(impl_->mu);
      for (const auto& t : impl_->traces)
        if (t->sig == sig) trace = t;
    }
    if (!trace) {
      auto t = impl_->record(dev, inputs, bufs, sig, nullptr, {});
      if (!t.ok()) throw Error(t.status());
      trace = *t;
      std::lock_guard<std::mutex> lock(impl_->mu);
      impl_->traces.push_back(trace);
      impl_->traced++;
    }
    exe = trace->compiled;
  } else {
    auto values = impl_->bind(sig.shapes);
    if (!values.ok()) throw Error(values.status());
    const Signature abstract = impl_->abstract(sig);
    std::shared_ptr<Family> family;
    {
      std::lock_guard<std::mutex> lock(impl_->mu);
      for (const auto& f : impl_->families)
        if (f->sig == abstract) family = f;
      if (!family) {
        family = std::make_shared<Family>();
        family->sig = abstract;
        impl_->families.push_back(family);
      }
    }
    std::lock_guard<std::mutex> lock(family->mu);
    for (size_t i = 0; i < family->sizes.size() && !trace; ++i)
      if (family->sizes[i].first == *values) {
        exe = family->sizes[i].second->weak.lock();
        if (!exe) {  // evicted from the executable cache: planned and loaded again below
          family->sizes.erase(family->sizes.begin() + long(i));
          break;
        }
        trace = family->sizes[i].second;
        std::rotate(family->sizes.begin(), family->sizes.begin() + long(i), family->sizes.begin() + long(i) + 1);
      }
    if (!trace) {
      // The first size derives the template and compiles the base probe size's code beside its
      // own (one compile when they are the same text: the compile cache waits for the other).
      std::future<absl::Status> base_code;
      if (!family->tried) {
        impl_->derive(*family, dev, *values);
        if (family->code)
          base_code = std::async(std::launch::async, [&family, dev] {
            return replay::precompile(dev, family->base, *family->code, family->base_values);
          });
      }
      const int64_t compiled0 = runtime::counters().kernels_compiled.load();
      auto t = impl_->record(dev, inputs, bufs, sig, family->code.get(), *values);
      if (base_code.valid()) {
        if (absl::Status s = base_code.get(); !s.ok() && support::debug_level() >= 1)
          std::fprintf(stderr, "kiln: jit: the shared code of the symbolic dims did not compile: %s\n",
                       std::string(s.message()).c_str());
        family->base = ir::Graph();
      }
      if (!t.ok()) throw Error(t.status());
      trace = *t;
      const int64_t compiled = runtime::counters().kernels_compiled.load() - compiled0;
      if (family->code && !family->sizes.empty() && compiled > 0 && support::debug_level() >= 1)
        std::fprintf(stderr, "kiln: jit: a new size compiled %lld kernel(s) of its own (it plans other code than the probe sizes)\n",
                     (long long)compiled);
      exe = std::move(trace->compiled);
      trace->weak = exe;
      family->sizes.insert(family->sizes.begin(), {*values, trace});
      if (family->sizes.size() > kFamilySizes) family->sizes.pop_back();
      std::lock_guard<std::mutex> l(impl_->mu);
      impl_->traced++;
    }
  }
  std::vector<std::shared_ptr<runtime::Buffer>> in(trace->from_arg.size());
  for (size_t k = 0; k < in.size(); ++k) in[k] = trace->from_arg[k] >= 0 ? bufs[trace->from_arg[k]] : trace->captured[k];
  auto outs = replay::run_compiled(*exe, in, trace->params);
  if (!outs.ok()) throw Error(outs.status());
  std::vector<Tensor> result;
  result.reserve(outs->size());
  for (size_t k = 0; k < outs->size(); ++k)
    result.push_back(detail::from_buffer((*outs)[k], trace->out_dtypes[k], trace->out_shapes[k]));
  return result;
}

}  // namespace kiln

// kiln::export_graph (kiln/export.h): trace once, renumber the graph's inputs so the used
// arguments come first and captured tensors after them, read the captured tensors' values, and
// print the graph with its signature (ir/signature.h).
#include "kiln/export.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "frontend/capture.h"
#include "frontend/lazy.h"
#include "ir/signature.h"
#include "runtime/device.h"

namespace kiln {
namespace {

[[noreturn]] void fail(const std::string& m) { throw Error(absl::InvalidArgumentError(absl::StrCat("export_graph: ", m))); }

std::vector<std::string> names_or_default(const std::vector<std::string>& given, size_t n, const char* prefix, const char* what) {
  if (given.empty()) {
    std::vector<std::string> r;
    for (size_t i = 0; i < n; ++i) r.push_back(absl::StrCat(prefix, i));
    return r;
  }
  if (given.size() != n) fail(absl::StrCat(given.size(), " ", what, " names for ", n, " ", what, "s"));
  return given;
}

ir::ExportedGraph trace(const Jit::Fn& fn, const std::vector<Tensor>& example_inputs, const ExportNames& names) {
  if (!example_inputs.empty()) detail::common_device("export_graph", example_inputs);
  realize(example_inputs);
  std::vector<std::shared_ptr<runtime::Buffer>> args;
  for (size_t i = 0; i < example_inputs.size(); ++i) {
    args.push_back(detail::node_of(example_inputs[i])->buffer);
    for (size_t j = 0; j < i; ++j)
      if (args[j] == args[i]) fail(absl::StrCat("inputs ", j, " and ", i, " are the same tensor; pass distinct tensors"));
  }
  std::vector<Tensor> outs = fn(example_inputs);
  if (outs.empty()) fail("the function returned no tensors");
  detail::common_device("export_graph", outs);
  std::vector<std::shared_ptr<runtime::Buffer>> captured;
  ir::Graph traced = detail::capture(outs, &captured);
  for (const ir::Node& n : traced.nodes())
    if (n.op == ir::Op::kCollective)
      fail("the graph has collectives (kiln::dist); their process group lives in this process, so it cannot be exported");

  ir::ExportedGraph e;
  std::vector<std::string> in_names = names_or_default(names.inputs, example_inputs.size(), "input", "input");
  std::vector<std::string> out_names = names_or_default(names.outputs, outs.size(), "output", "output");
  // New position of each traced input: used arguments in argument order, then the constants.
  std::vector<int64_t> position(captured.size(), -1);
  int64_t next = 0;
  for (size_t i = 0; i < args.size(); ++i) {
    bool used = false;
    for (size_t k = 0; k < captured.size(); ++k)
      if (captured[k] == args[i]) position[k] = next++, used = true;
    e.signature.inputs.push_back({in_names[i], example_inputs[i].dtype(), example_inputs[i].shape(), used});
  }
  std::vector<ir::NodeId> nodes = traced.input_nodes();
  for (size_t k = 0; k < captured.size(); ++k) {
    if (position[k] >= 0) continue;
    position[k] = next++;
    const ir::Node& n = traced.node(nodes[k]);
    ir::ConstantData c{n.dtype, n.shape, std::string(size_t(shape_numel(n.shape) * dtype_size(n.dtype)), '\0')};
    runtime::Device* dev = captured[k]->device();
    throw_if_error(dev->download(captured[k].get(), c.bytes.data(), int64_t(c.bytes.size())));
    e.constants.push_back(std::move(c));
  }
  for (ir::Node n : traced.nodes()) {
    if (n.op == ir::Op::kInput) n.ints = {position[size_t(n.ints[0])]};
    e.graph.add(std::move(n));
  }
  for (ir::NodeId o : traced.outputs()) e.graph.add_output(o);
  for (size_t k = 0; k < outs.size(); ++k) e.signature.outputs.push_back({out_names[k], outs[k].dtype(), outs[k].shape(), true});
  if (absl::Status s = ir::check(e); !s.ok()) fail(std::string(s.message()));
  return e;
}

// Symbolic dimensions: the symbols' names (first appearance in `dims`) and their example sizes.
void symbols_of(const std::vector<Tensor>& examples, const InputDims& dims, std::vector<std::string>* names, std::vector<int64_t>* sizes) {
  if (dims.size() > examples.size()) fail(absl::StrCat("dims for ", dims.size(), " inputs, but ", examples.size(), " example inputs"));
  for (size_t i = 0; i < dims.size(); ++i) {
    if (dims[i].empty()) continue;
    const Shape& s = examples[i].shape();
    if (dims[i].size() != s.size())
      fail(absl::StrCat("input ", i, " is declared with ", dims[i].size(), " dims; its example has shape ", shape_str(s)));
    for (size_t d = 0; d < s.size(); ++d) {
      const Dim& x = dims[i][d];
      if (!x.symbolic()) {
        if (x.size() != s[d]) fail(absl::StrCat("dim ", d, " of input ", i, " is declared ", x.size(), "; its example has ", s[d]));
        continue;
      }
      auto it = std::find(names->begin(), names->end(), x.name());
      if (it == names->end()) {
        names->push_back(x.name());
        sizes->push_back(s[d]);
      } else if ((*sizes)[size_t(it - names->begin())] != s[d]) {
        fail(absl::StrCat("the examples give ", x.name(), " two sizes (", (*sizes)[size_t(it - names->begin())], " and ", s[d],
                          " at dim ", d, " of input ", i, ")"));
      }
    }
  }
}

}  // namespace

std::string export_graph(const Jit::Fn& fn, const std::vector<Tensor>& example_inputs, const ExportNames& names, const InputDims& dims) {
  std::vector<std::string> symbols;
  std::vector<int64_t> example_sizes;
  symbols_of(example_inputs, dims, &symbols, &example_sizes);
  if (symbols.empty()) return ir::print(trace(fn, example_inputs, names));
  if (symbols.size() > size_t(ir::kMaxSymbols)) fail(absl::StrCat("at most ", ir::kMaxSymbols, " symbolic dimensions"));
  // Traced at every corner of {lo, 2 lo} per symbol and checked at 3 lo (lo: the example's size,
  // at least 2), on inputs of those sizes.
  std::vector<int64_t> lo, hi, check;
  for (int64_t v : example_sizes) {
    lo.push_back(std::max<int64_t>(v, 2));
    hi.push_back(2 * lo.back());
    check.push_back(3 * lo.back());
  }
  auto traced_at = [&](const std::vector<int64_t>& values) {
    std::vector<Tensor> in;
    for (size_t i = 0; i < example_inputs.size(); ++i) {
      Shape s = example_inputs[i].shape();
      for (size_t d = 0; i < dims.size() && d < dims[i].size(); ++d)
        if (dims[i][d].symbolic())
          s[d] = values[size_t(std::find(symbols.begin(), symbols.end(), dims[i][d].name()) - symbols.begin())];
      // Distinct values per input: equal constants would share one buffer (hash-consing).
      in.push_back(s == example_inputs[i].shape() ? example_inputs[i]
                                                  : full(s, double(i + 1), example_inputs[i].dtype(), example_inputs[i].device()));
    }
    return trace(fn, in, names);
  };
  std::vector<ir::ExportedGraph> corners;
  for (size_t c = 0; c < (size_t(1) << symbols.size()); ++c) {
    std::vector<int64_t> v(symbols.size());
    for (size_t s = 0; s < v.size(); ++s) v[s] = (c >> s & 1) ? hi[s] : lo[s];
    corners.push_back(traced_at(v));
  }
  ir::ExportedGraph checked = traced_at(check);
  auto sym = ir::derive_symbols(symbols, corners, lo, hi, checked, check);
  if (!sym.ok()) fail(std::string(sym.status().message()));
  ir::ExportedGraph e = std::move(corners[0]);
  e.symbols = *std::move(sym);
  if (absl::Status s = ir::check(e); !s.ok()) fail(std::string(s.message()));
  return ir::print(e);
}

std::string export_graph(const Jit& jit, const std::vector<Tensor>& example_inputs, const ExportNames& names) {
  return export_graph(jit.function(), example_inputs, names, jit.dims());
}

}  // namespace kiln

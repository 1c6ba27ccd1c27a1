// kiln::export_graph (kiln/export.h): trace once, renumber the graph's inputs so the used
// arguments come first and captured tensors after them, read the captured tensors' values, and
// print the graph with its signature (ir/signature.h).
#include "kiln/export.h"

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

}  // namespace

std::string export_graph(const Jit::Fn& fn, const std::vector<Tensor>& example_inputs, const ExportNames& names) {
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
  return ir::print(e);
}

std::string export_graph(const Jit& jit, const std::vector<Tensor>& example_inputs, const ExportNames& names) {
  return export_graph(jit.function(), example_inputs, names);
}

}  // namespace kiln

// The node loop: inputs looked up by name, the folder first, then the op's handler, every error
// given the node's label.
#include "frontend/onnx/builder.h"

#include <set>

#include "absl/strings/str_cat.h"
#include "frontend/onnx/fold.h"
#include "frontend/onnx/ops.h"

namespace kiln::onnx {

namespace {

// Ops whose inputs or defaults meant something else before an opset, with no attribute to tell:
// Concat's axis was optional (default 1) before 4, Cast's `to` a string before 6, Tile took
// (tiles, axis) before 6, Dropout trained by default before 7, Split took `split` as an input in 1,
// Scan had a batch axis and sequence lengths before 9.
int64_t min_opset(const std::string& op) {
  static const std::map<std::string, int64_t> m = {{"Concat", 4}, {"Cast", 6}, {"Tile", 6}, {"Dropout", 7}, {"Split", 2}, {"Scan", 9}};
  auto it = m.find(op);
  return it == m.end() ? 1 : it->second;
}

}  // namespace

namespace {

absl::Status check_nodes(const Graph& g, int64_t opset) {
  for (const Node& n : g.nodes) {
    if (!n.domain.empty())
      return absl::UnimplementedError(absl::StrCat(node_label(n), ": ops of domain '", n.domain, "' are not supported"));
    const OpDef* def = find_op(n.op_type);
    if (!def) {
      std::string why = missing_reason(n.op_type);
      return absl::UnimplementedError(absl::StrCat(node_label(n), ": ", n.op_type, " is not supported yet",
                                                   why.empty() ? "" : absl::StrCat(" (", why, ")")));
    }
    if (opset < min_opset(n.op_type))
      return absl::UnimplementedError(absl::StrCat(node_label(n), ": ", n.op_type, " as of opset ", opset, " is not supported (kiln imports it from opset ",
                                                   min_opset(n.op_type), ")"));
    for (const auto& [name, a] : n.attributes) {
      bool known = false;
      for (const std::string& k : def->attributes) known = known || k == name;
      if (!known) return absl::UnimplementedError(absl::StrCat(node_label(n), ": attribute '", name, "' is not supported"));
      if (a.g)
        if (absl::Status s = check_nodes(*a.g, opset); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

// Marks, walking backwards, the values whose contents some shape operand needs.
void mark_needed(const Graph& g, std::set<std::string>& needed) {
  for (auto it = g.nodes.rbegin(); it != g.nodes.rend(); ++it) {
    const Node& n = *it;
    const OpDef* def = find_op(n.op_type);
    if (!def) continue;
    bool out_needed = false;
    for (const std::string& o : n.outputs) out_needed = out_needed || (!o.empty() && needed.count(o));
    for (const auto& [name, a] : n.attributes) {
      if (!a.g) continue;
      if (out_needed)
        for (const ValueInfo& o : a.g->outputs) needed.insert(o.name);
      mark_needed(*a.g, needed);
    }
    for (int p : def->host_inputs)
      if (size_t(p) < n.inputs.size() && !n.inputs[size_t(p)].empty()) needed.insert(n.inputs[size_t(p)]);
    // Shape and Size read only the shape of their input; everything else needs its inputs' values.
    if (out_needed && n.op_type != "Shape" && n.op_type != "Size")
      for (const std::string& in : n.inputs)
        if (!in.empty()) needed.insert(in);
  }
}

}  // namespace

absl::Status check_supported(const Graph& g) { return check_nodes(g, g.opset); }

std::vector<bool> value_inputs(const Graph& g) {
  std::set<std::string> needed;
  mark_needed(g, needed);
  std::vector<bool> r;
  for (const ValueInfo& v : g.inputs) r.push_back(needed.count(v.name) > 0);
  return r;
}

namespace {

[[noreturn]] void fail(const absl::Status& s) { throw Error(s); }

void run_node(const Node& n, int64_t opset, const Device& device, std::map<std::string, Value>& env) {
  const OpDef* def = find_op(n.op_type);
  if (!def) fail(absl::UnimplementedError(absl::StrCat(node_label(n), ": ", n.op_type, " is not supported yet")));
  std::vector<Value*> ins;
  bool all_host = true;
  for (const std::string& name : n.inputs) {
    if (name.empty()) {
      ins.push_back(nullptr);
      continue;
    }
    auto it = env.find(name);
    if (it == env.end()) fail(absl::InvalidArgumentError(absl::StrCat(node_label(n), ": input '", name, "' is not defined")));
    ins.push_back(&it->second);
    all_host = all_host && it->second.host && it->second.host->numel() <= kFoldLimit;
  }
  std::vector<Value> outs(n.outputs.size());
  NodeContext ctx(n, opset, device, ins, &outs);
  // A subgraph (If's branch, Loop's body) runs in the same scope: ONNX names are unique across
  // subgraphs. A Loop body runs once per iteration, its values overwritten each time.
  ctx.set_subgraph_runner([&](const Graph& sub, const std::vector<Value>& bound) {
    for (const auto& [name, h] : sub.initializers) env[name] = Value{h.dtype, h.shape, Tensor(), std::make_shared<const HostTensor>(h)};
    for (size_t i = 0; i < sub.inputs.size(); ++i) env[sub.inputs[i].name] = bound[i];
    for (const Node& inner : sub.nodes) run_node(inner, opset, device, env);
    std::vector<Value> r;
    for (const ValueInfo& o : sub.outputs) {
      auto it = env.find(o.name);
      if (it == env.end()) fail(absl::InvalidArgumentError(absl::StrCat(node_label(n), ": its subgraph's output '", o.name, "' is not defined")));
      r.push_back(it->second);
    }
    return r;
  });
  try {
    if (!(all_host && try_fold(ctx))) def->build(ctx);
  } catch (const ImportError& e) {
    throw Error(e.status);
  } catch (const Error& e) {
    fail(absl::Status(e.status().code(), absl::StrCat(node_label(n), ": ", e.status().message())));
  }
  for (size_t i = 0; i < n.outputs.size(); ++i) {
    if (n.outputs[i].empty()) continue;
    if (!outs[i].tensor.defined() && !outs[i].host)
      fail(absl::UnimplementedError(absl::StrCat(node_label(n), ": output ", i, " ('", n.outputs[i], "') is not supported")));
    env[n.outputs[i]] = std::move(outs[i]);
  }
}

}  // namespace

std::vector<Tensor> build_graph(const Graph& g, const std::map<std::string, Value>& initializers,
                                const std::vector<Value>& inputs, const Device& device) {
  std::map<std::string, Value> env = initializers;
  for (size_t i = 0; i < g.inputs.size() && i < inputs.size(); ++i) env[g.inputs[i].name] = inputs[i];
  for (const Node& n : g.nodes) run_node(n, g.opset, device, env);
  std::vector<Tensor> result;
  for (const ValueInfo& o : g.outputs) {
    Value& v = env.at(o.name);
    if (!v.tensor.defined()) v.tensor = to_tensor(*v.host, device);
    bool shape_ok = !o.has_shape || o.shape.size() == v.shape.size();
    for (size_t d = 0; shape_ok && o.has_shape && d < o.shape.size(); ++d) shape_ok = o.shape[d] < 0 || o.shape[d] == v.shape[d];
    if (v.dtype != o.dtype || !shape_ok)
      fail(absl::InternalError(absl::StrCat("output '", o.name, "' was built as ", dtype_name(v.dtype), shape_str(v.shape),
                                            "; the model declares ", dtype_name(o.dtype), o.has_shape ? shape_str(o.shape) : "")));
    result.push_back(v.tensor);
  }
  return result;
}

}  // namespace kiln::onnx

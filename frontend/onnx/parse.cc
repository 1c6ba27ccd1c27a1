// ModelProto -> Graph: opset, initializers, typed inputs and outputs, nodes with their
// attributes, then a topological order that also finds undefined names and cycles.
#include "frontend/onnx/parse.h"

#include <deque>
#include <set>

#include "absl/strings/str_cat.h"
#include "frontend/onnx/tensor_proto.h"
#include "kiln_onnx.pb.h"

namespace kiln::onnx {

std::string node_label(const Node& n) {
  std::string out;
  for (const std::string& o : n.outputs)
    if (!o.empty()) {
      out = o;
      break;
    }
  if (!n.name.empty()) return absl::StrCat("node '", n.name, "' (", n.op_type, ")");
  return absl::StrCat("node #", n.index, " (", n.op_type, ")", out.empty() ? "" : absl::StrCat(" producing '", out, "'"));
}

namespace {

using namespace onnx_proto;

absl::Status prefixed(const std::string& origin, const absl::Status& s) {
  return absl::Status(s.code(), absl::StrCat(origin, ": ", s.message()));
}

absl::StatusOr<ValueInfo> value_info(const ValueInfoProto& v, const char* what) {
  ValueInfo r;
  r.name = v.name();
  std::string label = absl::StrCat(what, " '", v.name(), "'");
  if (v.name().empty()) return absl::InvalidArgumentError(absl::StrCat(what, " without a name"));
  if (!v.has_type()) return absl::InvalidArgumentError(absl::StrCat(label, " has no type"));
  const TypeProto& t = v.type();
  if (!t.has_tensor_type()) {
    const char* kind = t.has_sequence_type() ? "a sequence" : t.has_map_type() ? "a map" : t.has_optional_type() ? "an optional"
                       : t.has_sparse_tensor_type() ? "a sparse tensor" : "not a tensor";
    return absl::UnimplementedError(absl::StrCat(label, " is ", kind, "; kiln imports tensors only"));
  }
  auto dt = dtype_from_onnx(t.tensor_type().elem_type(), label);
  if (!dt.ok()) return dt.status();
  r.dtype = *dt;
  if (t.tensor_type().has_shape()) {
    r.has_shape = true;
    for (const TensorShapeProto::Dimension& d : t.tensor_type().shape().dim()) {
      if (d.has_dim_value() && d.dim_value() < 0)
        return absl::InvalidArgumentError(absl::StrCat(label, " has a negative dimension ", d.dim_value()));
      r.shape.push_back(d.has_dim_value() ? d.dim_value() : -1);
    }
  }
  return r;
}

const char* attribute_type_name(int t) {
  switch (t) {
    case AttributeProto::FLOAT: return "FLOAT";
    case AttributeProto::INT: return "INT";
    case AttributeProto::STRING: return "STRING";
    case AttributeProto::TENSOR: return "TENSOR";
    case AttributeProto::GRAPH: return "GRAPH";
    case AttributeProto::SPARSE_TENSOR: return "SPARSE_TENSOR";
    case AttributeProto::TYPE_PROTO: return "TYPE_PROTO";
    case AttributeProto::FLOATS: return "FLOATS";
    case AttributeProto::INTS: return "INTS";
    case AttributeProto::STRINGS: return "STRINGS";
    case AttributeProto::TENSORS: return "TENSORS";
    case AttributeProto::GRAPHS: return "GRAPHS";
    case AttributeProto::SPARSE_TENSORS: return "SPARSE_TENSORS";
    case AttributeProto::TYPE_PROTOS: return "TYPE_PROTOS";
    default: return "UNDEFINED";
  }
}

// Subgraphs (If's branches, Loop's body) nest at most this deep.
constexpr int kMaxDepth = 16;

absl::Status read_graph(const GraphProto& gp, const std::string& base_dir, const std::set<std::string>& outer, int depth, Graph* g);

absl::StatusOr<Attribute> attribute(const AttributeProto& a, const std::string& label, const std::string& base_dir,
                                    const std::set<std::string>& visible, int depth) {
  Attribute r;
  r.type_name = attribute_type_name(a.type());
  switch (a.type()) {
    case AttributeProto::FLOAT: r.kind = Attribute::Kind::kFloat; r.f = a.f(); break;
    case AttributeProto::INT: r.kind = Attribute::Kind::kInt; r.i = a.i(); break;
    case AttributeProto::STRING: r.kind = Attribute::Kind::kString; r.s = a.s(); break;
    case AttributeProto::FLOATS: r.kind = Attribute::Kind::kFloats; r.floats.assign(a.floats().begin(), a.floats().end()); break;
    case AttributeProto::INTS: r.kind = Attribute::Kind::kInts; r.ints.assign(a.ints().begin(), a.ints().end()); break;
    case AttributeProto::STRINGS: r.kind = Attribute::Kind::kStrings; r.strings.assign(a.strings().begin(), a.strings().end()); break;
    case AttributeProto::GRAPH: {
      r.kind = Attribute::Kind::kGraph;
      if (depth >= kMaxDepth) return absl::UnimplementedError(absl::StrCat(label, ": subgraphs nested deeper than ", kMaxDepth));
      auto sub = std::make_shared<Graph>();
      if (absl::Status st = read_graph(a.g(), base_dir, visible, depth + 1, sub.get()); !st.ok())
        return absl::Status(st.code(), absl::StrCat(label, ": attribute '", a.name(), "': ", st.message()));
      r.g = std::move(sub);
      break;
    }
    case AttributeProto::TENSOR: {
      r.kind = Attribute::Kind::kTensor;
      auto t = from_tensor_proto(a.t(), absl::StrCat(label, ": attribute '", a.name(), "'"), base_dir);
      if (t.ok()) r.t = *std::move(t);
      else r.tensor_error = t.status();
      break;
    }
    default: r.kind = Attribute::Kind::kOther; break;
  }
  return r;
}

// Names a node reads: its inputs and what its subgraphs read from outside themselves.
std::vector<std::string> reads(const Node& n) {
  std::vector<std::string> r;
  for (const std::string& in : n.inputs)
    if (!in.empty()) r.push_back(in);
  for (const auto& [name, a] : n.attributes)
    if (a.g) r.insert(r.end(), a.g->captures.begin(), a.g->captures.end());
  return r;
}

// Reads gp into g: initializers, inputs (typed for the main graph, depth 0), nodes with their
// subgraphs, outputs; then orders the nodes. `outer` holds the names enclosing graphs define; a
// subgraph may read them (they become its captures).
absl::Status read_graph(const GraphProto& gp, const std::string& base_dir, const std::set<std::string>& outer, int depth, Graph* g) {
  bool main = depth == 0;
  if (gp.sparse_initializer_size() > 0)
    return absl::UnimplementedError(absl::StrCat("sparse initializer '", gp.sparse_initializer(0).values().name(), "' is not supported"));
  for (const TensorProto& t : gp.initializer()) {
    if (t.name().empty()) return absl::InvalidArgumentError("an initializer has no name");
    auto h = from_tensor_proto(t, absl::StrCat("initializer '", t.name(), "'"), base_dir);
    if (!h.ok()) return h.status();
    if (!g->initializers.emplace(t.name(), *std::move(h)).second)
      return absl::InvalidArgumentError(absl::StrCat("initializer '", t.name(), "' is defined twice"));
  }
  std::set<std::string> defined;
  for (const auto& [name, t] : g->initializers) defined.insert(name);
  for (const ValueInfoProto& v : gp.input()) {
    if (g->initializers.count(v.name())) continue;  // an initializer listed as an input (IR < 4, or overridable)
    ValueInfo info;
    if (main) {
      auto typed = value_info(v, "input");
      if (!typed.ok()) return typed.status();
      info = *std::move(typed);
    } else {
      info.name = v.name();  // a subgraph's inputs: only names (their handlers bind them)
    }
    if (!defined.insert(info.name).second) return absl::InvalidArgumentError(absl::StrCat("input '", info.name, "' is defined twice"));
    g->inputs.push_back(std::move(info));
  }
  // What subgraphs of this graph's nodes may read: enclosing names and everything defined here.
  std::set<std::string> visible = outer;
  visible.insert(defined.begin(), defined.end());
  for (const NodeProto& np : gp.node())
    for (const std::string& o : np.output())
      if (!o.empty()) visible.insert(o);
  std::vector<Node> nodes;
  for (int k = 0; k < gp.node_size(); ++k) {
    const NodeProto& np = gp.node(k);
    Node n;
    n.name = np.name();
    n.op_type = np.op_type();
    n.domain = np.domain() == "ai.onnx" ? "" : np.domain();
    n.index = k;
    n.inputs.assign(np.input().begin(), np.input().end());
    n.outputs.assign(np.output().begin(), np.output().end());
    std::string label = node_label(n);
    if (n.op_type.empty()) return absl::InvalidArgumentError(absl::StrCat(label, " has no op type"));
    for (const AttributeProto& a : np.attribute()) {
      if (a.name().empty()) return absl::InvalidArgumentError(absl::StrCat(label, ": an attribute has no name"));
      auto attr = attribute(a, label, base_dir, visible, depth);
      if (!attr.ok()) return attr.status();
      if (!n.attributes.emplace(a.name(), *std::move(attr)).second)
        return absl::InvalidArgumentError(absl::StrCat(label, ": attribute '", a.name(), "' is given twice"));
    }
    nodes.push_back(std::move(n));
  }
  // Producers, duplicate definitions and undefined names.
  std::map<std::string, int> producer;
  for (size_t k = 0; k < nodes.size(); ++k)
    for (const std::string& o : nodes[k].outputs) {
      if (o.empty()) continue;
      if (defined.count(o) || producer.count(o)) {
        std::string first = producer.count(o) ? node_label(nodes[size_t(producer[o])]) : "a graph input or initializer";
        return absl::InvalidArgumentError(absl::StrCat(node_label(nodes[k]), ": value '", o, "' is already defined by ", first));
      }
      producer[o] = int(k);
    }
  std::set<std::string> captures;
  std::vector<int> pending(nodes.size(), 0);
  std::vector<std::vector<int>> consumers(nodes.size());
  for (size_t k = 0; k < nodes.size(); ++k)
    for (const std::string& in : reads(nodes[k])) {
      if (defined.count(in)) continue;
      auto it = producer.find(in);
      if (it == producer.end()) {
        if (outer.count(in)) {
          captures.insert(in);
          continue;
        }
        return absl::InvalidArgumentError(absl::StrCat(node_label(nodes[k]), ": input '", in,
                                                       "' is not defined (no graph input, initializer or node output has that name)"));
      }
      if (it->second == int(k)) {
        pending[k] = int(nodes.size()) + 1;  // reads its own output: never ready, reported as a cycle
        continue;
      }
      ++pending[k];
      consumers[size_t(it->second)].push_back(int(k));
    }
  // Kahn's algorithm in file order: a sorted file keeps its order.
  std::deque<int> ready;
  for (size_t k = 0; k < nodes.size(); ++k)
    if (pending[k] == 0) ready.push_back(int(k));
  std::vector<bool> done(nodes.size(), false);
  while (!ready.empty()) {
    int k = ready.front();
    ready.pop_front();
    done[size_t(k)] = true;
    g->nodes.push_back(nodes[size_t(k)]);
    for (int c : consumers[size_t(k)])
      if (--pending[size_t(c)] == 0) ready.push_back(c);
  }
  for (size_t k = 0; k < nodes.size(); ++k)
    if (!done[k]) return absl::InvalidArgumentError(absl::StrCat(node_label(nodes[k]), " is part of a cycle (its inputs depend on its own outputs)"));
  for (const ValueInfoProto& v : gp.output()) {
    ValueInfo info;
    if (main) {
      auto typed = value_info(v, "output");
      if (!typed.ok()) return typed.status();
      info = *std::move(typed);
    } else {
      info.name = v.name();
    }
    if (!defined.count(info.name) && !producer.count(info.name)) {
      if (!outer.count(info.name)) return absl::InvalidArgumentError(absl::StrCat("output '", info.name, "' is not produced by any node"));
      captures.insert(info.name);
    }
    g->outputs.push_back(std::move(info));
  }
  if (g->outputs.empty()) return absl::InvalidArgumentError("the graph has no outputs");
  g->captures.assign(captures.begin(), captures.end());
  return absl::OkStatus();
}

absl::Status read(const ModelProto& m, const std::string& base_dir, Graph* g) {
  bool found = false;
  std::string others;
  for (const OperatorSetIdProto& o : m.opset_import()) {
    if (o.domain().empty() || o.domain() == "ai.onnx") g->opset = o.version(), found = true;
    else absl::StrAppend(&others, others.empty() ? "" : ", ", "'", o.domain(), "'");
  }
  if (!found && !others.empty())
    return absl::UnimplementedError(absl::StrCat("the model uses only ops of domain ", others, ", which kiln does not support"));
  if (!found) return absl::InvalidArgumentError("the model imports no opset of the default ONNX domain (is it an ONNX model?)");
  if (g->opset < kMinOpset || g->opset > kMaxOpset)
    return absl::UnimplementedError(absl::StrCat("opset ", g->opset, " of the default ONNX domain is not supported (kiln imports opsets ",
                                                 kMinOpset, " to ", kMaxOpset, ")"));
  if (!m.has_graph()) return absl::InvalidArgumentError("the model has no graph");
  return read_graph(m.graph(), base_dir, {}, 0, g);
}

}  // namespace

absl::StatusOr<Graph> parse_model(const std::string& bytes, const std::string& origin, const std::string& base_dir) {
  ModelProto m;
  if (!m.ParseFromString(bytes)) return absl::InvalidArgumentError(absl::StrCat(origin, ": not an ONNX model (the protobuf does not parse)"));
  Graph g;
  if (absl::Status s = read(m, base_dir, &g); !s.ok()) return prefixed(origin, s);
  return g;
}

}  // namespace kiln::onnx

#include "passes/simplify.h"

#include <cmath>

#include "ir/interpreter.h"

namespace kiln::passes {
namespace {

using ir::Graph;
using ir::Node;
using ir::NodeId;
using ir::Op;

// Whether every value of `from` is exactly representable in `to`.
bool widens(DType from, DType to) {
  if (from == to || from == DType::kBool) return true;
  if (is_int(from) && is_int(to))  // a wider range that holds both ends
    return int_lowest(to) <= int_lowest(from) && int_highest(from) <= int_highest(to);
  switch (from) {
    case DType::kUInt8:
    case DType::kInt8: return is_float(to);
    case DType::kInt16:
    case DType::kUInt16: return to == DType::kFloat32 || to == DType::kFloat64;
    case DType::kInt32:
    case DType::kUInt32: return to == DType::kFloat64;
    case DType::kFloat16:
    case DType::kBFloat16: return to == DType::kFloat32 || to == DType::kFloat64;
    case DType::kFloat32: return to == DType::kFloat64;
    default: return false;
  }
}

bool is_const_value(const Graph& g, NodeId id, double v) {
  const Node& n = g.node(id);
  return n.op == Op::kConst && n.scalar.as_double() == v && !(n.scalar.is_int == false && std::signbit(n.scalar.f) && v == 0);
}

class Simplifier {
 public:
  explicit Simplifier(const Graph& in) : in_(in) {}

  Graph run() {
    // Keep every input position and param slot, even if unused, so that bindings line up.
    std::vector<NodeId> map(in_.size(), -1);
    std::vector<bool> live(in_.size(), false);
    for (NodeId o : in_.outputs()) live[o] = true;
    for (int id = int(in_.size()) - 1; id >= 0; --id)
      if (live[id])
        for (NodeId x : in_.node(id).inputs) live[x] = true;
    for (size_t id = 0; id < in_.size(); ++id) {
      const Node& n = in_.node(NodeId(id));
      if (!live[id] && n.op != Op::kInput && n.op != Op::kParam) continue;
      Node m = n;
      for (NodeId& x : m.inputs) x = map[x];
      map[id] = rewrite(std::move(m));
    }
    for (NodeId o : in_.outputs()) out_.add_output(map[o]);
    // A second round trip drops nodes made dead by the rewrites.
    return compact(out_);
  }

 private:
  NodeId rewrite(Node n) {
    const Graph& g = out_;
    auto in = [&](int k) -> const Node& { return g.node(n.inputs[k]); };
    switch (n.op) {
      case Op::kCast:
        if (in(0).dtype == n.dtype) return n.inputs[0];
        // cast(cast(x, B), C) == cast(x, C) when x -> B is exact, except integer -> float ->
        // integer: float -> integer saturates where integer -> integer wraps (kiln_fuzz found it).
        if (in(0).op == Op::kCast && widens(g.node(in(0).inputs[0]).dtype, in(0).dtype) &&
            !(!is_float(g.node(in(0).inputs[0]).dtype) && is_float(in(0).dtype) && !is_float(n.dtype) &&
              n.dtype != DType::kBool)) {
          NodeId src = in(0).inputs[0];
          if (g.node(src).dtype == n.dtype) return src;
          n.inputs[0] = src;
        }
        break;
      case Op::kNeg:
        if (in(0).op == Op::kNeg) return in(0).inputs[0];
        break;
      case Op::kMul:
        if (is_const_value(g, n.inputs[1], 1)) return n.inputs[0];
        if (is_const_value(g, n.inputs[0], 1)) return n.inputs[1];
        break;
      case Op::kAdd:
        if (is_const_value(g, n.inputs[1], 0)) return n.inputs[0];
        if (is_const_value(g, n.inputs[0], 0)) return n.inputs[1];
        break;
      case Op::kSub:
        if (is_const_value(g, n.inputs[1], 0)) return n.inputs[0];
        break;
      case Op::kDiv:
      case Op::kIntDiv:
        if (is_const_value(g, n.inputs[1], 1)) return n.inputs[0];
        break;
      case Op::kReshape:
      case Op::kExpand:
        if (in(0).shape == n.shape) return n.inputs[0];
        if (in(0).op == Op::kReshape && n.op == Op::kReshape) n.inputs[0] = in(0).inputs[0];
        break;
      default: break;
    }
    if (n.op != Op::kInput && n.op != Op::kConst && n.op != Op::kParam) {
      if (auto folded = fold(n); folded >= 0) return folded;
    }
    return out_.add(std::move(n));
  }

  // Folds a node whose operands are all constants into one constant (values of a constant are
  // all equal, so one element is evaluated with the reference semantics).
  NodeId fold(const Node& n) {
    if (n.inputs.empty()) return -1;
    for (NodeId x : n.inputs)
      if (out_.node(x).op != Op::kConst) return -1;
    if (ir::op_class(n.op) == ir::OpClass::kReduce || ir::op_class(n.op) == ir::OpClass::kContract) return -1;
    if (n.op == Op::kPad) {
      if (!(n.scalar == out_.node(n.inputs[0]).scalar)) return -1;
    } else if (!ir::is_elementwise(n.op) && !ir::is_movement(n.op)) {
      return -1;
    }
    Node c;
    c.op = Op::kConst;
    c.dtype = n.dtype;
    c.shape = n.shape;
    if (ir::is_movement(n.op)) {
      // A view of a constant is that constant; a concat only when every part holds the same value.
      for (NodeId x : n.inputs)
        if (!(out_.node(x).scalar == out_.node(n.inputs[0]).scalar)) return -1;
      c.scalar = out_.node(n.inputs[0]).scalar;
      return out_.add(c);
    }
    Graph tiny;
    Node e = n;
    e.shape = {};
    e.inputs.clear();
    for (NodeId x : n.inputs) {
      Node k = out_.node(x);
      k.shape = {};
      e.inputs.push_back(tiny.add(k));
    }
    tiny.add_output(tiny.add(e));
    auto r = ir::interpret(tiny, {});
    if (!r.ok()) return -1;
    const ir::HostTensor& v = (*r)[0];
    c.scalar = is_float(c.dtype) ? Scalar::from_double(v.f[0]) : Scalar::from_int(v.i[0]);
    return out_.add(c);
  }

  static Graph compact(const Graph& g) {
    std::vector<bool> live(g.size(), false);
    for (NodeId o : g.outputs()) live[o] = true;
    for (int id = int(g.size()) - 1; id >= 0; --id)
      if (live[id])
        for (NodeId x : g.node(id).inputs) live[x] = true;
    Graph r;
    std::vector<NodeId> map(g.size(), -1);
    for (size_t id = 0; id < g.size(); ++id) {
      const Node& n = g.node(NodeId(id));
      if (!live[id] && n.op != Op::kInput && n.op != Op::kParam) continue;
      Node m = n;
      for (NodeId& x : m.inputs) x = map[x];
      map[id] = r.add(std::move(m));
    }
    for (NodeId o : g.outputs()) r.add_output(map[o]);
    return r;
  }

  const Graph& in_;
  Graph out_;
};

}  // namespace

ir::Graph simplify(const ir::Graph& g) { return Simplifier(g).run(); }

}  // namespace kiln::passes

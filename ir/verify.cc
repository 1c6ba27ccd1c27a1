// Well-formedness rules of the graph IR (see graph.h for each op's attributes).
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "ir/collective.h"
#include "ir/graph.h"
#include "ir/params.h"

namespace kiln::ir {
namespace {

absl::Status err(const Node& n, const std::string& what) {
  return absl::InvalidArgumentError(absl::StrCat(op_name(n.op), ": ", what));
}

// What a check reads of an operand: its dtype and shape.
struct Operand {
  DType dtype;
  const Shape& shape;
};

// The operands of the node being checked, by the ids in its `inputs`: nodes of a graph, or (for
// a node not in a graph yet, the frontend's record()) a list indexed by position.
class Operands {
 public:
  explicit Operands(const Graph& g) : g_(&g) {}
  explicit Operands(const std::vector<OperandInfo>& list) : list_(&list) {}
  Operand node(NodeId id) const {
    if (g_) return Operand{g_->node(id).dtype, g_->node(id).shape};
    const OperandInfo& o = (*list_)[size_t(id)];
    return Operand{o.dtype, *o.shape};
  }
  // The whole operand node where there is a graph (a `result` reads its control node's regions).
  const Node* graph_node(NodeId id) const { return g_ ? &g_->node(id) : nullptr; }

 private:
  const Graph* g_ = nullptr;
  const std::vector<OperandInfo>* list_ = nullptr;
};

bool valid_shape(const Shape& s) {
  for (int64_t d : s)
    if (d < 0) return false;
  return shape_numel(s) >= 0;
}

absl::Status check_elementwise(const Operands& g, const Node& n) {
  for (NodeId in : n.inputs) {
    if (g.node(in).shape != n.shape)
      return err(n, absl::StrCat("operand shape ", shape_str(g.node(in).shape),
                                 " differs from result shape ", shape_str(n.shape)));
  }
  const Operand a = g.node(n.inputs[0]);
  switch (n.op) {
    case Op::kCast: return absl::OkStatus();
    case Op::kNot:
    case Op::kAnd:
    case Op::kOr:
      for (NodeId in : n.inputs)
        if (g.node(in).dtype != DType::kBool) return err(n, "operands must be bool");
      if (n.dtype != DType::kBool) return err(n, "result must be bool");
      return absl::OkStatus();
    case Op::kNeg:
    case Op::kAbs:
      if (a.dtype == DType::kBool) return err(n, "operand must be numeric, got bool");
      break;
    case Op::kIntDiv:
    case Op::kIntRem:
      if (is_float(a.dtype) || a.dtype == DType::kBool)
        return err(n, absl::StrCat("needs integer operands, got ", dtype_name(a.dtype)));
      break;
    case Op::kWhere: {
      if (a.dtype != DType::kBool) return err(n, "condition must be bool");
      if (g.node(n.inputs[1]).dtype != n.dtype || g.node(n.inputs[2]).dtype != n.dtype)
        return err(n, "branches must have the result dtype");
      return absl::OkStatus();
    }
    default: break;
  }
  OpClass cls = op_class(n.op);
  if (cls == OpClass::kBinary && g.node(n.inputs[1]).dtype != a.dtype)
    return err(n, absl::StrCat("operand dtypes differ: ", dtype_name(a.dtype), " and ",
                               dtype_name(g.node(n.inputs[1]).dtype)));
  if (is_comparison(n.op)) {
    if (n.dtype != DType::kBool) return err(n, "comparison result must be bool");
    return absl::OkStatus();
  }
  if (n.dtype != a.dtype) return err(n, "result dtype must equal the operand dtype");
  switch (n.op) {
    case Op::kNeg:
    case Op::kAbs:
    case Op::kAdd:
    case Op::kSub:
    case Op::kMul:
    case Op::kMax:
    case Op::kMin:
    case Op::kIntDiv:
    case Op::kIntRem:
      if (n.dtype == DType::kBool && n.op != Op::kMax && n.op != Op::kMin)
        return err(n, "operands must be numeric, got bool");
      return absl::OkStatus();
    default:
      if (!is_float(n.dtype))
        return err(n, absl::StrCat("needs a floating-point operand, got ", dtype_name(n.dtype)));
      return absl::OkStatus();
  }
}

absl::Status check_axes(const Node& n, const Shape& in, bool single) {
  if (single && n.ints.size() != 1) return err(n, "expects exactly one axis");
  for (size_t i = 0; i < n.ints.size(); ++i) {
    if (n.ints[i] < 0 || n.ints[i] >= int64_t(in.size()))
      return err(n, absl::StrCat("axis ", n.ints[i], " out of range for shape ", shape_str(in)));
    if (i && n.ints[i] <= n.ints[i - 1]) return err(n, "axes must be sorted and unique");
  }
  Shape out = in;
  for (int64_t a : n.ints) out[a] = 1;
  if (out != n.shape)
    return err(n, absl::StrCat("result shape ", shape_str(n.shape), " should be ", shape_str(out)));
  return absl::OkStatus();
}

absl::Status check_movement(const Operands& g, const Node& n) {
  const Operand a = g.node(n.inputs[0]);
  if (n.op != Op::kConcat && n.dtype != a.dtype) return err(n, "result dtype must equal the operand dtype");
  const Shape& in = a.shape;
  size_t r = in.size();
  switch (n.op) {
    case Op::kReshape:
      if (shape_numel(in) != shape_numel(n.shape))
        return err(n, absl::StrCat("cannot reshape ", shape_str(in), " to ", shape_str(n.shape)));
      return absl::OkStatus();
    case Op::kPermute: {
      if (n.ints.size() != r) return err(n, "permutation length differs from the rank");
      std::vector<bool> seen(r, false);
      Shape out(r);
      for (size_t k = 0; k < r; ++k) {
        int64_t p = n.ints[k];
        if (p < 0 || p >= int64_t(r) || seen[p]) return err(n, "not a permutation");
        seen[p] = true;
        out[k] = in[p];
      }
      if (out != n.shape) return err(n, "result shape does not match the permutation");
      return absl::OkStatus();
    }
    case Op::kExpand:
      if (n.shape.size() != r) return err(n, "expand keeps the rank");
      for (size_t k = 0; k < r; ++k)
        if (in[k] != n.shape[k] && in[k] != 1)
          return err(n, absl::StrCat("cannot expand ", shape_str(in), " to ", shape_str(n.shape)));
      return absl::OkStatus();
    case Op::kSlice:
      if (n.ints.size() != 2 * r || n.shape.size() != r) return err(n, "needs start and step per axis");
      for (size_t k = 0; k < r; ++k) {
        int64_t start = n.ints[2 * k], step = n.ints[2 * k + 1], count = n.shape[k];
        if (step == 0) return err(n, "step must not be zero");
        if (count == 0) continue;
        int64_t span = 0, last = 0;  // checked: the step is any int64 the text gave
        bool overflow = __builtin_mul_overflow(count - 1, step, &span) ||
                        __builtin_add_overflow(start, span, &last);
        if (overflow || start < 0 || start >= in[k] || last < 0 || last >= in[k])
          return err(n, absl::StrCat("slice of axis ", k, " out of bounds for shape ", shape_str(in)));
      }
      return absl::OkStatus();
    case Op::kPad:
      if (n.ints.size() != 2 * r || n.shape.size() != r) return err(n, "needs lo and hi per axis");
      for (size_t k = 0; k < r; ++k) {
        if (n.ints[2 * k] < 0 || n.ints[2 * k + 1] < 0) return err(n, "pad widths must be non-negative");
        int64_t padded = 0;  // checked: widths are any non-negative int64 the text gave
        if (__builtin_add_overflow(in[k], n.ints[2 * k], &padded) ||
            __builtin_add_overflow(padded, n.ints[2 * k + 1], &padded) || n.shape[k] != padded)
          return err(n, "result shape does not match the pad widths");
      }
      return absl::OkStatus();
    case Op::kWindow:
      if (n.ints.size() != 2 * r || n.shape.size() != 2 * r)
        return err(n, "needs stride and dilation per axis and a result of twice the rank");
      for (size_t k = 0; k < r; ++k) {
        int64_t stride = n.ints[2 * k], dilation = n.ints[2 * k + 1], o = n.shape[k], w = n.shape[r + k];
        if (stride < 1 || dilation < 1) return err(n, "stride and dilation must be positive");
        if (o == 0 || w == 0) continue;
        int64_t a = 0, b = 0, last = 0;  // checked: the text gives any int64
        if (__builtin_mul_overflow(o - 1, stride, &a) || __builtin_mul_overflow(w - 1, dilation, &b) ||
            __builtin_add_overflow(a, b, &last) || last >= in[k])
          return err(n, absl::StrCat("windows of axis ", k, " reach past its extent ", in[k], " in ",
                                     shape_str(in)));
      }
      return absl::OkStatus();
    case Op::kConcat: {
      if (n.ints.size() != 1 || n.ints[0] < 0 || n.ints[0] >= int64_t(r)) return err(n, "bad axis");
      // Before the per-operand loop, which indexes the result shape by the operands' rank.
      if (n.shape.size() != r) return err(n, "result rank differs from the operands' rank");
      int64_t axis = n.ints[0], total = 0;
      for (NodeId id : n.inputs) {
        const Operand x = g.node(id);
        if (x.dtype != n.dtype) return err(n, "operand dtypes differ");
        if (x.shape.size() != r) return err(n, "operand ranks differ");
        for (size_t k = 0; k < r; ++k)
          if (int64_t(k) != axis && x.shape[k] != n.shape[k])
            return err(n, absl::StrCat("operand shape ", shape_str(x.shape), " does not match ",
                                       shape_str(n.shape), " outside axis ", axis));
        if (__builtin_add_overflow(total, x.shape[axis], &total))
          return err(n, "concatenated extent overflows int64");
      }
      if (n.shape.size() != r || total != n.shape[axis]) return err(n, "result shape is not the concatenation");
      return absl::OkStatus();
    }
    default: return err(n, "not a movement op");
  }
}

absl::Status check_gather(const Operands& g, const Node& n) {
  const Operand x = g.node(n.inputs[0]);
  const Operand idx = g.node(n.inputs[1]);
  if (n.dtype != x.dtype) return err(n, "result dtype must equal the gathered tensor's dtype");
  if (!is_int(idx.dtype))
    return err(n, absl::StrCat("indices must have an integer dtype, got ", dtype_name(idx.dtype)));
  size_t r = x.shape.size();
  if (n.ints.size() != 1 || n.ints[0] < 0 || n.ints[0] >= int64_t(r))
    return err(n, absl::StrCat("axis must be one of the ", r, " dims of ", shape_str(x.shape)));
  if (idx.shape.size() != r)
    return err(n, absl::StrCat("indices ", shape_str(idx.shape), " must have the rank of ", shape_str(x.shape)));
  for (size_t d = 0; d < r; ++d)
    if (int64_t(d) != n.ints[0] && idx.shape[d] != x.shape[d])
      return err(n, absl::StrCat("indices ", shape_str(idx.shape), " and ", shape_str(x.shape),
                                 " differ outside axis ", n.ints[0]));
  if (x.shape[size_t(n.ints[0])] == 0 && shape_numel(idx.shape) > 0)
    return err(n, "cannot gather from an empty axis");
  if (n.shape != idx.shape) return err(n, "result shape must equal the indices' shape");
  return absl::OkStatus();
}

absl::Status check_scatter(const Operands& g, const Node& n) {
  const Operand data = g.node(n.inputs[0]);
  const Operand idx = g.node(n.inputs[1]);
  const Operand upd = g.node(n.inputs[2]);
  if (n.dtype != data.dtype || n.shape != data.shape) return err(n, "result must have the data's dtype and shape");
  if (!is_int(idx.dtype))
    return err(n, absl::StrCat("indices must have an integer dtype, got ", dtype_name(idx.dtype)));
  if (upd.dtype != data.dtype) return err(n, "updates must have the data's dtype");
  if (upd.shape != idx.shape) return err(n, "updates must have the indices' shape");
  size_t r = data.shape.size();
  if (n.ints.size() != 2 || n.ints[0] < 0 || n.ints[0] >= int64_t(r))
    return err(n, absl::StrCat("needs an axis of ", shape_str(data.shape), " and a mode"));
  if (n.ints[1] < 0 || n.ints[1] > int64_t(ScatterMode::kMin)) return err(n, "unknown mode");
  if (n.ints[1] != 0 && data.dtype == DType::kBool) return err(n, "a reduction needs numeric data, got bool");
  if (idx.shape.size() != r)
    return err(n, absl::StrCat("indices ", shape_str(idx.shape), " must have the rank of ", shape_str(data.shape)));
  for (size_t d = 0; d < r; ++d)
    if (int64_t(d) != n.ints[0] && idx.shape[d] > data.shape[d])
      return err(n, absl::StrCat("indices ", shape_str(idx.shape), " exceed ", shape_str(data.shape), " along axis ", d));
  return absl::OkStatus();
}

absl::Status check_segment(const Operands& g, const Node& n) {
  const Operand data = g.node(n.inputs[0]);
  const Operand off = g.node(n.inputs[1]);
  if (n.dtype != data.dtype) return err(n, "result dtype must equal the data's dtype");
  if (data.dtype == DType::kBool) return err(n, "needs numeric data, got bool");
  if (n.ints.size() != 1 || n.ints[0] < int64_t(ScatterMode::kAdd) || n.ints[0] > int64_t(ScatterMode::kMin))
    return err(n, "mode must be add, mul, max or min");
  if (off.dtype != DType::kInt64 || off.shape.size() != 1 || off.shape[0] < 1)
    return err(n, absl::StrCat("offsets must be i64 [S + 1], got ", dtype_name(off.dtype), shape_str(off.shape)));
  if (data.shape.empty()) return err(n, "data must have a row axis");
  Shape want = data.shape;
  want[0] = off.shape[0] - 1;
  if (n.shape != want) return err(n, absl::StrCat("result must be ", shape_str(want)));
  return absl::OkStatus();
}

absl::Status check_attention(const Operands& g, const Node& n) {
  if (n.inputs.size() != 3 && n.inputs.size() != 4) return err(n, "takes q, k, v and an optional bias");
  if (n.ints.size() != 1 || (n.ints[0] != 0 && n.ints[0] != 1)) return err(n, "causal must be 0 or 1");
  if (n.scalar.is_int) return err(n, "scale must be a floating-point number");
  const Shape &q = g.node(n.inputs[0]).shape, &k = g.node(n.inputs[1]).shape, &v = g.node(n.inputs[2]).shape;
  size_t r = q.size();
  if (r < 2 || k.size() != r || v.size() != r || n.shape.size() != r)
    return err(n, absl::StrCat("q ", shape_str(q), ", k ", shape_str(k), ", v ", shape_str(v),
                               " and the result must have one rank >= 2"));
  if (!is_float(n.dtype)) return err(n, "needs a floating-point dtype");
  for (int i = 0; i < 3; ++i)
    if (g.node(n.inputs[i]).dtype != n.dtype) return err(n, "q, k and v must have the result dtype");
  for (size_t d = 0; d + 2 < r; ++d)
    if (k[d] != q[d] || v[d] != q[d] || n.shape[d] != q[d]) return err(n, "batch dims differ");
  if (k[r - 1] != q[r - 1]) return err(n, absl::StrCat("q ", shape_str(q), " and k ", shape_str(k), " differ in head dim"));
  if (v[r - 2] != k[r - 2]) return err(n, absl::StrCat("k ", shape_str(k), " and v ", shape_str(v), " differ in length"));
  if (n.shape[r - 2] != q[r - 2] || n.shape[r - 1] != v[r - 1]) return err(n, "result shape is not [..., Sq, Dv]");
  if (n.inputs.size() == 4) {
    const Operand b = g.node(n.inputs[3]);
    Shape want(q.begin(), q.end() - 1);
    want.push_back(k[r - 2]);
    if (!is_float(b.dtype)) return err(n, "bias must be floating-point");
    if (b.shape != want) return err(n, absl::StrCat("bias ", shape_str(b.shape), " should be ", shape_str(want)));
  }
  return absl::OkStatus();
}

}  // namespace

// A region's signature: its inputs are the operands from `first` on (an unused one may be
// absent), and it holds no params (those are slots of the whole program).
absl::Status check_region(const Operands& g, const Node& n, const Graph& r, const char* name, size_t first) {
  if (absl::Status s = verify(r); !s.ok()) return err(n, absl::StrCat("region ", name, ": ", s.message()));
  const std::vector<NodeId> ins = r.input_nodes();
  if (ins.size() > n.inputs.size() - first)
    return err(n, absl::StrCat("region ", name, " has ", ins.size(), " inputs, the node gives it ", n.inputs.size() - first));
  for (size_t p = 0; p < ins.size(); ++p) {
    if (ins[p] < 0) continue;
    const Operand o = g.node(n.inputs[first + p]);
    const Node& in = r.node(ins[p]);
    if (in.dtype != o.dtype || in.shape != o.shape)
      return err(n, absl::StrCat("region ", name, " input ", p, " is ", dtype_name(in.dtype), shape_str(in.shape),
                                 ", its operand ", dtype_name(o.dtype), shape_str(o.shape)));
  }
  for (const Node& x : r.nodes())
    if (x.op == Op::kParam) return err(n, absl::StrCat("region ", name, " holds a param (params belong to the whole graph)"));
  return absl::OkStatus();
}

absl::Status check_control(const Operands& g, const Node& n) {
  if (n.op == Op::kResult) {
    const Node* c = g.graph_node(n.inputs[0]);
    if (!c) return err(n, "needs its control node in a graph");
    if (!is_control(c->op)) return err(n, absl::StrCat("operand is a ", op_name(c->op), ", not a while or if"));
    const int64_t count = c->ints.empty() ? 0 : c->ints[0];
    if (n.ints.size() != 1 || n.ints[0] < 0 || n.ints[0] >= count)
      return err(n, absl::StrCat("needs a result index in [0, ", count, ")"));
    const size_t k = size_t(n.ints[0]);
    const Operand v = c->op == Op::kWhile ? g.node(c->inputs[k])
                                         : Operand{(*c->regions)[0].node((*c->regions)[0].outputs()[k]).dtype,
                                                   (*c->regions)[0].node((*c->regions)[0].outputs()[k]).shape};
    if (n.dtype != v.dtype || n.shape != v.shape)
      return err(n, absl::StrCat("result ", k, " is ", dtype_name(v.dtype), shape_str(v.shape), ", the node says ",
                                 dtype_name(n.dtype), shape_str(n.shape)));
    return absl::OkStatus();
  }
  if (n.dtype != DType::kBool || !n.shape.empty()) return err(n, "the node itself is a bool[] token");
  if (!n.regions || n.regions->size() != 2) return err(n, "needs two regions");
  const Graph& r0 = (*n.regions)[0];
  const Graph& r1 = (*n.regions)[1];
  if (n.op == Op::kWhile) {
    if (n.ints.size() != 2 || n.ints[0] < 1 || size_t(n.ints[0]) > n.inputs.size() || n.ints[1] < 0)
      return err(n, "needs ints = {carried count in [1, operands], max trips >= 0}");
    if (absl::Status s = check_region(g, n, r0, "cond", 0); !s.ok()) return s;
    if (absl::Status s = check_region(g, n, r1, "body", 0); !s.ok()) return s;
    if (r0.outputs().size() != 1 || r0.node(r0.outputs()[0]).dtype != DType::kBool || !r0.node(r0.outputs()[0]).shape.empty())
      return err(n, "region cond must have one output, a bool[]");
    const size_t carried = size_t(n.ints[0]);
    if (r1.outputs().size() != carried)
      return err(n, absl::StrCat("region body has ", r1.outputs().size(), " outputs for ", carried, " carried values"));
    for (size_t k = 0; k < carried; ++k) {
      const Node& o = r1.node(r1.outputs()[k]);
      const Operand c = g.node(n.inputs[k]);
      if (o.dtype != c.dtype || o.shape != c.shape)
        return err(n, absl::StrCat("region body output ", k, " is ", dtype_name(o.dtype), shape_str(o.shape),
                                   ", its carried value ", dtype_name(c.dtype), shape_str(c.shape)));
    }
    return absl::OkStatus();
  }
  const Operand pred = g.node(n.inputs[0]);
  if (pred.dtype != DType::kBool || !pred.shape.empty()) return err(n, "the predicate must be a bool[]");
  if (n.ints.size() != 1 || n.ints[0] < 1) return err(n, "needs ints = {result count >= 1}");
  if (absl::Status s = check_region(g, n, r0, "then", 1); !s.ok()) return s;
  if (absl::Status s = check_region(g, n, r1, "else", 1); !s.ok()) return s;
  const size_t count = size_t(n.ints[0]);
  if (r0.outputs().size() != count || r1.outputs().size() != count)
    return err(n, absl::StrCat("regions then and else must have ", count, " outputs, they have ", r0.outputs().size(),
                               " and ", r1.outputs().size()));
  for (size_t k = 0; k < count; ++k) {
    const Node& a = r0.node(r0.outputs()[k]);
    const Node& b = r1.node(r1.outputs()[k]);
    if (a.dtype != b.dtype || a.shape != b.shape)
      return err(n, absl::StrCat("result ", k, " is ", dtype_name(a.dtype), shape_str(a.shape), " in then and ",
                                 dtype_name(b.dtype), shape_str(b.shape), " in else"));
  }
  return absl::OkStatus();
}

absl::StatusOr<Shape> broadcast_shapes(const Shape& a, const Shape& b, const std::string& op_label) {
  size_t r = std::max(a.size(), b.size());
  Shape out(r);
  for (size_t i = 0; i < r; ++i) {
    int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
    int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
    if (da != db && da != 1 && db != 1)
      return absl::InvalidArgumentError(absl::StrCat(op_label, ": shapes ", shape_str(a), " and ",
                                                     shape_str(b), " cannot be broadcast together"));
    out[i] = da == 1 ? db : da;
  }
  return out;
}

namespace {

absl::Status check(const Operands& g, const Node& n) {
  if (!valid_shape(n.shape)) return err(n, absl::StrCat("invalid shape ", shape_str(n.shape)));
  int arity = op_arity(n.op);
  // A random op takes its seed from an optional i64 param operand (ir/params.h).
  if ((n.op == Op::kRand || n.op == Op::kRandn) && n.inputs.size() == 1) {
    const Operand s = g.node(n.inputs[0]);
    if (s.dtype != DType::kInt64 || !s.shape.empty()) return err(n, "a seed operand must be an i64[] param");
    arity = 1;
  }
  if (arity >= 0 && int(n.inputs.size()) != arity)
    return err(n, absl::StrCat("expects ", arity, " operands, got ", n.inputs.size()));
  if (arity < 0 && n.inputs.empty()) return err(n, "expects at least one operand");
  if (n.regions && !is_control(n.op)) return err(n, "only while and if have regions");
  switch (op_class(n.op)) {
    case OpClass::kSource:
      switch (n.op) {
        case Op::kInput:
          if (n.ints.size() != 1 || n.ints[0] < 0) return err(n, "needs an input position");
          return absl::OkStatus();
        case Op::kConst:
          if (n.scalar.is_int == is_float(n.dtype)) return err(n, "value kind does not match the dtype");
          return absl::OkStatus();
        case Op::kParam:
          if (n.scalar.is_int == is_float(n.dtype)) return err(n, "value kind does not match the dtype");
          if (n.dtype == DType::kBool) return err(n, "a param cannot be bool");
          if (n.ints.size() != 1 || n.ints[0] < 0 || n.ints[0] >= kMaxParams)
            return err(n, absl::StrCat("needs a slot in [0, ", kMaxParams, ")"));
          return absl::OkStatus();
        case Op::kIota:
          if (n.shape.size() != 1) return err(n, "iota is 1-D");
          if (n.dtype == DType::kBool) return err(n, "iota cannot be bool");
          return absl::OkStatus();
        default:
          if (n.ints.size() != 1) return err(n, "needs a seed");
          if (!is_float(n.dtype)) return err(n, "random values need a float dtype");
          return absl::OkStatus();
      }
    case OpClass::kUnary:
    case OpClass::kBinary:
    case OpClass::kTernary: return check_elementwise(g, n);
    case OpClass::kReduce: {
      const Operand a = g.node(n.inputs[0]);
      if (is_arg_reduce(n.op)) {
        if (n.dtype != DType::kInt64) return err(n, "result must be i64");
      } else if (n.dtype != a.dtype || n.dtype == DType::kBool) {
        return err(n, "result dtype must equal the numeric operand dtype");
      }
      return check_axes(n, a.shape, is_arg_reduce(n.op));
    }
    case OpClass::kMovement: return check_movement(g, n);
    case OpClass::kContract: {
      if (n.op == Op::kAttention) return check_attention(g, n);
      const Operand a = g.node(n.inputs[0]);
      const Operand b = g.node(n.inputs[1]);
      size_t r = a.shape.size();
      if (r < 2 || b.shape.size() != r || n.shape.size() != r)
        return err(n, absl::StrCat("operands ", shape_str(a.shape), " and ", shape_str(b.shape),
                                   " must have equal rank >= 2"));
      if (a.dtype != b.dtype || n.dtype != a.dtype || a.dtype == DType::kBool)
        return err(n, "operand dtypes must be equal and numeric");
      for (size_t i = 0; i + 2 < r; ++i)
        if (a.shape[i] != b.shape[i] || n.shape[i] != a.shape[i]) return err(n, "batch dims differ");
      if (a.shape[r - 1] != b.shape[r - 2])
        return err(n, absl::StrCat("contraction dims differ: ", shape_str(a.shape), " and ",
                                   shape_str(b.shape)));
      if (n.shape[r - 2] != a.shape[r - 2] || n.shape[r - 1] != b.shape[r - 1])
        return err(n, "result shape is not [..., M, N]");
      if (!n.ints.empty() && (n.ints.size() != 1 || n.ints[0] != 1))
        return err(n, "the only attribute a dot takes is ints = {1} (TF32 precision)");
      if (!n.ints.empty() && n.dtype != DType::kFloat32) return err(n, "TF32 precision needs float32 operands");
      return absl::OkStatus();
    }
    case OpClass::kIndex:
      if (n.op == Op::kGather) return check_gather(g, n);
      return n.op == Op::kScatter ? check_scatter(g, n) : check_segment(g, n);
    case OpClass::kKernel: return err(n, "kernel-IR op in a graph");
    case OpClass::kControl: return check_control(g, n);
    case OpClass::kCollective: {
      const Operand a = g.node(n.inputs[0]);
      if (n.ints.size() != 5) return err(n, "needs ints {kind, fold, root, world, group}");
      auto shape = collective_shape(CollectiveAttrs::from_ints(n.ints), a.shape);
      if (!shape.ok()) return err(n, std::string(shape.status().message()));
      if (*shape != n.shape)
        return err(n, absl::StrCat("result shape ", shape_str(n.shape), " should be ", shape_str(*shape)));
      if (n.dtype != a.dtype) return err(n, "result dtype must equal the operand's");
      return absl::OkStatus();
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status check_node(const Graph& g, const Node& n) { return check(Operands(g), n); }

absl::Status check_node(const Node& n, const std::vector<OperandInfo>& operands) {
  if (n.inputs.size() != operands.size()) return err(n, "operand list does not match the node's inputs");
  for (NodeId in : n.inputs)
    if (in < 0 || size_t(in) >= operands.size()) return err(n, "operand index out of range");
  return check(Operands(operands), n);
}

namespace {

// Params (ir/params.h): slots 0..k-1 for k param nodes, each once; a random op's seed operand is
// a param.
absl::Status verify_params(const Graph& g) {
  std::vector<int> seen;
  for (size_t i = 0; i < g.size(); ++i) {
    const Node& n = g.node(NodeId(i));
    if ((n.op == Op::kRand || n.op == Op::kRandn) && !n.inputs.empty() && g.node(n.inputs[0]).op != Op::kParam)
      return absl::InvalidArgumentError(absl::StrCat("%", i, " (", op_name(n.op), "): its seed operand must be a param"));
    if (n.op != Op::kParam) continue;
    const size_t slot = size_t(n.ints[0]);
    if (seen.size() <= slot) seen.resize(slot + 1, 0);
    if (seen[slot]++) return absl::InvalidArgumentError(absl::StrCat("param slot ", slot, " appears twice"));
  }
  for (size_t i = 0; i < seen.size(); ++i)
    if (!seen[i]) return absl::InvalidArgumentError(absl::StrCat("param slot ", i, " is missing"));
  return absl::OkStatus();
}

}  // namespace

absl::Status verify(const Graph& g) {
  for (size_t i = 0; i < g.size(); ++i) {
    const Node& n = g.node(NodeId(i));
    for (NodeId in : n.inputs)
      if (in < 0 || size_t(in) >= i)
        return absl::InvalidArgumentError(
            absl::StrCat("%", i, " (", op_name(n.op), "): operand %", in, " is not defined before it"));
    absl::Status s = check_node(g, n);
    if (!s.ok()) return absl::InvalidArgumentError(absl::StrCat("%", i, ": ", s.message()));
  }
  if (g.outputs().empty()) return absl::InvalidArgumentError("graph has no outputs");
  if (absl::Status s = verify_params(g); !s.ok()) return s;
  for (NodeId o : g.outputs())
    if (o < 0 || size_t(o) >= g.size()) return absl::InvalidArgumentError(absl::StrCat("output %", o, " out of range"));
  // Positions 0..k-1 for k input nodes (checked before num_inputs(), which trusts them).
  int64_t count = 0;
  for (const Node& n : g.nodes()) count += n.op == Op::kInput;
  for (const Node& n : g.nodes())
    if (n.op == Op::kInput && n.ints[0] >= count)
      return absl::InvalidArgumentError(
          absl::StrCat("input position ", n.ints[0], " is out of range: the graph has ", count, count == 1 ? " input" : " inputs"));
  std::vector<int> seen(size_t(count), 0);
  for (const Node& n : g.nodes())
    if (n.op == Op::kInput) seen[size_t(n.ints[0])]++;
  for (size_t i = 0; i < seen.size(); ++i)
    if (seen[i] != 1)
      return absl::InvalidArgumentError(absl::StrCat("input position ", i, seen[i] ? " appears twice" : " is missing"));
  return absl::OkStatus();
}

}  // namespace kiln::ir

#include "passes/attention.h"

#include <cmath>

#include "absl/strings/str_cat.h"
#include "passes/add_node.h"

namespace kiln::passes {
namespace {

using ir::Graph;
using ir::Node;
using ir::NodeId;
using ir::Op;


NodeId cast_to(Graph* g, NodeId x, DType dt) {
  const Node& n = g->node(x);
  return n.dtype == dt ? x : add_node(g, Op::kCast, dt, n.shape, {x});
}

NodeId constant(Graph* g, double v, DType dt, const Shape& shape) {
  return add_node(g, Op::kConst, dt, shape, {}, {}, Scalar::from_double(v));
}

std::vector<int64_t> swap_last_two(size_t r) {
  std::vector<int64_t> p(r);
  for (size_t i = 0; i < r; ++i) p[i] = int64_t(i);
  std::swap(p[r - 1], p[r - 2]);
  return p;
}

Shape swapped(Shape s) {
  std::swap(s[s.size() - 1], s[s.size() - 2]);
  return s;
}

// `x` broadcast from a reduction over the last axis of `of` (keepdim): expand(reduce(of)).
bool is_row_reduction_of(const Graph& g, NodeId x, Op reduce, NodeId of) {
  const Node& e = g.node(x);
  if (e.op != Op::kExpand) return false;
  const Node& r = g.node(e.inputs[0]);
  const int64_t last = int64_t(g.node(of).shape.size()) - 1;
  return r.op == reduce && r.inputs[0] == of && r.ints == std::vector<int64_t>{last};
}

bool const_value(const Graph& g, NodeId x, double* v) {
  const Node& n = g.node(x);
  if (n.op != Op::kConst) return false;
  *v = n.scalar.as_double();
  return true;
}

NodeId strip_float_casts(const Graph& g, NodeId x) {
  while (g.node(x).op == Op::kCast && is_float(g.node(g.node(x).inputs[0]).dtype)) x = g.node(x).inputs[0];
  return x;
}

// A written-out attention ending at dot node `o`:
//   o = dot(cast?(p), v),  p = e / expand(reduce_sum(e)),  e = exp(x - expand(reduce_max(x))),
//   x = where?(cond, x1, -inf),  x1 = x2 + bias?,  x2 = scale * cast?(dot(q, kt)) (any number of
//   constant factors and divisors, either side).
struct Match {
  NodeId q = -1, kt = -1, v = -1, bias = -1, cond = -1;
  double scale = 1.0;
};

bool match(const Graph& g, NodeId o, Match* m) {
  const Node& out = g.node(o);
  if (out.op != Op::kDot) return false;
  NodeId p = strip_float_casts(g, out.inputs[0]);
  const Node& pn = g.node(p);
  if (pn.op != Op::kDiv) return false;
  NodeId e = pn.inputs[0];
  if (!is_row_reduction_of(g, pn.inputs[1], Op::kReduceSum, e) || g.node(e).op != Op::kExp) return false;
  const Node& sub = g.node(g.node(e).inputs[0]);
  if (sub.op != Op::kSub) return false;
  NodeId x = sub.inputs[0];
  if (!is_row_reduction_of(g, sub.inputs[1], Op::kReduceMax, x)) return false;
  x = strip_float_casts(g, x);
  double v;
  if (g.node(x).op == Op::kWhere && const_value(g, g.node(x).inputs[2], &v) && v == -INFINITY) {
    m->cond = g.node(x).inputs[0];
    x = strip_float_casts(g, g.node(x).inputs[1]);
  }
  // The bias is the addend that is not the scaled scores.
  auto scores = [&](NodeId y, double* scale) -> NodeId {
    *scale = 1.0;
    for (;;) {
      y = strip_float_casts(g, y);
      const Node& n = g.node(y);
      double c;
      if (n.op == Op::kMul && const_value(g, n.inputs[1], &c)) {
        *scale *= c;
        y = n.inputs[0];
      } else if (n.op == Op::kMul && const_value(g, n.inputs[0], &c)) {
        *scale *= c;
        y = n.inputs[1];
      } else if (n.op == Op::kDiv && const_value(g, n.inputs[1], &c)) {
        *scale /= c;
        y = n.inputs[0];
      } else {
        return n.op == Op::kDot ? y : -1;
      }
    }
  };
  NodeId s = scores(x, &m->scale);
  if (s < 0 && g.node(x).op == Op::kAdd) {
    for (int side = 0; side < 2 && s < 0; ++side) {
      s = scores(g.node(x).inputs[side], &m->scale);
      if (s >= 0) m->bias = g.node(x).inputs[1 - side];
    }
  }
  if (s < 0 || !std::isfinite(m->scale)) return false;
  m->q = g.node(s).inputs[0];
  m->kt = g.node(s).inputs[1];
  m->v = out.inputs[1];
  DType dt = out.dtype;
  return g.node(m->q).dtype == dt && g.node(m->kt).dtype == dt && g.node(m->v).dtype == dt &&
         g.node(s).shape.back() == g.node(m->v).shape[g.node(m->v).shape.size() - 2];
}

// attention(q, k, v, bias?) in primitives, computed in f32 and cast to the result dtype.
NodeId expand(Graph* g, const Node& n, const std::vector<NodeId>& in) {
  const DType f = DType::kFloat32;
  const size_t r = n.shape.size();
  NodeId q = cast_to(g, in[0], f), k = cast_to(g, in[1], f), v = cast_to(g, in[2], f);
  Shape ks = g->node(k).shape, ss = g->node(q).shape;
  ss.back() = ks[r - 2];  // [B..., Sq, Sk]
  NodeId kt = add_node(g, Op::kPermute, f, swapped(ks), {k}, swap_last_two(r));
  NodeId s = add_node(g, Op::kDot, f, ss, {q, kt});
  double scale = n.scalar.as_double();
  if (scale != 1.0) s = add_node(g, Op::kMul, f, ss, {s, constant(g, scale, f, ss)});
  if (in.size() > 3) s = add_node(g, Op::kAdd, f, ss, {s, cast_to(g, in[3], f)});
  if (n.ints[0]) {
    // Keep column j of row i where j <= i.
    Shape row(r, 1), col(r, 1);
    row[r - 2] = ss[r - 2];
    col[r - 1] = ss[r - 1];
    NodeId i = add_node(g, Op::kIota, DType::kInt64, {ss[r - 2]}, {});
    NodeId j = add_node(g, Op::kIota, DType::kInt64, {ss[r - 1]}, {});
    i = add_node(g, Op::kExpand, DType::kInt64, ss, {add_node(g, Op::kReshape, DType::kInt64, row, {i})});
    j = add_node(g, Op::kExpand, DType::kInt64, ss, {add_node(g, Op::kReshape, DType::kInt64, col, {j})});
    NodeId keep = add_node(g, Op::kLe, DType::kBool, ss, {j, i});
    s = add_node(g, Op::kWhere, f, ss, {keep, s, constant(g, -INFINITY, f, ss)});
  }
  Shape rs = ss;
  rs.back() = 1;
  const std::vector<int64_t> last{int64_t(r - 1)};
  NodeId mx = add_node(g, Op::kExpand, f, ss, {add_node(g, Op::kReduceMax, f, rs, {s}, last)});
  NodeId e = add_node(g, Op::kExp, f, ss, {add_node(g, Op::kSub, f, ss, {s, mx})});
  NodeId z = add_node(g, Op::kExpand, f, ss, {add_node(g, Op::kReduceSum, f, rs, {e}, last)});
  NodeId p = add_node(g, Op::kDiv, f, ss, {e, z});
  Shape os = n.shape;
  return cast_to(g, add_node(g, Op::kDot, f, os, {p, v}), n.dtype);
}

}  // namespace

bool attention_fast_path(const ir::TargetInfo& t, DType dt, int64_t d, int64_t dv, std::string* why) {
  if (!t.fused_attention) {
    *why = absl::StrCat("target ", t.name, " has no fused attention kernel");
    return false;
  }
  if (dt != DType::kBFloat16 && dt != DType::kFloat16) {
    *why = absl::StrCat("the fused kernel takes bf16/f16, not ", dtype_name(dt));
    return false;
  }
  if (d != dv || (d != 64 && d != 128)) {
    *why = absl::StrCat("the fused kernel takes head dims 64 or 128 (q/k ", d, ", v ", dv, ")");
    return false;
  }
  return true;
}

Graph place_attention(const Graph& g, const ir::TargetInfo& t, std::vector<std::string>* decisions) {
  bool any = false;
  for (const Node& n : g.nodes()) any = any || n.op == Op::kAttention || (t.fused_attention && n.op == Op::kDot);
  if (!any) return g;
  Graph out;
  std::vector<NodeId> map(g.size(), -1);
  for (size_t id = 0; id < g.size(); ++id) {
    const Node& n = g.node(NodeId(id));
    std::vector<NodeId> in;
    for (NodeId x : n.inputs) in.push_back(map[x]);
    std::string why;
    const size_t r = n.shape.size();
    if (n.op == Op::kAttention) {
      const Shape &qs = g.node(n.inputs[0]).shape, &vs = g.node(n.inputs[2]).shape;
      if (attention_fast_path(t, n.dtype, qs[r - 1], vs[r - 1], &why)) {
        Node m = n;
        m.inputs = in;
        map[id] = out.add(std::move(m));
        decisions->push_back(absl::StrCat("attention %", id, ": one fused kernel"));
      } else {
        map[id] = expand(&out, n, in);
        decisions->push_back(absl::StrCat("attention %", id, ": expanded into primitives (", why, ")"));
      }
      continue;
    }
    Match m;
    if (t.fused_attention && match(g, NodeId(id), &m)) {
      const Shape &qs = g.node(m.q).shape, &vs = g.node(m.v).shape;
      if (attention_fast_path(t, n.dtype, qs[r - 1], vs[r - 1], &why)) {
        NodeId kt = map[m.kt];
        NodeId k = out.add([&] {
          Node p;
          p.op = Op::kPermute;
          p.dtype = out.node(kt).dtype;
          p.shape = swapped(out.node(kt).shape);
          p.inputs = {kt};
          p.ints = swap_last_two(r);
          return p;
        }());
        std::vector<NodeId> ops{map[m.q], k, map[m.v]};
        Shape ss = qs;
        ss.back() = g.node(m.kt).shape.back();
        NodeId bias = m.bias >= 0 ? map[m.bias] : -1;
        if (m.cond >= 0) {
          const DType f = DType::kFloat32;
          NodeId keep = bias >= 0 ? cast_to(&out, bias, f) : constant(&out, 0.0, f, ss);
          bias = add_node(&out, Op::kWhere, f, ss, {map[m.cond], keep, constant(&out, -INFINITY, f, ss)});
        }
        if (bias >= 0) ops.push_back(bias);
        map[id] = add_node(&out, Op::kAttention, n.dtype, n.shape, ops, {0}, Scalar::from_double(m.scale));
        decisions->push_back(absl::StrCat("attention: softmax(q @ k^T) @ v ending at %", id,
                                          " recognized, one fused kernel"));
        continue;
      }
      decisions->push_back(absl::StrCat("attention: softmax(q @ k^T) @ v ending at %", id,
                                        " stays unfused (", why, ")"));
    }
    Node c = n;
    c.inputs = in;
    map[id] = out.add(std::move(c));
  }
  for (NodeId o : g.outputs()) out.add_output(map[o]);
  return out;
}

}  // namespace kiln::passes

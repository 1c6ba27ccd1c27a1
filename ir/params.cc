// Lifting constants into params and encoding their values (params.h).
#include "ir/params.h"

#include <cmath>
#include <cstring>

#include "ir/half.h"
#include "ir/random.h"

namespace kiln::ir {

uint64_t encode_param(const ParamDesc& d, const Scalar& value) {
  if (d.rng_key) {
    const RngKey k = rng_key(uint64_t(value.as_int()));
    return uint64_t(k.k0) | uint64_t(k.k1) << 32;
  }
  if (d.dtype == DType::kFloat64) {
    const double v = value.as_double();
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    return bits;
  }
  if (is_float(d.dtype)) {
    const float v = float(const_value(d.dtype, value).as_double());
    uint32_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    return bits;
  }
  return uint64_t(value.cast_to(d.dtype).as_int());
}

std::vector<ParamDesc> param_descs(const Graph& g) {
  std::vector<ParamDesc> d;
  for (const Node& n : g.nodes()) {
    if (n.op != Op::kParam) continue;
    if (d.size() <= size_t(n.ints[0])) d.resize(size_t(n.ints[0]) + 1);
    d[size_t(n.ints[0])].dtype = n.dtype;
  }
  for (const Node& n : g.nodes())
    if ((n.op == Op::kRand || n.op == Op::kRandn) && !n.inputs.empty())
      d[size_t(g.node(n.inputs[0]).ints[0])].rng_key = true;
  return d;
}

std::vector<Scalar> param_values(const Graph& g) {
  std::vector<Scalar> v;
  for (const Node& n : g.nodes()) {
    if (n.op != Op::kParam) continue;
    if (v.size() <= size_t(n.ints[0])) v.resize(size_t(n.ints[0]) + 1);
    v[size_t(n.ints[0])] = n.scalar;
  }
  return v;
}

namespace {

// The constant behind `x` through views and casts, or -1.
NodeId const_source(const Graph& g, NodeId x) {
  while (is_movement(g.node(x).op) && g.node(x).op != Op::kConcat) x = g.node(x).inputs[0];
  while (g.node(x).op == Op::kCast) x = g.node(x).inputs[0];
  while (is_movement(g.node(x).op) && g.node(x).op != Op::kConcat) x = g.node(x).inputs[0];
  return g.node(x).op == Op::kConst ? x : -1;
}

// Constants whose value a pass reads to choose code (params.h).
std::vector<bool> pinned_constants(const Graph& g) {
  std::vector<bool> pinned(g.size(), false), scaled_dot(g.size(), false);
  auto pin = [&](NodeId x) {
    if (NodeId c = const_source(g, x); c >= 0) pinned[size_t(c)] = true;
  };
  for (size_t i = 0; i < g.size(); ++i) {
    const Node& n = g.node(NodeId(i));
    if (n.op == Op::kPow) pin(n.inputs[1]);
    if (n.op == Op::kDot) scaled_dot[i] = true;
    if (n.op == Op::kCast || n.op == Op::kReshape || n.op == Op::kExpand) scaled_dot[i] = scaled_dot[size_t(n.inputs[0])];
    if (n.op == Op::kMul || n.op == Op::kDiv) {
      for (int k = 0; k < 2; ++k)
        if (scaled_dot[size_t(n.inputs[size_t(k)])]) {
          pin(n.inputs[size_t(1 - k)]);
          scaled_dot[i] = true;
        }
    }
  }
  return pinned;
}

bool liftable_value(const Node& n) {
  if (!is_float(n.dtype) || n.scalar.is_int) return false;
  const double v = n.scalar.f;
  return std::isfinite(v) && v != 0 && v != 1 && v != -1;
}

}  // namespace

Graph lift_params(const Graph& g, std::vector<NodeId>* map) {
  const std::vector<bool> pinned = pinned_constants(g);
  Graph out;
  std::vector<NodeId> ids(g.size(), -1);
  int64_t slots = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    Node n = g.node(NodeId(i));
    for (NodeId& x : n.inputs) x = ids[size_t(x)];
    if (n.op == Op::kConst && !pinned[i] && liftable_value(n) && slots < kMaxParams) {
      n.op = Op::kParam;
      n.ints = {slots++};
    } else if ((n.op == Op::kRand || n.op == Op::kRandn) && n.inputs.empty() && slots < kMaxParams) {
      Node seed;
      seed.op = Op::kParam;
      seed.dtype = DType::kInt64;
      seed.ints = {slots++};
      seed.scalar = Scalar::from_int(n.ints[0]);
      n.inputs = {out.add(std::move(seed))};
      n.ints = {0};
    }
    ids[i] = out.add(std::move(n));
  }
  for (NodeId o : g.outputs()) out.add_output(ids[size_t(o)]);
  if (map) *map = std::move(ids);
  return out;
}

Graph bake_params(const Graph& g) {
  Graph out;
  std::vector<NodeId> ids(g.size(), -1);
  for (size_t i = 0; i < g.size(); ++i) {
    Node n = g.node(NodeId(i));
    if ((n.op == Op::kRand || n.op == Op::kRandn) && !n.inputs.empty()) {
      n.ints = {g.node(n.inputs[0]).scalar.as_int()};
      n.inputs.clear();
    }
    for (NodeId& x : n.inputs) x = ids[size_t(x)];
    if (n.op == Op::kParam) {
      n.op = Op::kConst;
      n.ints.clear();
    }
    ids[i] = out.add(std::move(n));
  }
  for (NodeId o : g.outputs()) out.add_output(ids[size_t(o)]);
  return out;
}

}  // namespace kiln::ir

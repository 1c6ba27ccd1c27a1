#include "passes/split_reduce.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "passes/add_node.h"

namespace kiln::passes {
namespace {

using ir::Graph;
using ir::Node;
using ir::NodeId;
using ir::Op;

Scalar identity_of(Op op, DType t) {
  bool f = is_float(t);
  switch (op) {
    case Op::kReduceSum: return f ? Scalar::from_double(0) : Scalar::from_int(0);
    case Op::kReduceProd: return f ? Scalar::from_double(1) : Scalar::from_int(1);
    case Op::kReduceMax:
      if (f) return Scalar::from_double(-INFINITY);
      return Scalar::from_int(int_lowest(t));
    case Op::kReduceMin:
      if (f) return Scalar::from_double(INFINITY);
      return Scalar::from_int(int_highest(t));
    default: return {};
  }
}


// Split-K (SplitPolicy::min_dot_tiles): returns the node that replaces dot `n` (inputs already
// mapped into `r`), or -1 to keep it.
NodeId split_dot(Graph* r, const Node& n, const SplitPolicy& policy) {
  const bool half = n.dtype == DType::kBFloat16 || n.dtype == DType::kFloat16;
  if (policy.min_dot_tiles <= 0 || (n.dtype != DType::kFloat32 && n.dtype != DType::kFloat64 && !half)) return -1;
  const Shape& a = r->node(n.inputs[0]).shape;
  const Shape& b = r->node(n.inputs[1]).shape;
  const size_t rank = a.size();
  if (rank < 2) return -1;
  const int64_t M = a[rank - 2], K = a[rank - 1], N = b[rank - 1];
  int64_t batch = 1;
  for (size_t d = 0; d + 2 < rank; ++d) batch *= a[d];
  // 16-bit products run on tensor-core kernels of 128-row tiles; a split of them keeps to one wave
  // (those kernels walk their tiles from one block per multiprocessor) and to chunks that stay
  // 16-byte aligned views (no padding: the copy engines read them in place).
  const int64_t rows = half ? 128 : 64;
  const int64_t tiles = batch * ((M + rows - 1) / rows) * ((N + 63) / 64);
  if (tiles == 0 || tiles >= policy.min_dot_tiles) return -1;
  int64_t S = 1;
  if (half) {
    while (tiles * S * 2 <= policy.half_waves * policy.min_dot_tiles && K / (S * 2) >= policy.min_half_dot_chunk &&
           K % (S * 2 * 8) == 0)
      S *= 2;
  } else if (K >= policy.min_dot_k) {
    while (tiles * S * 2 <= 4 * policy.min_dot_tiles && K / (S * 2) >= policy.min_dot_chunk) S *= 2;  // up to 4 per multiprocessor
  }
  if (S == 1) return -1;
  const int64_t chunk = (K + S - 1) / S;
  const Shape batch_dims(a.begin(), a.end() - 2);
  auto with = [&](std::initializer_list<int64_t> tail) {
    Shape s = batch_dims;
    s.insert(s.end(), tail);
    return s;
  };
  // lhs [B..., M, K] -> pad k -> [B..., M, S, chunk] -> [B..., S, M, chunk].
  NodeId x = n.inputs[0], y = n.inputs[1];
  const Scalar zero = identity_of(Op::kReduceSum, n.dtype);
  if (S * chunk != K) {
    std::vector<int64_t> pad(2 * rank, 0);
    pad[2 * rank - 1] = S * chunk - K;
    x = add_node(r, Op::kPad, n.dtype, with({M, S * chunk}), {x}, pad, zero);
    pad.assign(2 * rank, 0);
    pad[2 * rank - 3] = S * chunk - K;
    y = add_node(r, Op::kPad, n.dtype, with({S * chunk, N}), {y}, pad, zero);
  }
  x = add_node(r, Op::kReshape, n.dtype, with({M, S, chunk}), {x});
  std::vector<int64_t> perm;
  for (size_t d = 0; d + 2 < rank; ++d) perm.push_back(int64_t(d));
  perm.insert(perm.end(), {int64_t(rank - 1), int64_t(rank - 2), int64_t(rank)});
  x = add_node(r, Op::kPermute, n.dtype, with({S, M, chunk}), {x}, perm);
  // rhs [B..., K, N] -> [B..., S, chunk, N]; S partial products [B..., S, M, N], summed over S.
  y = add_node(r, Op::kReshape, n.dtype, with({S, chunk, N}), {y});
  // 16-bit products: float32 partial sums (the tensor cores accumulate in float32; rounding each
  // partial to the dtype would add S roundings), summed in float32, rounded once.
  const DType acc = half ? DType::kFloat32 : n.dtype;
  if (half) {
    x = add_node(r, Op::kCast, acc, r->node(x).shape, {x});
    y = add_node(r, Op::kCast, acc, r->node(y).shape, {y});
  }
  NodeId partial = add_node(r, Op::kDot, acc, with({S, M, N}), {x, y}, half ? std::vector<int64_t>{} : n.ints, n.scalar);
  NodeId sum = add_node(r, Op::kReduceSum, acc, with({1, M, N}), {partial}, {int64_t(rank - 2)});
  if (half) sum = add_node(r, Op::kCast, n.dtype, with({1, M, N}), {sum});
  return add_node(r, Op::kReshape, n.dtype, n.shape, {sum});
}

}  // namespace

ir::Graph split_reduce(const ir::Graph& g, const SplitPolicy& policy) {
  Graph r;
  std::vector<NodeId> map(g.size());
  for (size_t id = 0; id < g.size(); ++id) {
    Node n = g.node(NodeId(id));
    for (NodeId& x : n.inputs) x = map[x];
    if (n.op == Op::kDot) {
      const NodeId split = split_dot(&r, n, policy);
      map[id] = split >= 0 ? split : r.add(std::move(n));
      continue;
    }
    bool plain = n.op == Op::kReduceSum || n.op == Op::kReduceProd || n.op == Op::kReduceMax || n.op == Op::kReduceMin;
    if (!plain) {
      map[id] = r.add(std::move(n));
      continue;
    }
    const Shape& in = r.node(n.inputs[0]).shape;
    int64_t outer = shape_numel(n.shape), red = shape_numel(in) / std::max<int64_t>(outer, 1);
    // Reduce axes after every kept axis (ignoring size-1 axes) make a row reduction: each output
    // reads one contiguous stretch.
    auto reduced = [&](size_t d) { return std::find(n.ints.begin(), n.ints.end(), int64_t(d)) != n.ints.end(); };
    bool rows = true;
    for (size_t e = 0; e < in.size(); ++e) {
      if (!reduced(e) || in[e] <= 1) continue;
      for (size_t d = e + 1; d < in.size(); ++d)
        if (!reduced(d) && in[d] > 1) rows = false;
    }
    int64_t min_outputs = rows ? policy.min_row_outputs : policy.min_column_outputs;
    if (outer == 0 || outer >= min_outputs || red < policy.min_reduce) {
      map[id] = r.add(std::move(n));
      continue;
    }
    // Chunks: enough to reach min_outputs, each keeping at least min_chunk elements.
    int64_t P = 1;
    while (outer * P < min_outputs && red / (P * 2) >= policy.min_chunk) P *= 2;
    if (P == 1) {
      map[id] = r.add(std::move(n));
      continue;
    }
    int64_t chunk = (red + P - 1) / P;
    // x -> permute reduce axes last -> [outer, red] -> pad to P*chunk -> [outer, P, chunk].
    std::vector<int64_t> perm, keep_axes;
    Shape pshape;
    for (size_t d = 0; d < in.size(); ++d)
      if (std::find(n.ints.begin(), n.ints.end(), int64_t(d)) == n.ints.end()) perm.push_back(int64_t(d));
    for (int64_t a : n.ints) perm.push_back(a);
    for (int64_t p : perm) pshape.push_back(in[p]);
    NodeId x = n.inputs[0];
    bool identity_perm = true;
    for (size_t k = 0; k < perm.size(); ++k) identity_perm = identity_perm && perm[k] == int64_t(k);
    if (!identity_perm) x = add_node(&r, Op::kPermute, n.dtype, pshape, {x}, perm);
    x = add_node(&r, Op::kReshape, n.dtype, {outer, red}, {x});
    if (P * chunk != red)
      x = add_node(&r, Op::kPad, n.dtype, {outer, P * chunk}, {x}, {0, 0, 0, P * chunk - red}, identity_of(n.op, n.dtype));
    x = add_node(&r, Op::kReshape, n.dtype, {outer, P, chunk}, {x});
    x = add_node(&r, n.op, n.dtype, {outer, P, 1}, {x}, {2});
    x = add_node(&r, n.op, n.dtype, {outer, 1, 1}, {x}, {1});
    map[id] = add_node(&r, Op::kReshape, n.dtype, n.shape, {x});
  }
  for (NodeId o : g.outputs()) r.add_output(map[o]);
  return r;
}

}  // namespace kiln::passes

// The graph IR: a DAG of hash-consed SSA nodes over primitive ops.
//
// Node ids are positions in Graph::nodes() and are always topologically ordered (inputs have
// smaller ids). Attributes by op:
//   input        ints = {position in the graph's input list}
//   const        scalar = value (every element), any shape
//   iota         1-D; element i has value i
//   rand, randn  ints = {seed}; uniform [0,1) / standard normal, keyed by (seed, flat index)
//   cast         target dtype = node dtype
//   reduce_*     ints = reduced axes (sorted); reduced dims stay as size 1
//   argmax/min   ints = {axis}; result dtype i64, reduced dim stays as size 1
//   reshape      result shape = node shape
//   permute      ints = permutation (result dim k is input dim ints[k])
//   expand       result shape = node shape (size-1 dims broadcast)
//   slice        ints = {start_0, step_0, ..., start_{r-1}, step_{r-1}}, count = node shape
//   pad          ints = {lo_0, hi_0, ..., lo_{r-1}, hi_{r-1}} (non-negative); scalar = value
//   concat       ints = {axis}
//   window       ints = {stride_0, dilation_0, ..., stride_{r-1}, dilation_{r-1}}: operand [D_0..D_{r-1}]
//                -> [O_0..O_{r-1}, K_0..K_{r-1}] (rank 2r), element (o, k) is operand element
//                o * stride + k * dilation per axis (sliding windows: one strided view, no copy)
//   gather       x, idx -> result of idx's shape, x's dtype; ints = {axis}. x and idx have one rank
//                and equal dims except along axis; idx has an integer dtype. Element i is x at i with
//                its axis coordinate replaced by j = idx[i], where a negative j counts from the end
//                (j + x.shape[axis]); a j still outside [0, x.shape[axis]) reads 0 (false for bool).
//                So an out-of-range run-time index never reads out of bounds; see DESIGN.md.
//   scatter      data, idx, updates -> data's shape and dtype; ints = {axis, mode} (ScatterMode:
//                none, add, mul, max, min). idx has data's rank and dims no larger outside axis;
//                updates have idx's shape and data's dtype. A copy of data where each update i
//                is combined into the element at i with its axis coordinate replaced by idx[i]
//                (negative counts from the end; an index still out of range drops the update).
//                Updates along the axis apply in order: with mode none the last duplicate wins.
//   segment_reduce  data [N, R...], offsets [S + 1] (i64) -> [S, R...] of data's dtype; ints =
//                {mode} (ScatterMode add, mul, max or min: sum, product, max, min). Row s of the
//                result folds data rows [lo, hi) elementwise, lo = offsets[s] and hi = offsets[s + 1]
//                each clamped into [0, N] (hi below lo: an empty segment). An empty segment holds
//                the fold's identity: 0, 1, the dtype's lowest / highest value (-inf / inf).
//                Segments may overlap and need not be in order; float max / min propagate NaN.
//   dot          [B..., M, K] x [B..., K, N] -> [B..., M, N] (batch dims equal); ints = {} exact,
//                {1}: float32 operands may be rounded to TF32 for tensor cores (a permission;
//                the interpreter and devices without TF32 compute exactly)
//   attention    q [B..., Sq, D], k [B..., Sk, D], v [B..., Sk, Dv], optional bias [B..., Sq, Sk]
//                -> [B..., Sq, Dv]: softmax over j of (scale * q_i . k_j + bias_ij) weighting
//                v_j, with s_ij = -inf where ints = {causal} is 1 and j > i (top-left aligned);
//                scalar = scale. q, k, v share the float result dtype; bias is any float dtype.
//                No intermediate rounding is part of the meaning: implementations accumulate in
//                at least f32 (a fused kernel rounds the probabilities to the dtype before
//                weighting v, as the written-out form does); a row with no finite score is NaN.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "ir/op.h"
#include "kiln/dtype.h"

namespace kiln::ir {

using NodeId = int32_t;

class Graph;
// The nested graphs of a while or if node (shared: passes copy nodes freely).
using Regions = std::vector<Graph>;

struct Node {
  Op op = Op::kConst;
  DType dtype = DType::kFloat32;
  Shape shape;
  std::vector<NodeId> inputs;
  std::vector<int64_t> ints;
  Scalar scalar;
  std::shared_ptr<const Regions> regions;  // while, if; null otherwise

  bool operator==(const Node& o) const;
  size_t hash() const;
};

class Graph {
 public:
  // Adds a node, or returns the id of an identical existing node (hash-consing). Input ids must
  // be smaller than the new node's id; this is checked by verify(), not here.
  NodeId add(Node n);
  const Node& node(NodeId id) const { return nodes_[id]; }
  const std::vector<Node>& nodes() const { return nodes_; }
  size_t size() const { return nodes_.size(); }

  void add_output(NodeId id) { outputs_.push_back(id); }
  const std::vector<NodeId>& outputs() const { return outputs_; }
  std::vector<NodeId>& mutable_outputs() { return outputs_; }

  // Number of input nodes (max input position + 1).
  int num_inputs() const;
  // Node id of each input position (-1 when a position has no node).
  std::vector<NodeId> input_nodes() const;

  // Structural hash over ops, dtypes, shapes, attributes and edges (not input data).
  uint64_t structural_hash() const;
  // Structural equality (same nodes in the same order, same outputs).
  bool operator==(const Graph& o) const;

 private:
  void grow_table();

  std::vector<Node> nodes_;
  std::vector<NodeId> outputs_;
  std::vector<size_t> hashes_;  // Node::hash() of each node (structural_hash reuses them)
  std::vector<NodeId> table_;   // hash-consing: open addressing over hashes_, -1 = empty
};

// Result shape/dtype inference, shared by the frontend (record-time errors) and the verifier.
// `op_label` names the op in error messages (the user-facing name, e.g. "add" or "matmul").
absl::StatusOr<Shape> broadcast_shapes(const Shape& a, const Shape& b, const std::string& op_label);

// Checks that `n` is well formed given its inputs' shapes/dtypes (already in `g`), returning
// an error message that names the op and the shapes.
absl::Status check_node(const Graph& g, const Node& n);

// The same for a node not in a graph yet (the frontend checks each op as it is recorded):
// operand k of `n` is operands[n.inputs[k]] (its dtype and shape; `shape` must outlive the call).
struct OperandInfo {
  DType dtype;
  const Shape* shape;
};
absl::Status check_node(const Node& n, const std::vector<OperandInfo>& operands);

// Verifies the whole graph: topological ids, every node well formed, outputs in range; the
// regions of control nodes recursively (their signatures against the node's operands).
absl::Status verify(const Graph& g);

// IR text format: print -> parse -> print is byte-identical.
std::string print(const Graph& g);
// Parse errors are "line:col: expected ..." statuses.
absl::StatusOr<Graph> parse(const std::string& text);

// Strides of a contiguous row-major tensor of `shape` (in elements).
std::vector<int64_t> contiguous_strides(const Shape& shape);

}  // namespace kiln::ir

#include "ir/graph.h"

#include <cstring>

#include "absl/hash/hash.h"

namespace kiln::ir {

bool Node::operator==(const Node& o) const {
  return op == o.op && dtype == o.dtype && shape == o.shape && inputs == o.inputs &&
         ints == o.ints && scalar == o.scalar;
}

size_t Node::hash() const {
  uint64_t bits;
  std::memcpy(&bits, &scalar.f, sizeof bits);
  return absl::HashOf(int(op), int(dtype), shape, inputs, ints, scalar.is_int, scalar.i, bits);
}

NodeId Graph::add(Node n) {
  size_t h = n.hash();
  auto range = intern_.equal_range(h);
  for (auto it = range.first; it != range.second; ++it) {
    if (nodes_[it->second] == n) return it->second;
  }
  NodeId id = NodeId(nodes_.size());
  nodes_.push_back(std::move(n));
  intern_.emplace(h, id);
  return id;
}

int Graph::num_inputs() const {
  int n = 0;
  for (const Node& node : nodes_) {
    if (node.op == Op::kInput && !node.ints.empty()) n = std::max<int>(n, int(node.ints[0]) + 1);
  }
  return n;
}

std::vector<NodeId> Graph::input_nodes() const {
  std::vector<NodeId> r(num_inputs(), -1);
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].op == Op::kInput && !nodes_[i].ints.empty()) r[nodes_[i].ints[0]] = NodeId(i);
  }
  return r;
}

uint64_t Graph::structural_hash() const {
  uint64_t h = 0x6b696c6eULL;
  for (const Node& n : nodes_) h = absl::HashOf(h, n.hash());
  return absl::HashOf(h, outputs_);
}

bool Graph::operator==(const Graph& o) const {
  return nodes_ == o.nodes_ && outputs_ == o.outputs_;
}

std::vector<int64_t> contiguous_strides(const Shape& shape) {
  std::vector<int64_t> s(shape.size());
  int64_t acc = 1;
  for (int i = int(shape.size()) - 1; i >= 0; --i) {
    s[i] = acc;
    acc *= shape[i];
  }
  return s;
}

}  // namespace kiln::ir

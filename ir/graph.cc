#include "ir/graph.h"

#include <algorithm>
#include <cstring>

#include "absl/hash/hash.h"

namespace kiln::ir {

// A param's value is passed at run time (ir/params.h): nodes that differ only in it are one
// structure, so graphs that differ only in param values share one executable.
namespace {

bool same_regions(const std::shared_ptr<const Regions>& a, const std::shared_ptr<const Regions>& b) {
  if (a == b) return true;
  if (!a || !b || a->size() != b->size()) return false;
  for (size_t i = 0; i < a->size(); ++i)
    if (!((*a)[i] == (*b)[i])) return false;
  return true;
}

}  // namespace

bool Node::operator==(const Node& o) const {
  return op == o.op && dtype == o.dtype && shape == o.shape && inputs == o.inputs &&
         ints == o.ints && (op == Op::kParam || scalar == o.scalar) && same_regions(regions, o.regions);
}

size_t Node::hash() const {
  if (op == Op::kParam) return absl::HashOf(int(op), int(dtype), shape, ints);
  uint64_t bits;
  std::memcpy(&bits, &scalar.f, sizeof bits);
  size_t h = absl::HashOf(int(op), int(dtype), shape, inputs, ints, scalar.is_int, scalar.i, bits);
  if (regions)
    for (const Graph& r : *regions) h = absl::HashOf(h, r.structural_hash());
  return h;
}

NodeId Graph::add(Node n) {
  const size_t h = n.hash();
  if (2 * (nodes_.size() + 1) > table_.size()) grow_table();
  const size_t mask = table_.size() - 1;
  for (size_t i = h & mask;; i = (i + 1) & mask) {
    const NodeId at = table_[i];
    if (at < 0) {
      const NodeId id = NodeId(nodes_.size());
      nodes_.push_back(std::move(n));
      hashes_.push_back(h);
      table_[i] = id;
      return id;
    }
    if (hashes_[size_t(at)] == h && nodes_[size_t(at)] == n) return at;
  }
}

void Graph::grow_table() {
  table_.assign(std::max<size_t>(16, table_.size() * 2), NodeId(-1));
  const size_t mask = table_.size() - 1;
  for (size_t id = 0; id < nodes_.size(); ++id) {
    size_t i = hashes_[id] & mask;
    while (table_[i] >= 0) i = (i + 1) & mask;
    table_[i] = NodeId(id);
  }
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
  for (size_t nh : hashes_) h = absl::HashOf(h, nh);
  return absl::HashOf(h, outputs_);
}

bool Graph::operator==(const Graph& o) const {
  return hashes_ == o.hashes_ && outputs_ == o.outputs_ && nodes_ == o.nodes_;
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

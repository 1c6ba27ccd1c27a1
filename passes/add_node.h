// add_node: appends a node to a graph being rebuilt by a pass (hash-consed like every add).
#pragma once

#include <utility>
#include <vector>

#include "ir/graph.h"

namespace kiln::passes {

inline ir::NodeId add_node(ir::Graph* g, ir::Op op, DType dt, Shape shape, std::vector<ir::NodeId> in,
                           std::vector<int64_t> ints = {}, Scalar s = {}) {
  ir::Node n;
  n.op = op;
  n.dtype = dt;
  n.shape = std::move(shape);
  n.inputs = std::move(in);
  n.ints = std::move(ints);
  n.scalar = s;
  return g->add(std::move(n));
}

}  // namespace kiln::passes

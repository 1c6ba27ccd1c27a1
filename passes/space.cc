#include "passes/space.h"

namespace kiln::passes {

bool Space::has_reduce() const {
  for (bool r : reduce)
    if (r) return true;
  return false;
}

int64_t Space::reduce_count() const {
  int64_t n = 1;
  for (size_t d = 0; d < full.size(); ++d)
    if (reduce[d]) n *= full[d];
  return n;
}

ir::View Space::outer_view() const {
  ir::View v;
  v.shape = full;
  std::vector<int64_t> cs = ir::contiguous_strides(outer);
  if (dot || attention) {
    v.strides = cs;
    v.strides.resize(full.size(), 0);
  } else {
    v.strides = cs;
    for (size_t d = 0; d < full.size(); ++d)
      if (reduce[d]) v.strides[d] = 0;
  }
  v.canonicalize();
  return v;
}

bool Space::natural_map(const Shape& shape, ir::IndexMap* out) const {
  if (shape == outer) {
    *out = ir::IndexMap::of(outer_view());
    return true;
  }
  if (shape == full) {
    *out = ir::IndexMap::of(ir::View::contiguous(full));
    return true;
  }
  // A reshape of an outer (or full) value has the same row-major flat layout.
  if (shape_numel(shape) == shape_numel(outer)) {
    *out = ir::IndexMap::of(outer_view());
    return true;
  }
  if (shape_numel(shape) == shape_numel(full)) {
    *out = ir::IndexMap::of(ir::View::contiguous(full));
    return true;
  }
  return false;
}

Space elementwise_space(const Shape& shape) {
  Space s;
  s.full = s.outer = shape;
  s.reduce.assign(shape.size(), false);
  return s;
}

Space space_of(const ir::Graph& g, ir::NodeId id) {
  const ir::Node& n = g.node(id);
  Space s;
  if (ir::is_reduce(n.op)) {
    s.full = g.node(n.inputs[0]).shape;
    s.reduce.assign(s.full.size(), false);
    for (int64_t a : n.ints) s.reduce[a] = true;
    s.outer = n.shape;
  } else if (n.op == ir::Op::kDot) {
    s.dot = true;
    s.full = n.shape;
    const Shape& a = g.node(n.inputs[0]).shape;
    s.full.push_back(a.back());
    s.reduce.assign(s.full.size(), false);
    s.reduce.back() = true;
    s.outer = n.shape;
  } else if (n.op == ir::Op::kAttention) {
    s.attention = true;
    s.full = n.shape;
    const Shape& k = g.node(n.inputs[1]).shape;
    s.full.push_back(k[k.size() - 2]);  // Sk
    s.full.push_back(k.back());         // D
    s.reduce.assign(s.full.size(), false);
    s.reduce[s.full.size() - 1] = s.reduce[s.full.size() - 2] = true;
    s.outer = n.shape;
  } else if (n.op == ir::Op::kScatter) {
    s.scatter = true;
    s.full = g.node(n.inputs[1]).shape;
    s.reduce.assign(s.full.size(), false);
    s.reduce[size_t(n.ints[0])] = true;
    s.outer = s.full;
    s.outer[size_t(n.ints[0])] = 1;
  } else {
    s = elementwise_space(n.shape);
    s.segment = n.op == ir::Op::kSegmentReduce;
    s.collective = n.op == ir::Op::kCollective;
  }
  return s;
}

}  // namespace kiln::passes

// The iteration space of a kernel being formed: its full shape, its reduce axes, and how values
// of the "outer" shape (the shape after reduction) are addressed from it.
#pragma once

#include <vector>

#include "ir/graph.h"
#include "ir/view.h"

namespace kiln::passes {

struct Space {
  Shape full;                // kernel iteration shape
  std::vector<bool> reduce;  // per axis of `full`
  Shape outer;               // shape of a value computed once per outer index
  bool dot = false;          // a contraction: full = outer + [K], K is the last axis
  bool attention = false;    // attention: full = outer + [Sk, D], outer = [B..., Sq, Dv]
  bool scatter = false;      // a scatter's updates: full = the indices' shape, reduce = its axis
  bool segment = false;      // computes a segment_reduce (elementwise over its result's shape)
  bool collective = false;   // a collective: no kernel; a step of its own (ir/program.h)

  bool has_reduce() const;
  int64_t reduce_count() const;
  bool operator==(const Space& o) const {
    return full == o.full && reduce == o.reduce && outer == o.outer && dot == o.dot && attention == o.attention &&
           scatter == o.scatter && segment == o.segment && collective == o.collective;
  }
  // The view over `full` that addresses a row-major tensor of `outer` shape.
  ir::View outer_view() const;
  // The map a value of `shape` gets when computed in this space: the outer view for the outer
  // shape (or any shape with as many elements: a reshape keeps the row-major layout), the
  // identity for the full shape; false when neither fits.
  bool natural_map(const Shape& shape, ir::IndexMap* out) const;
};

// Elementwise over `shape`: no reduce axes.
Space elementwise_space(const Shape& shape);

// Space of a group whose main node is `n`: a reduction over its operand, a contraction, or
// elementwise over its own shape.
Space space_of(const ir::Graph& g, ir::NodeId n);

}  // namespace kiln::passes

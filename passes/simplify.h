// simplify: constant folding, algebraic identities, CSE (hash-consing) and dead-code elimination.
#pragma once

#include "ir/graph.h"

namespace kiln::passes {

// Returns an equivalent graph: constants folded (elementwise and movement ops on constants),
// identities removed (x*1, 1*x, x+0, 0+x, x-0, x/1, neg(neg(x)), cast to the same dtype,
// widening cast chains, no-op movement ops), structurally equal nodes merged, and nodes that no
// output needs dropped. Input positions are kept even when unused.
ir::Graph simplify(const ir::Graph& g);

}  // namespace kiln::passes

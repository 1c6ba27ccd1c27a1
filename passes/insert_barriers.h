// insert_barriers: a step depends on an earlier step only for a true hazard on overlapping
// bytes: read-after-write, write-after-read or write-after-write. Edges implied by other edges
// are dropped, so independent kernels get none.
#pragma once

#include "ir/program.h"

namespace kiln::passes {

void insert_barriers(ir::Program* p);

}  // namespace kiln::passes

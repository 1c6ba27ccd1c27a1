// split_reduce: a large reduction with too few outputs to keep the device busy becomes two
// reductions: partial results over P chunks, then a reduction of the partials.
#pragma once

#include "ir/graph.h"
#include "runtime/target_info.h"

namespace kiln::passes {

// `min_outputs`: the number of independent outputs below which a reduction of at least
// `min_reduce` elements is split.
ir::Graph split_reduce(const ir::Graph& g, int64_t min_outputs, int64_t min_reduce);

}  // namespace kiln::passes

// split_reduce: a large reduction with too few outputs to keep the device busy becomes two
// reductions: partial results over P chunks, then a reduction of the partials.
#pragma once

#include "ir/graph.h"
#include "ir/target_info.h"

namespace kiln::passes {

struct SplitPolicy {
  // A reduction over the trailing axes (each output reads a contiguous row: one workgroup per
  // output does well) is split when it has fewer outputs than this...
  int64_t min_row_outputs = 8;
  // ...a reduction over other axes (one thread per output walks strided memory) when fewer
  // than this.
  int64_t min_column_outputs = 8;
  int64_t min_reduce = 65536;  // never split reductions smaller than this
  int64_t min_chunk = 4096;    // elements each partial reduction keeps at least
};

ir::Graph split_reduce(const ir::Graph& g, const SplitPolicy& policy);

}  // namespace kiln::passes

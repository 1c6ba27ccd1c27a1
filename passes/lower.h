// Lowering a group of graph nodes into one kernel: movement ops fold into index maps (view
// folding), elementwise ops inline, reductions and contractions of the group become reduce
// nodes, and every other materialized node becomes a load.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "ir/program.h"
#include "passes/space.h"

namespace kiln::passes {

struct LowerRequest {
  const ir::Graph* graph = nullptr;
  Space space;
  std::vector<ir::NodeId> computed;  // nodes this kernel computes (its roots, incl. fused reductions)
  std::vector<ir::NodeId> stores;    // the subset written to buffers
  // Buffer of each node that lives in memory (inputs and materialized nodes), -1 otherwise.
  const std::vector<int>* buffer_of = nullptr;
  // Called for every load of a materialized node (analysis for the fuser); may be empty.
  // `indexed`: a gather's read, at positions only known at run time (the map addresses the
  // node's own shape, not the kernel's loops), or a read of the copy kernel that runs before a
  // scatter's (the map is over the data's space).
  std::function<void(ir::NodeId, const ir::IndexMap&, bool indexed)> on_read;
  // A scatter root is lowered as the copy of its data into its buffer (the kernel that runs
  // before the scatter's own, whose space is the updates'), not as the scatter itself.
  bool scatter_init = false;
};

// Builds the kernel. An error means the group is not expressible as one kernel (a reduction of
// the group is read at a map other than its natural one); the fuser never asks for that.
absl::StatusOr<ir::Kernel> lower_group(const LowerRequest& req);

// Reshape, permute, expand and slice: the movement ops that re-index their operand through one
// view (what a gather's load of its source folds in; pad and concat need masks and selects).
bool is_reindexing(ir::Op op);

// Whether the movement ops from `id` down to the first other node read it through ONE strided
// view (what a tiled contraction stages without per-element index arithmetic); false for a
// reshape of a permuted layout, which needs a stack of views.
bool reads_as_one_view(const ir::Graph& g, ir::NodeId id);

// Whether the movement ops from `id` down to the first other node (through pads) include a
// window: a convolution's operand, read by the contraction through its index map (implicit GEMM)
// rather than copied out as an im2col matrix.
bool reads_windows(const ir::Graph& g, ir::NodeId id);

}  // namespace kiln::passes

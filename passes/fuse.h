// fuse: partitions a graph into kernels.
//
// Every node that must live in memory (outputs, reductions, contractions, expensive matmul
// operands) starts as its own group; elementwise and movement nodes are inlined into the groups
// that read them. Groups then merge vertically while one reads another at maps that the merged
// kernel can produce (elementwise producers, a reduction absorbing consumers of its output
// shape, row-wise normalizations whose reductions share the consumer's rows, a contraction
// absorbing its epilogue), and horizontally when independent and over the same space.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "ir/graph.h"
#include "passes/space.h"
#include "ir/target_info.h"

namespace kiln::passes {

struct Group {
  std::vector<ir::NodeId> computed;  // nodes computed by this kernel
  Space space;
};

struct FusionPlan {
  std::vector<Group> groups;          // in a valid execution order
  std::vector<bool> stored;           // per graph node: written to a buffer
  std::vector<std::string> decisions; // why groups merged or did not (KILN_DEBUG=2)
  absl::Status status;                // an internal inconsistency the fuser found (never silent)
};

FusionPlan fuse(const ir::Graph& g, const ir::TargetInfo& target, bool enable_fusion);

// The nodes a group's kernel computes: its own plus the unstored elementwise/movement nodes it
// inlines, ascending.
std::vector<ir::NodeId> group_members(const ir::Graph& g, const FusionPlan& plan, const Group& grp);

}  // namespace kiln::passes

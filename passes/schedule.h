// schedule: turns a fusion plan into a Program (buffers, kernels in execution order, steps).
// Dependencies between steps are added by insert_barriers, offsets by plan_memory.
#pragma once

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "ir/program.h"
#include "passes/fuse.h"

namespace kiln::passes {

absl::StatusOr<ir::Program> schedule(const ir::Graph& g, const FusionPlan& plan);

// Merges adjacent kernel axes that every index map walks contiguously (and drops size-1 axes),
// so that backends emit fewer loops and simpler index arithmetic.
void merge_axes(ir::Kernel* k);

}  // namespace kiln::passes

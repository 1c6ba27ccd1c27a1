// control: compiles a graph with while and if nodes (graph.h) into one Program with structured
// steps (program.h: kWhile / kIf / kElse / kEnd markers around straight-line runs).
//
// The graph is cut into stages at its control nodes: a node's stage is the number of control
// nodes on its longest path from the inputs, so each stage's straight-line part compiles through
// the ordinary pipeline (fusion stops only where a value waits for a loop or branch anyway), and
// a control node runs between the stage that computes its operands and the one that reads its
// results. Constants, iotas, params and random values are cloned into every stage that reads them
// instead of being passed through memory. A loop becomes:
//
//     copy initial values -> carried buffers C; cond -> flag F
//     while F:  body (reads C and the captured buffers) -> O;  O -> C;  cond -> F
//     end
//
// and `if` becomes `if pred: then -> R  else: else -> R  end`. Regions compile recursively with
// the same rule (nested loops, branches in loops). The body's results go through buffers of their
// own and are copied into the carried ones after the body, so no kernel of an iteration reads a
// carried value another kernel of it has already replaced; values that pass through unchanged
// are not copied. The memory plan keeps every buffer a loop reads from before its head alive to
// its end (plan_memory); markers are full barriers (insert_barriers).
#pragma once

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "ir/target_info.h"
#include "passes/pipeline.h"

namespace kiln::passes {

bool has_control(const ir::Graph& g);

// compile_graph's path for graphs with control nodes (it calls this itself).
absl::StatusOr<Compiled> compile_structured(const ir::Graph& g, const ir::TargetInfo& target, const Options& opts);

}  // namespace kiln::passes

// Symbolic dimensions: one compiled executable for every size of a dimension.
//
// A server sees many batch sizes; compiling each would cost a compile per size and a cache entry
// per size. Instead, kiln plans the graph at two sizes it picks itself (the probes), compares the
// two Programs and learns how each kernel axis scales: an axis whose extent is c * n at both
// sizes of symbol n is symbolic. Marked (ir::SymExtent), its kernels read n from a param (an i64
// slot after the graph's own params) wherever their code needs the extent, so the code generated
// for one size is the code for every size: the compile cache finds it by its text and a new size
// compiles nothing. Launch shapes, the memory plan and the buffers come from planning the graph
// at the new size (cheap: passes, no code generation).
//
// Soundness does not rest on the probes: the marks only replace a literal extent by a param
// that holds the same value, so a marked kernel is as correct as an unmarked one at its own size;
// where the probes guessed wrong (a size that plans different kernels, an extent that is not a
// multiple of the size), the text differs and that size compiles its own code. Reduce axes,
// strides and masks that depend on a size are never marked: kernels reading them compile per
// size (counted in stats().kernels_compiled, reported under KILN_DEBUG).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/program.h"

namespace kiln::passes {

using SymbolicTemplate = ir::SymbolicTemplate;

// The template of a graph family from Programs planned at probe sizes: `base` with every symbol s
// at base_values[s], and probes[s] with symbol s at probe_values[s] (!= base_values[s]) and every
// other symbol as in base. FailedPrecondition (saying what differs) when the Programs do not have
// the same kernels and axes, or when no axis scales with a symbol.
absl::StatusOr<SymbolicTemplate> derive_template(const ir::Program& base, const std::vector<int64_t>& base_values,
                                                 const std::vector<ir::Program>& probes,
                                                 const std::vector<int64_t>& probe_values);

// Marks `p`, planned with symbol s at values[s], by `t`: appends one i64 param per symbol to
// p->params (the first at the returned slot) and marks each axis whose extent is its coefficient
// times its symbol's value and which is not a reduce axis. A Program whose kernels or ranks differ
// from the template gets the params but no marks (it compiles as it is).
int apply_template(const SymbolicTemplate& t, const std::vector<int64_t>& values, ir::Program* p);

}  // namespace kiln::passes

// chain_reduce: a split reduction (passes/split_reduce.h) runs on a GPU as two kernels, one
// storing P partial results per output and one folding them. Between the two the device drains
// and refills (on an H100 under Vulkan about 3 us, 3% of W4's time; bench/results/
// h100-2026-11-27-columns, call 8). Here the second kernel becomes the first's finish
// (ir::Kernel::finish): whoever stores the last of an output's P partials, counted in a ticket
// per output, folds them in the same launch. Only programs for GPU APIs chain (the CPU runs
// each kernel over all its threads anyway); KILN_CHAIN_REDUCE=0 keeps the two kernels.
//
// A pair chains when the second kernel B folds, along its one reduce axis (its last, of extent
// P), only partials that the first kernel A stores into an intermediate T that nothing else
// reads, reading them contiguously (B's outer index f reads T[f * P, f * P + P)); T holds 4- or
// 8-byte elements (read back coherently); B's other loads are outer-level and of buffers
// written before A; A and B are plain reductions (no scatter, contraction, attention, segment
// or symbolic extent) and B stores only outer-level values. Runs after schedule, before
// plan_memory (the tickets are a new zeroed intermediate, ir::BufferDesc::zeroed).
#pragma once

#include "ir/program.h"

namespace kiln::passes {

// Chains every eligible pair in a straight-line program (one without control steps); returns
// the number of pairs chained.
int chain_reduce(ir::Program* p);

}  // namespace kiln::passes

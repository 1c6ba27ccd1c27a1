// What one kernel of a Program costs, for profiles and their roofline: the bytes it moves
// between memory and the chip and the arithmetic operations it performs. Both are estimates
// computed from the kernel IR, the same on every backend, so a profile compares a kernel's
// achieved GB/s and FLOP/s against the device's peaks:
//   - bytes: every buffer the kernel loads or stores counted once, each at most one element per
//     evaluation of the node that touches it (a broadcast operand is read once; a slice of a
//     large buffer counts what the kernel can reach). Caches and re-reads are not modelled, so
//     this is the traffic of an ideal kernel: the floor the kernel's real traffic can reach.
//   - flops: one per evaluation of each arithmetic node (elementwise ops, reductions; casts,
//     loads, constants and index arithmetic are free), so a contraction counts 2 * M * N * K and
//     attention 2 * B * Sq * Sk * (D + Dv) (halved when causal); transcendental functions count
//     one each, integer arithmetic counts like float arithmetic.
//   - tensor_math: a contraction or attention over 16-bit floats, or a contraction allowed TF32
//     (what GPUs run on tensor cores / matrix units), so the profile compares it with the matrix
//     peak rather than the vector one.
// The list of graph nodes a kernel computes is Kernel::sources.
#pragma once

#include <cstdint>

#include "ir/program.h"

namespace kiln::ir {

struct KernelCost {
  int64_t bytes = 0;
  int64_t flops = 0;
  bool tensor_math = false;
};

KernelCost kernel_cost(const Program& p, const Kernel& k);

}  // namespace kiln::ir

// Kernel twins: kernels of one Program that are the same function up to their bindings.
//
// A model that repeats a layer (twelve encoder blocks, the steps of an unrolled recurrence)
// lowers to kernels that differ only in which buffers they read and write and which param slots
// they read. Compiling each family once and calling its function with every member's own
// bindings cuts a 12-layer encoder's code generation about fourfold. Two kernels are twins when,
// with each kernel's buffers renamed to their positions in kernel_buffers() and its param slots
// to their positions in kernel_param_slots(), every node, store, axis and contraction is equal,
// the buffers at each position have the same dtype and shape, the same positions share bytes
// (ir::share_bytes: an in-place pair, where codegen may not declare the pair non-aliasing), and
// the params at each position have the same descriptor. Backends whose code reaches buffers
// through the kernel's own argument list (CPU, CUDA, HIP) compile one function per family
// (CompiledKernel::twin); the CUDA and HIP renderers compare the rendered text instead, which
// also covers what the renderer reads from the Program.
#pragma once

#include <vector>

#include "ir/program.h"

namespace kiln::ir {

// The buffers `k` loads from or stores into, each once, in order of first use (nodes in order,
// then stores).
std::vector<int> kernel_buffers(const Kernel& k);
// The param slots `k` reads, each once, in order of first use (its nodes', then its symbolic
// extents' slots: ir::SymExtent).
std::vector<int> kernel_param_slots(const Kernel& k);

// For each kernel of `p`, the first kernel of `p` that it is a twin of (its own index when no
// earlier kernel is).
std::vector<int> kernel_twins(const Program& p);

}  // namespace kiln::ir

// The LLVM IR emitter for one kernel of a Program (the CPU backend's codegen).
//
// Each kernel becomes `void name(i8** args, const i32* index, i64 tile_begin, i64 tile_end)`: its
// j-th buffer (ir::kernel_buffers order) is args[index[j]] and its j-th param slot
// (ir::kernel_param_slots order) holds its 64-bit pattern in args[index[buffers + j]], so a
// kernel's twins (ir/kernel_twins.h) call the same function with their own index. A tile is a slice
// of the outer iteration space: one outer index (row mode, when the last axis is reduced), a
// block of the last axis (column mode: reductions accumulate a vector of outputs at once, so the
// innermost loop walks memory contiguously and vectorizes), or an MxN block of a contraction.
// The runtime spreads tiles over its thread pool.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "ir/program.h"
#include "llvm/IR/Module.h"

namespace kiln::codegen::cpu {

struct KernelLaunch {
  std::string symbol;
  int64_t tiles = 0;  // parallel work units
  int64_t work = 0;   // approximate element visits, to decide whether threading pays
};

absl::StatusOr<KernelLaunch> emit_kernel(llvm::Module& m, const ir::Program& p, const ir::Kernel& k,
                                         const std::string& symbol);

}  // namespace kiln::codegen::cpu

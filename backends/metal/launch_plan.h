// What a Metal executable launches and where each launch reads its bindings, worked out from the
// CompiledProgram alone (no Metal in here, so it is tested directly). Each launched kernel step
// becomes one command of the executable's indirect command buffer, in step order; a command whose
// step depends on an earlier kernel (ir::Step::deps, followed through steps that launch nothing)
// carries a barrier, so it starts after every earlier command has completed, and the others run
// concurrently with what precedes them. Each command reads one argument block (256-byte aligned:
// Metal's offset rule for constant buffers) of 8-byte slots, laid out as
// codegen/c_family/gpu_program.h says for MSL: the GPU address of each of the kernel's buffers,
// then the 64-bit pattern of each of its params.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "runtime/compiled_program.h"
#include "runtime/device.h"

namespace kiln::runtime::metal {

inline constexpr size_t kArgumentBlockAlignment = 256;

struct Launch {
  int kernel = -1;         // CompiledProgram::kernels index
  size_t args_offset = 0;  // its argument block, in bytes into the argument buffer
  bool barrier = false;    // waits for every earlier command of the run
};

struct LaunchPlan {
  std::vector<Launch> launches;  // in step order
  size_t args_bytes = 0;         // the argument buffer's size (0 without launches)
};

// The plan of `c`, whose steps are all kernel steps (loops, branches and collectives are refused
// before) and which passed check_consistent.
LaunchPlan plan_launches(const CompiledProgram& c);

// Fills the argument block of kernel `k` at `block`: addresses[b] for each of its buffers b
// (addresses: one per program buffer), then params[s] for each of its param slots s.
void write_arguments(const CompiledKernel& k, const std::vector<uint64_t>& addresses, const ParamValues& params,
                     uint64_t* block);

}  // namespace kiln::runtime::metal

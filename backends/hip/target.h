// What an AMD GPU is to the passes, the renderer and the compiler (ir::TargetInfo), and the key
// that ties a CompiledProgram to the GPUs that can load it: the gfx processor name, which is
// also the LLVM CPU name code is generated for (TargetInfo::cpu_name). A code object runs on
// GPUs of exactly that processor. What differs from CUDA (dialect_cuda.cc, HIP flavor):
//
//   | | CUDA | HIP (CDNA/GCN gfx9) | HIP (RDNA gfx10+) |
//   | --- | --- | --- | --- |
//   | warp / wavefront | 32 | 64 | 32 (wave32) |
//   | shuffles | __shfl_xor_sync | ds_bpermute (prelude) | ds_bpermute |
//   | shared memory (LDS) per workgroup | 48-227 KiB | 64 KiB | 64 KiB |
//   | thread geometry | threadIdx / blockIdx / gridDim | ockl work-item functions | same |
//   | math | CUDA libdevice | ROCm ocml | ocml |
//   | f16 conversion | cvt PTX | _Float16 | _Float16 |
//   | tensor cores | mma.sync, wgmma + TMA | MFMA: f16, bf16 from gfx90a (contraction_units.cc) | WMMA (not used yet) |
#pragma once

#include <cstdint>
#include <string>

#include "ir/target_info.h"

namespace kiln::runtime::hip {

// An AMD GPU of processor `gfx` ("gfx90a") with `compute_units` CUs.
ir::TargetInfo hip_target_info(const std::string& gfx, int compute_units);

// The gfx name (TargetInfo::cpu_name): a code object loads only on that processor.
std::string target_key(const ir::TargetInfo& t);

}  // namespace kiln::runtime::hip

// The contract between the shared C-family GPU renderer and the GPU runtimes (CUDA, HIP, Vulkan,
// Metal). The renderer turns each kernel of an ir::Program into source in one dialect plus the
// launch shape; the runtime compiles, binds and launches it.
//
// Binding conventions per dialect:
//   kCuda / kHip: `module_source` is ONE translation unit holding every kernel as
//     extern "C" __global__ void <name>(T0* b0, T1* b1, ...)
//     with one pointer parameter per entry of KernelSource::buffers, in that order. Nothing else is
//     passed: sizes are compile-time constants. Launch with grid x block, shared_bytes dynamic
//     shared memory (0 when the kernel uses only static shared memory).
//   kGlsl: KernelSource::source is a whole GLSL 4.60 compute shader (entry "main") that reaches
//     memory only through buffer device addresses (GL_EXT_buffer_reference): its push constant
//     block is `layout(push_constant) uniform PC { uint64_t table; }` and `table` is the device
//     address of an array of uint64 device addresses indexed by ir::Program buffer id (inputs,
//     outputs and intermediates alike; intermediates point into the arena). So one recorded
//     command buffer replays with new bindings by rewriting that table. local_size is baked into
//     the source and equals `block`; dispatch `grid` workgroups.
//   kMsl: like kGlsl but Metal: KernelSource::source is a whole MSL kernel taking
//     `device const ulong* table [[buffer(0)]]`.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/program.h"
#include "ir/target_info.h"

namespace kiln::codegen::gpu {

enum class Dialect { kCuda, kHip, kGlsl, kMsl };

struct KernelSource {
  std::string name;          // entry point (CUDA/HIP/MSL function name; GLSL uses "main")
  std::vector<int> buffers;  // ir::Program buffer ids, in parameter order (CUDA/HIP)
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t shared_bytes = 0;  // dynamic shared memory (CUDA/HIP)
  std::string source;         // GLSL/MSL: the whole shader of this kernel; CUDA/HIP: empty
  std::string strategy;       // how threads map to the iteration space, for dumps
};

struct RenderedProgram {
  std::string module_source;         // CUDA/HIP: every kernel in one translation unit
  std::vector<KernelSource> kernels;  // parallel to ir::Program::kernels
};

absl::StatusOr<RenderedProgram> render(const ir::Program& p, Dialect d, const ir::TargetInfo& t);

}  // namespace kiln::codegen::gpu

// The contract between the shared C-family GPU renderer and the GPU runtimes (CUDA, HIP, Vulkan,
// Metal). The renderer turns each kernel of an ir::Program into source in one dialect plus the
// launch shape; the runtime compiles, binds and launches it.
//
// Binding conventions per dialect:
//   kCuda / kHip: `module_source` is ONE translation unit holding every kernel as
//     extern "C" __global__ void <name>(T0* b0, T1* b1, ...)
//     with one pointer parameter per entry of KernelSource::buffers, in that order, then one
//     `unsigned long long` per entry of KernelSource::params (the 64-bit pattern of that param
//     slot, ir::encode_param), then one `const __grid_constant__` 128-byte tensor map per entry
//     of KernelSource::tensor_maps. Nothing else is passed: sizes are compile-time constants. Launch with grid x block, shared_bytes dynamic
//     shared memory (0 when the kernel uses only static shared memory).
//   kGlsl: KernelSource::source is a whole GLSL 4.60 compute shader (entry "main") that reaches
//     memory only through buffer device addresses (GL_EXT_buffer_reference): its push constant
//     block is `layout(push_constant) uniform PC { uint64_t table; uint ids[kGlslPushedIds]; }`
//     and `table` is the device address of an array of uint64 device addresses indexed by
//     ir::Program buffer id (inputs, outputs and intermediates alike; intermediates point into
//     the arena), followed by the 64-bit pattern of each param slot s at index
//     Program::buffers.size() + s (ir::encode_param). So one recorded command buffer replays with
//     new bindings and new param values by rewriting that table. A kernel with at most
//     kGlslPushedIds bindings (pushes_ids) reads the table index of its j-th binding (its
//     KernelSource::buffers, then its params) from ids[j], which the runtime pushes before the
//     dispatch: kernels equal up to their bindings are then one shader (`twin`, as for CUDA). A
//     kernel with more has the indices in its text and ignores ids. local_size is baked into
//     the source and equals `block`; dispatch `grid` workgroups.
//   kMsl: `module_source` is ONE MSL 3.0 translation unit holding every kernel as
//     kernel void <name>(constant <name>_args& kiln_args [[buffer(0)]], <thread position
//     attributes>), where <name>_args is an argument block of 8-byte fields: the device address
//     of each entry of KernelSource::buffers (a pointer field), then the 64-bit pattern of each
//     entry of KernelSource::params (ir::encode_param). The runtime writes those into a buffer
//     it binds at index 0 (Metal 3 GPU addresses), so a replay with new bindings or params
//     rewrites 8-byte values and re-encodes nothing. Dispatch `grid` threadgroups of `block`
//     threads; threadgroup memory is static. Twins as for CUDA.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/program.h"
#include "ir/target_info.h"

namespace kiln::codegen::gpu {

enum class Dialect { kCuda, kHip, kGlsl, kMsl };

// GLSL: table indices pushed per dispatch (8 + 4 * 30 bytes: the 128 bytes of push constants
// every Vulkan device offers), and whether a kernel with `bindings` buffers and params reads
// them from there.
inline constexpr int kGlslPushedIds = 30;
inline bool pushes_ids(size_t bindings) { return bindings <= size_t(kGlslPushedIds); }

// A TMA tensor map a kernel takes by value (CUDA, the sm_90a contraction path): the runtime
// encodes it (cuTensorMapEncodeTiled) from the address of `buffer` when it binds the kernel, and
// passes it after the buffer pointers, in this order. Dimensions innermost first; dims[0] is
// contiguous; strides are in elements for dims 1.. (rank - 1 of them).
struct TensorMapSpec {
  int buffer = -1;                // ir::Program buffer id
  int elem_bytes = 2;             // 2: a 16-bit float (bf16 or f16, see bf16)
  bool bf16 = true;
  int64_t offset = 0;             // elements from the buffer's start
  std::vector<int64_t> dims;      // rank 1..5
  std::vector<int64_t> strides;   // rank - 1 entries, elements
  std::vector<uint32_t> box;      // rank entries
  int swizzle = 128;              // bytes: 0, 32, 64 or 128
};

struct KernelSource {
  std::string name;          // entry point (CUDA/HIP/MSL function name; GLSL uses "main")
  std::vector<int> buffers;  // ir::Program buffer ids, in parameter order (CUDA/HIP)
  // A kernel declaring compile-time cluster dims (CUDA `__cluster_dims__`, the sm_90a contraction
  // path) walks its work in a loop over clusters (gridDim.x / width of them): the runtime may
  // launch fewer blocks than grid[0], as many clusters as can be resident at once.
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t shared_bytes = 0;  // dynamic shared memory (CUDA/HIP)
  std::string source;         // GLSL: the whole shader of this kernel; CUDA/HIP/MSL: empty
  size_t offset = 0;          // CUDA/HIP/MSL: where this kernel's text starts in module_source
  // CUDA/HIP: an earlier kernel whose function this one calls with its own buffers and params
  // (its text, canonical_text, is the same: ir/kernel_twins.h); its own text is not in
  // module_source and `name` is not an entry point of it. GLSL: an earlier kernel whose shader
  // this one dispatches with its own pushed ids; `source` is empty. -1: a function of its own.
  int twin = -1;
  std::string strategy;       // how threads map to the iteration space, for dumps
  std::vector<TensorMapSpec> tensor_maps;  // CUDA: by-value parameters after the buffers
  std::vector<int> params;  // param slots the kernel reads; CUDA/HIP: arguments after the buffers
  // CUDA: the kernel keeps state between launches in a module global of its own (a work queue's
  // counters, reset by the kernel's last warp), so it is never a twin of another kernel and two
  // launches of it must not overlap (they do not: a program's steps run in order on one stream).
  bool own_state = false;
  // CUDA: > 0 for a kernel that walks this many work tiles in a loop over its blocks (gridDim.x,
  // persistent): the runtime may launch fewer blocks than grid[0] (a multiple of its cluster
  // width), e.g. to leave multiprocessors to a collective running beside it.
  int64_t strided_tiles = 0;
};

struct RenderedProgram {
  std::string module_source;         // CUDA/HIP/MSL: every kernel in one translation unit
  std::vector<KernelSource> kernels;  // parallel to ir::Program::kernels
  // CUDA: some kernel uses instructions of the arch-specific target (sm_90a: wgmma, setmaxnreg),
  // so the module compiles for sm_<cc>a and runs only on exactly that compute capability.
  bool arch_specific = false;
};

// A CUDA/HIP kernel's text with its own name and its buffer and param arguments replaced by their
// positions in k.buffers and k.params: two kernels with equal canonical texts are one function
// called with different arguments.
std::string canonical_text(const std::string& text, const KernelSource& k);

absl::StatusOr<RenderedProgram> render(const ir::Program& p, Dialect d, const ir::TargetInfo& t);

// What the C-like backends (cuda, hip, metal) put into each runtime::CompiledKernel from its
// rendered kernel, moved out of `r`: entry point, twin, bindings, params, launch shape, dynamic
// shared memory, strategy. A template: runtime/compiled_program.h is a layer above this one.
// InternalError naming `backend` when the counts differ.
template <class CompiledKernel>
absl::Status take_kernels(const char* backend, RenderedProgram* r, std::vector<CompiledKernel>* out) {
  if (r->kernels.size() != out->size())
    return absl::InternalError(std::string(backend) + ": " + std::to_string(r->kernels.size()) +
                               " rendered kernels for a program of " + std::to_string(out->size()));
  for (size_t i = 0; i < out->size(); ++i) {
    KernelSource& k = r->kernels[i];
    CompiledKernel& o = (*out)[i];
    o.name = std::move(k.name);
    o.twin = k.twin;
    o.buffers = std::move(k.buffers);
    o.params = std::move(k.params);  // after the buffers, in the kernel's signature or argument block
    for (int d = 0; d < 3; ++d) o.grid[size_t(d)] = k.grid[d], o.block[size_t(d)] = k.block[d];
    o.shared_bytes = k.shared_bytes;
    o.strategy = std::move(k.strategy);
  }
  return absl::OkStatus();
}

// Autotuning: the values of ir::Kernel::config worth timing for kernel `k` (the heuristic's own
// choice first) and the shape class the fastest depends on; empty when the renderer has nothing
// to choose for it (today: the CUDA sm_90a contraction's tile width, schedule and cluster, and
// the sm_90a attention kernel's schedule and cluster).
std::vector<std::string> tuning_candidates(const ir::Program& p, int k, Dialect d, const ir::TargetInfo& t,
                                           std::string* shape_class);

}  // namespace kiln::codegen::gpu

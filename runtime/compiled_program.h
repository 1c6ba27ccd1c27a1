// CompiledProgram: what a Compiler produces and a Device loads (runtime/device.h). Plain data
// only (no handles, no pointers into a process), so it can be written to disk and loaded on
// another machine: everything a backend needs to launch the Program's kernels in its step order,
// with its memory plan.
//
// Where the binaries live, per backend:
//   cpu     `module` is one relocatable object file (ELF) holding every kernel as
//           void <name>(char** buffers, int64_t tile_begin, int64_t tile_end);
//           buffers[i] is buffer i's address for i < buffers.size(), then param slot s's 64-bit
//           pattern (ir::encode_param) at buffers.size() + s;
//           a kernel runs tiles [0, tiles) and is spread over threads when `work` is large.
//   cuda    `module` is one cubin holding every kernel as extern "C" <name>(T* b0, T* b1, ...),
//           one pointer per entry of `buffers`, one u64 per entry of `params`, then one
//           128-byte CUtensorMap per entry of `tensor_maps`; launched grid x block with shared_bytes. target_key "sm_<cc>", or
//           "sm_<cc>a" when the module holds arch-specific code (sm_90a: wgmma).
//   vulkan  each kernel's `binary` is a SPIR-V module (entry "main") that reaches memory through
//           the buffer address table (codegen/c_family/gpu_program.h); dispatched `grid` with the
//           table indices of `buffers` and `params` pushed; a twin dispatches its family's module.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/program.h"

namespace kiln::runtime {

// A TMA tensor map a cuda kernel takes by value after its buffer pointers: the device encodes
// it (cuTensorMapEncodeTiled) from the bound address of `buffer` at load and on every rebind.
// Dimensions innermost first; dims[0] is contiguous; strides in elements for dims 1...
struct TensorMapDesc {
  int buffer = -1;               // ir::Program buffer id
  enum Type { kFloat16 = 0, kBFloat16 = 1, kFloat32 = 2 };
  int type = kBFloat16;          // element type
  int64_t offset = 0;            // elements from the buffer's start (16-byte aligned)
  std::vector<int64_t> dims;     // 1..5 entries
  std::vector<int64_t> strides;  // dims.size() - 1 entries, in elements, each a positive multiple of 16 bytes
  std::vector<uint32_t> box;     // dims.size() entries, 1..256
  int swizzle = 128;             // bytes: 0, 32, 64 or 128
};

struct CompiledKernel {
  std::string name;          // entry point (the symbol in `module`, or the SPIR-V module's label)
  // An earlier kernel whose entry point this one calls with its own bindings (ir/kernel_twins.h:
  // cpu, cuda, hip; vulkan: whose shader it dispatches, its own `binary` empty), or -1: its own
  // `name` is in `module`.
  int twin = -1;
  // ir::Program buffer ids, in parameter order (cuda, hip; cpu: ir::kernel_buffers order; vulkan:
  // the order of the table indices pushed for the dispatch, codegen/c_family/gpu_program.h)
  std::vector<int> buffers;
  // ir::Program buffer ids the kernel loads from and stores into, ascending (every backend;
  // Vulkan's validation mode shows them to the synchronization validator).
  std::vector<int> reads, writes;
  std::array<uint32_t, 3> grid = {1, 1, 1};
  std::array<uint32_t, 3> block = {1, 1, 1};
  uint32_t shared_bytes = 0;  // dynamic shared memory (cuda)
  // A zero grid or block dimension: the kernel has no work and is not launched.
  bool launches_nothing() const {
    for (int d = 0; d < 3; ++d)
      if (grid[size_t(d)] == 0 || block[size_t(d)] == 0) return true;
    return false;
  }
  // Param slots the kernel reads (cuda, hip: ascending, by-value u64 arguments after `buffers`,
  // before the tensor maps; cpu: ir::kernel_param_slots order; vulkan: pushed after `buffers`).
  std::vector<int> params;
  std::vector<TensorMapDesc> tensor_maps;  // cuda: by-value parameters after `buffers` and `params`
  // cpu: tiles to run; cuda: > 0 for a kernel that walks its tiles in a loop over gridDim.x
  // (codegen::gpu::KernelSource::strided_tiles): it may launch fewer blocks than grid[0].
  int64_t tiles = 0;
  int64_t work = 0;           // cpu: element operations in all tiles (decides threading)
  std::string binary;         // vulkan: SPIR-V of this kernel; empty where `module` holds it
  std::string strategy;       // how threads map to the iteration space (for dumps)
  std::string source;         // generated source of this kernel (dumps; empty unless kept)
  // For profiles (ir/cost.h): the bytes it moves and the operations it performs (estimates from
  // the kernel IR), whether that is 16-bit matrix math, and the graph nodes it computes.
  int64_t bytes = 0, flops = 0;
  bool tensor_math = false;
  std::string computes;
};

struct CompiledProgram {
  std::string backend;     // "cpu", "cuda", "vulkan", ...
  std::string target_key;  // what the binaries were made for (Compiler::target_key)
  // The memory plan and schedule of the ir::Program (kernel bodies are not kept).
  std::vector<ir::BufferDesc> buffers;
  std::vector<ir::Step> steps;
  int64_t arena_bytes = 0;
  int num_inputs = 0, num_outputs = 0;
  std::vector<int> outputs;  // buffer of each graph output (ir::Program::outputs)
  // The params a run passes, by slot (ir::Program::params; Executable::run takes their values).
  std::vector<ir::ParamDesc> params;
  std::string module;         // one binary for every kernel (cpu, cuda); empty for vulkan
  std::string module_source;  // the module's source and assembly (dumps; empty unless kept)
  // cuda: the module as PTX, for GPUs newer than target_key that have no cubin of their own (the
  // driver JIT-compiles it); empty when the module uses arch-specific instructions (sm_90a).
  std::string portable_module;
  std::vector<CompiledKernel> kernels;  // parallel to ir::Program::kernels

  // Each kernel's text for dumps: its launch, strategy and source (the module's source and
  // assembly are in kernel 0's entry).
  std::vector<std::string> listings() const;
  // The entry point in `module` that kernel `i` calls: its own name, or its twin's.
  const std::string& entry(size_t i) const {
    return kernels[i].twin >= 0 ? kernels[size_t(kernels[i].twin)].name : kernels[i].name;
  }
};

// The plan and schedule of `p` (buffers, steps, arena, outputs) copied into a CompiledProgram,
// with one CompiledKernel per kernel holding its name and the buffers it reads and writes;
// compilers fill in the rest.
CompiledProgram plan_of(const ir::Program& p);

// A versioned binary form. `deserialize` checks every length and index (InvalidArgument on a
// truncated or malformed input, never a crash) and that the result is self-consistent.
std::string serialize(const CompiledProgram& c);
absl::StatusOr<CompiledProgram> deserialize(std::string_view bytes);

// Checks what every backend's load relies on: steps name existing kernels and depend only on
// earlier steps, buffers' positions are in range, intermediates lie inside the arena, kernel
// bindings name existing buffers. InvalidArgument naming the first problem.
absl::Status check_consistent(const CompiledProgram& c);

// What every backend's Executable::resize (runtime/device.h) asks of another size's program `c`
// against the one it holds (`steps`, `buffers`, kernel count, inputs, outputs, params): the same
// steps (kernels, kinds, dependencies) and buffers of the same kinds at the same positions. "" when
// so, else what differs.
std::string differs_beyond_sizes(const CompiledProgram& c, const std::vector<ir::Step>& steps,
                                 const std::vector<ir::BufferDesc>& buffers, size_t kernels, int num_inputs, int num_outputs,
                                 size_t params);

// Unimplemented, naming the backend and the first collective, when `c` has collective steps:
// the load check of a device whose collectives_status() is not OK.
absl::Status refuse_collectives(const CompiledProgram& c, const std::string& backend);

}  // namespace kiln::runtime

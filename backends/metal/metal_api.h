// Metal without Objective-C: the few operations the Metal runtime half needs, as a plain C++ table
// of typed functions over opaque object handles, as driver_api.h is for CUDA. On macOS load_api()
// fills it by dlopen'ing the Objective-C runtime, Foundation and Metal and sending each message
// through objc_msgSend cast to that message's exact C type (metal_api.cc), so this backend builds
// on any system with no Apple headers and a machine without Metal gets Unavailable with the
// reason. Tests fill the table with an in-process fake instead (tests/metal/fake_metal.h).
//
// Ownership follows Cocoa's rule: every handle a `new_*` entry or create_default_device returns is
// owned (+1) by the caller, who gives it back with `release`; no other entry returns an object.
// Every entry runs inside an autorelease pool of its own, which drains the temporaries it makes
// (strings, errors, the command buffer before it is retained), so callers need no pool around
// them (kiln's threads have none).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace kiln::runtime::metal {

// An Objective-C object (id); nil is nullptr.
using Id = void*;

// MTLSize: three NSUInteger (unsigned long on both 64-bit Apple ABIs), passed by value.
struct MtlSize {
  unsigned long width = 1, height = 1, depth = 1;
};

// What a compute pipeline state reports about itself.
struct PipelineInfo {
  unsigned long execution_width = 0;  // threadExecutionWidth: the SIMD-group width
  unsigned long max_threads = 0;      // maxTotalThreadsPerThreadgroup
};

// MTLCommandBufferStatus values a run is checked against.
inline constexpr unsigned long kCommandBufferCompleted = 4;  // MTLCommandBufferStatusCompleted
inline constexpr unsigned long kCommandBufferError = 5;      // MTLCommandBufferStatusError

// Commands one executeCommandsInBuffer:withRange: may run on GPUs of the Mac2 family.
inline constexpr size_t kMaxCommandsPerExecute = 16384;

struct MetalApi {
  std::string library;  // where Metal was loaded from (descriptions)

  void (*release)(Id object) = nullptr;

  // The system's default GPU (MTLCreateSystemDefaultDevice), nil without one; its name; whether
  // it is in MTLGPUFamilyMetal3 (GPU addresses of buffers, which the argument blocks hold).
  Id (*create_default_device)() = nullptr;
  std::string (*device_name)(Id device) = nullptr;
  bool (*supports_metal3)(Id device) = nullptr;

  // A buffer of `bytes` in shared storage (CPU and GPU see the same memory); nil when the device
  // is out of memory. Its CPU address and its GPU address (MTLBuffer gpuAddress).
  Id (*new_buffer)(Id device, size_t bytes) = nullptr;
  void* (*contents)(Id buffer) = nullptr;
  uint64_t (*gpu_address)(Id buffer) = nullptr;

  // MSL source compiled as MSL 3.0 without fast math; nil with the compiler's log in `log`.
  Id (*new_library)(Id device, const std::string& source, std::string* log) = nullptr;
  // The function `name` of `library`; nil when it has none.
  Id (*new_function)(Id library, const std::string& name) = nullptr;
  // A compute pipeline of `function` that indirect command buffers may use; nil with the log.
  Id (*new_pipeline)(Id device, Id function, PipelineInfo* info, std::string* log) = nullptr;

  Id (*new_command_queue)(Id device) = nullptr;
  // An indirect command buffer of `commands` concurrent-dispatch commands, each setting its own
  // pipeline and one kernel buffer (index 0).
  Id (*new_indirect_command_buffer)(Id device, size_t commands) = nullptr;
  // Encodes command `index` of `icb`: `pipeline`, `args` at `offset` as buffer 0, `grid`
  // threadgroups of `block` threads; with `barrier`, it starts only after every earlier command
  // of the ICB has completed.
  void (*encode_dispatch)(Id icb, size_t index, Id pipeline, Id args, size_t offset, MtlSize grid, MtlSize block,
                          bool barrier) = nullptr;

  // An MTLSharedEvent (starts at 0), and setting its value from the CPU.
  Id (*new_shared_event)(Id device) = nullptr;
  void (*set_signaled_value)(Id event, uint64_t value) = nullptr;

  // A command buffer of `queue` (owned: retained here).
  Id (*new_command_buffer)(Id queue) = nullptr;
  // The GPU waits, before the command buffer's next pass, until `event` reaches `value`; sets it
  // to `value` once the passes before have completed.
  void (*encode_wait)(Id command_buffer, Id event, uint64_t value) = nullptr;
  void (*encode_signal)(Id command_buffer, Id event, uint64_t value) = nullptr;
  // A compute encoder of concurrent dispatch (owned: retained here).
  Id (*new_compute_encoder)(Id command_buffer) = nullptr;
  // Makes `resource` resident for the pass, read (or read and write) through argument blocks.
  void (*use_resource)(Id encoder, Id resource, bool write) = nullptr;
  // Runs commands [first, first + count) of `icb`.
  void (*execute_commands)(Id encoder, Id icb, size_t first, size_t count) = nullptr;
  // A barrier between the encoder's commands before and after it (buffers).
  void (*memory_barrier)(Id encoder) = nullptr;
  void (*end_encoding)(Id encoder) = nullptr;
  void (*commit)(Id command_buffer) = nullptr;
  void (*wait_until_completed)(Id command_buffer) = nullptr;
  unsigned long (*status)(Id command_buffer) = nullptr;  // MTLCommandBufferStatus
  std::string (*error_text)(Id command_buffer) = nullptr;  // its error's description, or ""
};

// Metal, loaded once per process; Unavailable ("metal: no Metal framework ...") where the
// Objective-C runtime or the framework does not load (every system but macOS) or lacks a symbol.
absl::StatusOr<const MetalApi*> load_api();

}  // namespace kiln::runtime::metal

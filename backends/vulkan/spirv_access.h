// Which buffers a kernel reads and which it writes, carried inside the kernel's SPIR-V.
//
// Only validation mode (KILN_VULKAN_VALIDATION=1, shadow_access.h) needs it: kernels reach memory
// through buffer device addresses, which the synchronization validator cannot see, so each
// dispatch gets a shadow that touches the same buffers through descriptors. The Compiler knows
// the accesses (from the ir::Kernel); a Device loading a CompiledProgram, perhaps from disk, has
// only the SPIR-V. So the Compiler records them in the module as one debug instruction,
//   OpSourceExtension "kiln.access reads 0 3 writes 2"
// which drivers and validators ignore, and load() reads them back (every kernel must have one).
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace kiln::runtime::vk {

struct KernelAccess {
  std::vector<int> reads, writes;  // ir::Program buffer ids, ascending, each once
};

// `spirv` (a valid module, as bytes) with `a` recorded in it.
std::string record_access(std::string_view spirv, const KernelAccess& a);

// The record of record_access. InvalidArgument when `spirv` is not a well-formed module, holds
// no record, or names a buffer outside [0, num_buffers).
absl::StatusOr<KernelAccess> read_access(std::string_view spirv, int num_buffers);

}  // namespace kiln::runtime::vk

// A SPIR-V module from a CompiledProgram, checked before it reaches the driver.
//
// load() takes CompiledPrograms that may come from disk, and a driver given a truncated module
// may crash rather than fail. This check is structural only (size, magic number, instructions
// that tile the module exactly): full validation is SPIRV-Tools' job, in the Compiler, so that
// a device needs no compiler.
#pragma once

#include <cstdint>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace kiln::runtime::vk {

// The module's words; InvalidArgument when `spirv` is not a sequence of whole instructions
// after a SPIR-V header.
absl::StatusOr<std::vector<uint32_t>> spirv_words(std::string_view spirv);

}  // namespace kiln::runtime::vk

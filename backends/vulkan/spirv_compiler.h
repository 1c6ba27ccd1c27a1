// GLSL compute shader -> SPIR-V: shaderc compiles, SPIRV-Tools validates, optimizes
// (performance passes) and validates the result again.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/vulkan/spirv_float_controls.h"

namespace kiln::runtime::vk {

struct SpirvOptions {
  bool vulkan13 = false;       // target Vulkan 1.3 / SPIR-V 1.6, else Vulkan 1.2 / SPIR-V 1.5
  bool scalar_layout = false;  // the device enables scalarBlockLayout
  bool optimize = true;
  FloatControls float_controls;  // execution modes added to every kernel
};

// Internal error with the compiler or validator log and the numbered source on failure.
absl::StatusOr<std::vector<uint32_t>> compile_glsl(const std::string& name, const std::string& glsl, const SpirvOptions& o);

// Versions of shaderc and SPIRV-Tools plus the options: part of every cache key.
std::string spirv_compiler_id(const SpirvOptions& o);

}  // namespace kiln::runtime::vk

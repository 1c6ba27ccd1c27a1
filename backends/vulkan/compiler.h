// The Vulkan Compiler (runtime/device.h): ir::Program -> CompiledProgram from an ir::TargetInfo
// alone, with no Vulkan loader, driver or device.
//
// Each kernel is rendered to GLSL (codegen/c_family, Dialect::kGlsl) and compiled to SPIR-V
// (spirv_compiler.h: shaderc, float controls, SPIRV-Tools) through the kernel cache on disk
// (runtime/compile_cache.h), keyed by the SPIR-V compiler's id and options, the target key
// (target.h) and the GLSL. Each CompiledKernel's `binary` is its SPIR-V module (entry "main",
// memory through the buffer address table of codegen/c_family/gpu_program.h); `grid` is what to
// dispatch and `block` the local size baked into the module.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "backends/vulkan/spirv_compiler.h"
#include "codegen/c_family/gpu_program.h"
#include "ir/program.h"
#include "ir/target_info.h"
#include "runtime/device.h"

namespace kiln::runtime::vk {

// The SPIR-V options a target calls for (and support::options().vulkan_spirv_opt).
SpirvOptions spirv_options(const ir::TargetInfo& t);

class VulkanCompiler : public Compiler {
 public:
  // InvalidArgument unless `t` is a Vulkan target (t.name "vulkan").
  static absl::StatusOr<std::unique_ptr<VulkanCompiler>> create(const ir::TargetInfo& t);

  const ir::TargetInfo& target() const override { return target_; }
  std::string target_key() const override { return key_; }
  // Unimplemented for a tensor over 2^32 elements (GLSL indexes buffers with 32-bit integers).
  absl::StatusOr<CompiledProgram> compile(const ir::Program& p) const override;

  // Compiles kernels already rendered for `p` (tests use hand-written GLSL); `r.kernels` must
  // be parallel to `p.kernels` (InvalidArgument otherwise).
  absl::StatusOr<CompiledProgram> compile_rendered(const ir::Program& p, const codegen::gpu::RenderedProgram& r) const;
  // The kernel cache file a kernel's GLSL compiles to ("" when the disk cache is off).
  std::string cache_path(const std::string& glsl) const;

 private:
  explicit VulkanCompiler(const ir::TargetInfo& t);
  std::string cache_key(const std::string& glsl) const;

  ir::TargetInfo target_;
  std::string key_;
  SpirvOptions spirv_;
};

}  // namespace kiln::runtime::vk

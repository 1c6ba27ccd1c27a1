// The HIP Compiler (runtime/device.h): ir::Program -> CompiledProgram for one gfx processor,
// without a GPU or the HIP runtime, so it runs in a test, on a build machine or in kilnc as well
// as in the JIT.
//
// The renderer (codegen/c_family, Dialect::kHip) writes every kernel into one HIP C translation
// unit; comgr (comgr.h) turns it into one code object, through the kernel cache on disk
// (runtime/compile_cache.h) under a key of the source, the processor, comgr's version and its
// options. The CompiledProgram follows the "cuda"/"hip" convention of runtime/compiled_program.h
// (one module, kernels by name, one pointer parameter per buffer).
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "ir/target_info.h"
#include "runtime/device.h"

namespace kiln::runtime::hip {

// Loops and branches (kiln::while_loop, kiln::cond) need HIP graph conditional nodes, which the
// HIP backend does not build yet: its compiler and loader refuse such programs with this.
inline constexpr const char* kHipNoControl =
    "hip: loops and branches (while_loop, cond) are not supported on HIP yet; run them on cuda, vulkan or cpu";

class HipCompiler : public Compiler {
 public:
  // The registry's factory: InvalidArgument for a target that is not an AMD GPU's (no gfx
  // name; hip_target_info in target.h makes one).
  static absl::StatusOr<std::unique_ptr<Compiler>> create(const ir::TargetInfo& target);
  explicit HipCompiler(ir::TargetInfo target) : target_(std::move(target)) {}
  const ir::TargetInfo& target() const override { return target_; }
  std::string target_key() const override;
  absl::StatusOr<CompiledProgram> compile(const ir::Program& p) const override;

 private:
  ir::TargetInfo target_;
};

}  // namespace kiln::runtime::hip

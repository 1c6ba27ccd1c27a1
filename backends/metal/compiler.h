// The Metal Compiler (runtime/device.h): ir::Program -> CompiledProgram for Apple GPUs, without a
// GPU or macOS, so it runs in a test, on a build machine or in kilnc as well as in the JIT.
//
// The renderer (codegen/c_family, Dialect::kMsl) writes every kernel into one MSL 3.0 translation
// unit, which is the CompiledProgram's `module`: Apple's shader compiler exists only on Apple
// platforms, so the device compiles the source when it loads the program (the driver keeps its
// own cache of the result). Each kernel takes one argument block at [[buffer(0)]]
// (codegen/c_family/gpu_program.h). Programs the target cannot run are refused here with the
// reason: float64 anywhere (Metal GPUs have none), loops and branches (not built for Metal yet).
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "ir/target_info.h"
#include "runtime/device.h"

namespace kiln::runtime::metal {

inline constexpr const char* kMetalNoControl =
    "metal: loops and branches (while_loop, cond) are not supported on Metal yet; run them on cuda, vulkan or cpu";

class MetalCompiler : public Compiler {
 public:
  // The registry's factory: InvalidArgument for a target that is not a Metal one (target.h's
  // metal_target_info makes one).
  static absl::StatusOr<std::unique_ptr<Compiler>> create(const ir::TargetInfo& target);
  explicit MetalCompiler(ir::TargetInfo target) : target_(std::move(target)) {}
  const ir::TargetInfo& target() const override { return target_; }
  std::string target_key() const override;
  absl::StatusOr<CompiledProgram> compile(const ir::Program& p) const override;

 private:
  ir::TargetInfo target_;
};

}  // namespace kiln::runtime::metal

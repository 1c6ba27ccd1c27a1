// The CPU Compiler (runtime/device.h): ir::Program -> CompiledProgram whose `module` is one
// relocatable object file holding every kernel (codegen/llvm/compile.h makes it). It needs no
// device: it is made from an ir::TargetInfo alone, for the CPU its cpu_name/cpu_features name
// (the host's when empty). Objects go through the kernel cache on disk (runtime/compile_cache.h),
// keyed by the unoptimized LLVM IR, the target and LLVM's version and settings: emitting IR is
// cheap, optimization and code generation are what a warm start skips.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "codegen/llvm/compile.h"
#include "runtime/device.h"

namespace kiln::runtime::cpu {

class CpuCompiler : public Compiler {
 public:
  // InvalidArgument for a GPU target or a CPU LLVM does not know; Unavailable without a code
  // generator for the host.
  static absl::StatusOr<std::unique_ptr<Compiler>> create(const ir::TargetInfo& target);

  const ir::TargetInfo& target() const override { return target_; }
  std::string target_key() const override { return machine_.key(); }
  absl::StatusOr<CompiledProgram> compile(const ir::Program& p) const override;

 private:
  CpuCompiler(ir::TargetInfo target, codegen::cpu::CpuTarget machine)
      : target_(std::move(target)), machine_(std::move(machine)) {}

  ir::TargetInfo target_;
  codegen::cpu::CpuTarget machine_;
};

}  // namespace kiln::runtime::cpu

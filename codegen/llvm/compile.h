// Compiles all kernels of a Program into one LLVM module, optimizes it at O3 for the host CPU
// and loads it with LLVM's ORC JIT.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/program.h"

namespace kiln::codegen::cpu {

using KernelFn = void (*)(char** buffers, int64_t tile_begin, int64_t tile_end);

struct CompiledKernel {
  KernelFn fn = nullptr;
  int64_t tiles = 0;
  int64_t work = 0;
};

struct CompiledProgram {
  std::vector<CompiledKernel> kernels;  // parallel to Program::kernels
  std::vector<std::string> ir;          // optimized LLVM IR per kernel (for dumps and tests)
};

absl::StatusOr<CompiledProgram> compile_program(const ir::Program& p, bool keep_ir);

// Host CPU name and features the JIT targets, e.g. "znver3 +avx2,+fma,...".
std::string host_target_description();

}  // namespace kiln::codegen::cpu

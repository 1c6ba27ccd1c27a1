// The CUDA Compiler (runtime/device.h): ir::Program -> CompiledProgram for one sm_XX, without a
// GPU or a driver, so it runs in a test, on a build machine or in kilnc as well as in the JIT.
//
// The renderer (codegen/c_family, Dialect::kCuda) writes every kernel into one CUDA C
// translation unit; NVRTC (nvrtc.h) turns it into one cubin, through the kernel cache on disk
// (runtime/compile_cache.h) under a key of the source, the architecture, NVRTC's version and its
// options. The CompiledProgram follows the "cuda" convention of runtime/compiled_program.h.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "backends/cuda/nvrtc.h"
#include "ir/target_info.h"
#include "runtime/compile_cache.h"
#include "runtime/device.h"

namespace kiln::runtime::cuda {

class CudaCompiler : public Compiler {
 public:
  // The registry's factory: `target.compute_capability` picks the architecture (90: sm_90);
  // InvalidArgument for a target that is not a CUDA GPU's (no compute capability;
  // cuda_target_info in target.h makes one).
  static absl::StatusOr<std::unique_ptr<Compiler>> create(const ir::TargetInfo& target);
  explicit CudaCompiler(ir::TargetInfo target) : target_(std::move(target)) {}
  const ir::TargetInfo& target() const override { return target_; }
  std::string target_key() const override;
  absl::StatusOr<CompiledProgram> compile(const ir::Program& p) const override;
  // The renderer's candidates (codegen::gpu::tuning_candidates), the shape class prefixed by the
  // architecture.
  std::vector<std::string> tuning_candidates(const ir::Program& p, int k, std::string* shape_class) const override;

 private:
  ir::TargetInfo target_;
};

// The cache key of `source` on sm_<cc>: the source, the architecture, NVRTC's version and the
// options, so that a change to any of them compiles afresh.
// `arch_specific`: sm_<cc>a (part of the key).
std::string binary_cache_key(const std::string& source, int cc, bool arch_specific = false);

// The binary of `source` (a module of `num_kernels` kernels) for sm_<cc>, through `cache` (a hit
// counts num_kernels cache hits, a miss compiles with NVRTC and counts num_kernels compiled).
// The cached blob keeps the PTX, returned when `keep_ptx`.
absl::StatusOr<CudaBinary> compile_module(const std::string& source, int cc, int num_kernels, bool keep_ptx,
                                          const CompileCache& cache, bool arch_specific = false);

}  // namespace kiln::runtime::cuda

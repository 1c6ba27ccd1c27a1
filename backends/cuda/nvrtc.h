// CUDA C -> cubin with NVRTC (linked from the CUDA toolkit found at build time).
//
// Every kernel of a Program is in ONE translation unit and compiles in ONE nvrtcProgram (NVRTC
// costs 50-110 ms per call whatever the size). The same call yields the PTX at no extra cost.
// Needs no GPU and no driver: the Compiler (compiler.h) calls it, never the Device. Where NVRTC
// finds the CUDA headers (support::options().cuda_include_dirs, then the build's toolkit) and
// where a rejected source is written (support::options().dump_dir) are read at each call.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace kiln::runtime::cuda {

struct CudaBinary {
  std::string cubin;  // for sm_<cc>, loadable with cuModuleLoadData
  std::string ptx;    // the PTX NVRTC produced on the way (may be empty when not asked for)
};

// "13.0": the NVRTC kiln was built with.
std::string nvrtc_version();

// The options every module compiles with for compute capability `cc` (90 for sm_90): the
// architecture, C++17, device code by default, and the toolkit's include folder (for
// cuda_fp16.h / cuda_bf16.h; $KILN_CUDA_INCLUDE, $CUDA_HOME/include, $CUDA_PATH/include or the
// build's toolkit).
// With `arch_specific`, the architecture is sm_<cc>a (wgmma, setmaxnreg; runs only on exactly
// that compute capability).
std::vector<std::string> nvrtc_options(int cc, bool arch_specific = false);

// Compiles `source` to a cubin for sm_<cc>. A rejected source gives an Internal error holding
// NVRTC's log; with $KILN_DUMP_DIR set, the source and the log are written there and the error
// names the files. An architecture NVRTC cannot target is Unimplemented.
absl::StatusOr<CudaBinary> nvrtc_compile(const std::string& source, int cc, bool keep_ptx, bool arch_specific = false);

}  // namespace kiln::runtime::cuda

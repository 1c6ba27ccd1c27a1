// HIP C -> HSACO with AMD's code object manager (libamd_comgr, linked from Debian's
// libamd-comgr-dev; Debian's hiprtc lives inside the HIP runtime library, which crashes without
// an AMD GPU, so kiln calls the compiler underneath it directly).
//
// Every kernel of a Program is in ONE translation unit (dialect_cuda.cc, HIP flavor: it needs no
// headers) and becomes ONE code object: source -> LLVM bitcode (-O3, -nogpuinc) -> + the ROCm
// device libraries (ocml, ockl) -> relocatable -> executable (an ELF for amdgcn-amd-amdhsa,
// loadable with hipModuleLoadData). Needs no GPU and no HIP runtime: the Compiler (compiler.h)
// calls it, never the Device. A rejected source is written to $KILN_DUMP_DIR like NVRTC's.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace kiln::runtime::hip {

// "2.4": the comgr library's version.
std::string comgr_version();
// The gfx processors this comgr targets ("gfx90a", "gfx908", ...), from its ISA list.
std::vector<std::string> comgr_targets();
// The options every module compiles with.
std::vector<std::string> comgr_options();

// Compiles `source` to a code object for `arch` ("gfx90a"). An architecture comgr does not know
// is Unimplemented naming those it does; a rejected source is Internal with comgr's log.
absl::StatusOr<std::string> comgr_compile(const std::string& source, const std::string& arch);

}  // namespace kiln::runtime::hip

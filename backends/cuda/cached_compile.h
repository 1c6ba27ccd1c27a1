// NVRTC behind the kernel binary cache on disk (runtime/cache/disk_cache.h).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "runtime/disk_cache.h"
#include "backends/cuda/nvrtc_compiler.h"

namespace kiln::runtime::cuda {

// The cache key of `source` on sm_<cc>: the source, the architecture, NVRTC's version and the
// options, so that a change to any of them compiles afresh.
std::string binary_cache_key(const std::string& source, int cc);

// The binary of `source` (a module of `num_kernels` kernels) for sm_<cc>: loaded from `cache`
// when there (counters().kernel_disk_cache_hits += num_kernels), else compiled with NVRTC and
// stored (counters().kernels_compiled += num_kernels). The PTX is returned when `keep_ptx`.
absl::StatusOr<CudaBinary> cached_compile(const std::string& source, int cc, int num_kernels, bool keep_ptx,
                                          const DiskCache& cache);

}  // namespace kiln::runtime::cuda

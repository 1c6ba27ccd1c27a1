// Small graphs that reach every kernel family of the GPU renderer (elementwise chains, W6's
// 64-op chain, row reductions and normalizations with warp shuffles, column and full reductions,
// split reductions, tiled matmuls with an epilogue, batched matmuls, gathers, scatters,
// convolutions, pooling, casts through f16 and bf16, 64-bit integers and bools), for the
// dialects' compile checks (HIP with comgr, MSL with clang): no float64, which Metal lacks.
#pragma once

#include <string>
#include <vector>

#include "kiln/kiln.h"

namespace kiln::testing {

struct KernelCase {
  std::string name;
  std::vector<Tensor> outputs;
};

std::vector<KernelCase> kernel_cases();

}  // namespace kiln::testing

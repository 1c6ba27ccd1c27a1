// What the passes and the renderer know about a CUDA device (runtime/target_info.h).
#pragma once

#include <cstdint>

#include "ir/target_info.h"

namespace kiln::runtime::cuda {

// A CUDA GPU with `sm_count` multiprocessors and `shared_optin` bytes of shared memory per block
// (the opt-in maximum). Every architecture NVRTC 13 targets (sm_75 and newer) has the rest.
// Tests without a GPU use an H100's numbers (132, 232448) to build the Programs it would run.
ir::TargetInfo cuda_target_info(int sm_count, int64_t shared_optin, int compute_capability = 90);

}  // namespace kiln::runtime::cuda

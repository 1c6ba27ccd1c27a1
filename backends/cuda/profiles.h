// Named CUDA targets for ahead-of-time compilation (kilnc --target cuda:sm_90): one GPU of
// each architecture NVRTC targets, with its multiprocessor count and opt-in shared memory (the
// numbers the passes plan launch shapes with). A cubin runs on every GPU of its architecture
// (target.h); a device checks the shared memory a kernel needs when it loads it.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/target_info.h"

namespace kiln::runtime::cuda {

std::vector<std::string> profile_names();
// "sm_90" (or "sm90"); NotFound naming the known profiles otherwise.
absl::StatusOr<ir::TargetInfo> target_profile(const std::string& name);

}  // namespace kiln::runtime::cuda

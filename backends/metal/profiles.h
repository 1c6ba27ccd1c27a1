// Named Metal targets for ahead-of-time compilation (kilnc --target metal:m3-max): Apple GPUs by
// chip, with their GPU core counts (what the passes plan launch shapes and splits with). Every
// profile has the same target key (target.h): an artifact compiled for one chip loads on any
// Metal 3 GPU, planned for the named one.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/target_info.h"

namespace kiln::runtime::metal {

std::vector<std::string> profile_names();
// "m1"; NotFound naming the known profiles otherwise.
absl::StatusOr<ir::TargetInfo> target_profile(const std::string& name);

}  // namespace kiln::runtime::metal

// Named HIP targets for ahead-of-time compilation (kilnc --target hip:gfx90a): one GPU of each
// processor, with its compute-unit count (what the passes plan launch shapes with). Which of
// them this build can compile for is comgr's to say (comgr.h: comgr_targets); the others are
// refused by the compiler with that list.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/target_info.h"

namespace kiln::runtime::hip {

std::vector<std::string> profile_names();
// "gfx90a"; NotFound naming the known profiles otherwise.
absl::StatusOr<ir::TargetInfo> target_profile(const std::string& name);

}  // namespace kiln::runtime::hip

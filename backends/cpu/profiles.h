// Named CPU targets for ahead-of-time compilation (kilnc --target cpu:x86-64-v3): the
// x86-64 micro-architecture levels, each a TargetInfo whose cpu_features list exactly what the
// level adds, so an object made for one loads on every CPU that has those features
// (target.h: key_compatible). The plan is made for kProfileThreads threads; any thread count
// runs it.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/target_info.h"

namespace kiln::runtime::cpu {

inline constexpr int kProfileThreads = 16;

std::vector<std::string> profile_names();
// NotFound naming the known profiles for any other name.
absl::StatusOr<ir::TargetInfo> target_profile(const std::string& name);

}  // namespace kiln::runtime::cpu

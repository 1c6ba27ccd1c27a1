// The targets kilnc compiles for, as a user writes them: "cpu:x86-64-v3,cuda:sm_80|sm_90,vulkan".
// An entry is a backend and optionally profiles ("|" separates several of one backend); a
// profile is a TargetInfo preset of the backend (runtime::target_profile), no profile means the
// target of that backend's device on this machine (which must then be present). Backends that
// exist only as plans (hip, metal) are Unimplemented with the issue that will build them.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/target_info.h"

namespace kiln::artifact {

struct TargetSpec {
  std::string backend;
  std::string profile;  // "" = this machine's device
  std::string label() const { return profile.empty() ? backend : backend + ":" + profile; }
};

absl::StatusOr<std::vector<TargetSpec>> parse_targets(const std::string& list);

// The TargetInfo `t` names: the profile's preset, or the device's own target.
absl::StatusOr<ir::TargetInfo> resolve(const TargetSpec& t);

}  // namespace kiln::artifact

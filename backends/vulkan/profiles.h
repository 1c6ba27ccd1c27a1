// Named Vulkan targets for ahead-of-time compilation (kilnc --target vulkan:lavapipe): the
// TargetInfo a known device reports, written down so SPIR-V for it can be made on a machine
// without it. What decides loading is the target key (target.h) computed from these numbers:
// a device that reports anything else refuses the section at load with both keys in the
// message, so a stale preset is an error, never wrong code.
//   lavapipe      Mesa llvmpipe on a host with 256-bit vectors (AVX2): subgroup 8, 32 KiB
//                 shared memory, Vulkan 1.3 (Mesa 22.3, Debian 12; the CI device)
//   nvidia-sm90   an NVIDIA Hopper GPU (H100/H200) under the NVIDIA driver: subgroup 32,
//                 48 KiB shared memory, Vulkan 1.3+, f32 denormals flushed, f16 cooperative
//                 matrices 16x16x16 (read off an H200, driver 580.159.04)
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/target_info.h"

namespace kiln::runtime::vk {

std::vector<std::string> profile_names();
// NotFound naming the known profiles for any other name.
absl::StatusOr<ir::TargetInfo> target_profile(const std::string& name);

}  // namespace kiln::runtime::vk

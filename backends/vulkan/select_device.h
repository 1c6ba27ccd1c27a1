// Physical device choice (discrete GPU, then integrated, then virtual/other, then CPU; or the
// KILN_VULKAN_DEVICE index): what kiln requires of a device, the optional features it enables,
// and the device facts the runtime needs (Caps). Its TargetInfo is read in target.cc.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/target_info.h"
#include "backends/vulkan/context.h"

namespace kiln::runtime::vk {

// Optional features found on the chosen device; each is enabled when true.
struct OptionalFeatures {
  bool float16 = false, int8 = false, int16 = false, float64 = false;
  bool storage8 = false, storage16 = false;
  bool scalar_layout = false, memory_model = false, memory_model_device_scope = false;
  bool subgroup_size_control = false, compute_full_subgroups = false;
  bool synchronization2 = false, maintenance4 = false;
  bool coop_matrix = false;  // VK_NV_cooperative_matrix, enabled where kernels may use it
  bool conditional_rendering = false;  // VK_EXT_conditional_rendering: device loops in batches
};

struct DeviceChoice {
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  Caps caps;
  ir::TargetInfo target;
  OptionalFeatures features;
};

// `index` < 0 chooses by device type. Unavailable with the reason when nothing qualifies
// (Vulkan 1.2, bufferDeviceAddress, timelineSemaphore, shaderInt64, a compute queue).
absl::StatusOr<DeviceChoice> choose_physical_device(VkInstance instance, int index);

}  // namespace kiln::runtime::vk

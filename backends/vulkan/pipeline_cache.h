// The VkPipelineCache, loaded from the Vulkan kernel cache folder (runtime/disk_cache.h,
// keyed by the device, driver and pipeline cache UUID) when the device opens, and written back
// after compiles that grew it: drivers with a real cache skip shader compilation on a warm start.
#pragma once

#include "absl/status/status.h"
#include "backends/vulkan/context.h"

namespace kiln::runtime::vk {

absl::Status open_pipeline_cache(Context* c);
void save_pipeline_cache(Context* c);

}  // namespace kiln::runtime::vk

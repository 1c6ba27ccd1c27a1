// One compute pipeline from SPIR-V, through the context's pipeline cache and layout.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/vulkan/context.h"

namespace kiln::runtime::vk {

// `local_size_x` decides whether full subgroups can be required.
absl::StatusOr<VkPipeline> create_compute_pipeline(Context& c, const std::string& name, const std::vector<uint32_t>& spirv,
                                                   uint32_t local_size_x);

}  // namespace kiln::runtime::vk

// VkResult -> absl::Status: out-of-memory results become ResourceExhausted, the rest Internal.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "backends/vulkan/vk_api.h"

namespace kiln::runtime::vk {

const char* result_name(VkResult r);
// OkStatus for VK_SUCCESS; otherwise "vulkan: <what> failed: <VK_ERROR_...>".
absl::Status check(VkResult r, const std::string& what);

}  // namespace kiln::runtime::vk

#define KILN_VK_RETURN_IF_ERROR(expr, what)                        \
  do {                                                             \
    if (absl::Status _s = ::kiln::runtime::vk::check((expr), (what)); !_s.ok()) return _s; \
  } while (0)

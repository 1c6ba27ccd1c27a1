#include "backends/vulkan/vk_status.h"

#include "absl/strings/str_cat.h"

namespace kiln::runtime::vk {

const char* result_name(VkResult r) {
  switch (r) {
#define KILN_VK_CASE(x) \
  case x:               \
    return #x;
    KILN_VK_CASE(VK_SUCCESS)
    KILN_VK_CASE(VK_NOT_READY)
    KILN_VK_CASE(VK_TIMEOUT)
    KILN_VK_CASE(VK_INCOMPLETE)
    KILN_VK_CASE(VK_ERROR_OUT_OF_HOST_MEMORY)
    KILN_VK_CASE(VK_ERROR_OUT_OF_DEVICE_MEMORY)
    KILN_VK_CASE(VK_ERROR_INITIALIZATION_FAILED)
    KILN_VK_CASE(VK_ERROR_DEVICE_LOST)
    KILN_VK_CASE(VK_ERROR_MEMORY_MAP_FAILED)
    KILN_VK_CASE(VK_ERROR_LAYER_NOT_PRESENT)
    KILN_VK_CASE(VK_ERROR_EXTENSION_NOT_PRESENT)
    KILN_VK_CASE(VK_ERROR_FEATURE_NOT_PRESENT)
    KILN_VK_CASE(VK_ERROR_INCOMPATIBLE_DRIVER)
    KILN_VK_CASE(VK_ERROR_TOO_MANY_OBJECTS)
    KILN_VK_CASE(VK_ERROR_FORMAT_NOT_SUPPORTED)
    KILN_VK_CASE(VK_ERROR_FRAGMENTED_POOL)
    KILN_VK_CASE(VK_ERROR_UNKNOWN)
    KILN_VK_CASE(VK_ERROR_OUT_OF_POOL_MEMORY)
    KILN_VK_CASE(VK_ERROR_INVALID_EXTERNAL_HANDLE)
    KILN_VK_CASE(VK_ERROR_FRAGMENTATION)
    KILN_VK_CASE(VK_ERROR_INVALID_OPAQUE_CAPTURE_ADDRESS)
    KILN_VK_CASE(VK_PIPELINE_COMPILE_REQUIRED)
    KILN_VK_CASE(VK_ERROR_INVALID_SHADER_NV)
#undef KILN_VK_CASE
    default:
      return "VK_ERROR_(unrecognized)";
  }
}

absl::Status check(VkResult r, const std::string& what) {
  if (r == VK_SUCCESS) return absl::OkStatus();
  std::string msg = absl::StrCat("vulkan: ", what, " failed: ", result_name(r), " (", int(r), ")");
  if (r == VK_ERROR_OUT_OF_DEVICE_MEMORY || r == VK_ERROR_OUT_OF_HOST_MEMORY || r == VK_ERROR_TOO_MANY_OBJECTS ||
      r == VK_ERROR_OUT_OF_POOL_MEMORY || r == VK_ERROR_FRAGMENTATION)
    return absl::ResourceExhaustedError(msg);
  if (r == VK_ERROR_DEVICE_LOST) return absl::AbortedError(msg);
  return absl::InternalError(msg);
}

}  // namespace kiln::runtime::vk

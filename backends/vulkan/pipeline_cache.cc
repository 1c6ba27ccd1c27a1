#include "backends/vulkan/pipeline_cache.h"

#include <vector>

#include "absl/strings/str_format.h"
#include "runtime/disk_cache.h"
#include "backends/vulkan/vk_status.h"

namespace kiln::runtime::vk {
namespace {

std::string cache_key(const Context& c) {
  std::string uuid;
  for (uint8_t b : c.caps.pipeline_cache_uuid) absl::StrAppendFormat(&uuid, "%02x", b);
  return absl::StrFormat("kiln vulkan pipeline cache v1\n%s %04x:%04x driver %x uuid %s", c.caps.name, c.caps.vendor_id,
                         c.caps.device_id, c.caps.driver_version, uuid);
}

}  // namespace

absl::Status open_pipeline_cache(Context* c) {
  std::string data = DiskCache(c->cache_dir).get(cache_key(*c)).value_or("");
  auto ci = vk_struct<VkPipelineCacheCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO);
  ci.initialDataSize = data.size();
  ci.pInitialData = data.data();
  if (vkCreatePipelineCache(c->device, &ci, nullptr, &c->pipeline_cache) == VK_SUCCESS) {
    c->pipeline_cache_saved_bytes = data.size();
    return absl::OkStatus();
  }
  ci.initialDataSize = 0;  // the driver rejected the saved data: start empty
  ci.pInitialData = nullptr;
  return check(vkCreatePipelineCache(c->device, &ci, nullptr, &c->pipeline_cache), "vkCreatePipelineCache");
}

void save_pipeline_cache(Context* c) {
  DiskCache cache(c->cache_dir);
  if (!cache.enabled()) return;
  std::lock_guard<std::mutex> lock(c->pipeline_cache_mu);
  size_t n = 0;
  if (vkGetPipelineCacheData(c->device, c->pipeline_cache, &n, nullptr) != VK_SUCCESS || n == c->pipeline_cache_saved_bytes) return;
  std::vector<char> data(n);
  if (vkGetPipelineCacheData(c->device, c->pipeline_cache, &n, data.data()) != VK_SUCCESS) return;
  cache.put(cache_key(*c), std::string_view(data.data(), n));
  c->pipeline_cache_saved_bytes = n;
}

}  // namespace kiln::runtime::vk

#include "runtime/vulkan/pipeline_cache.h"

#include <cstdio>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "runtime/vulkan/cache_file.h"
#include "runtime/vulkan/vk_status.h"

namespace kiln::runtime::vk {
namespace {

constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'P', 'L', 'C', '1'};

std::string device_id(const Context& c) {
  std::string uuid;
  for (uint8_t b : c.caps.pipeline_cache_uuid) absl::StrAppendFormat(&uuid, "%02x", b);
  return absl::StrFormat("%04x-%04x-%x-%s", c.caps.vendor_id, c.caps.device_id, c.caps.driver_version, uuid);
}

std::string cache_path(const Context& c) {
  if (c.cache_dir.empty()) return "";
  return absl::StrCat(c.cache_dir, "/vulkan/pipelines-", device_id(c), ".bin");
}

}  // namespace

absl::Status open_pipeline_cache(Context* c) {
  std::string data;
  const std::string path = cache_path(*c);
  if (!path.empty()) {
    auto d = read_cache_file(path, kMagic, cache_key(device_id(*c)));
    if (d.ok()) {
      data = *std::move(d);
    } else if (!absl::IsNotFound(d.status())) {
      std::fprintf(stderr, "kiln: warning: corrupt pipeline cache %s (%s); starting empty\n", path.c_str(),
                   std::string(d.status().message()).c_str());
    }
  }
  VkPipelineCacheCreateInfo ci = vk_struct<VkPipelineCacheCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_CACHE_CREATE_INFO);
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
  const std::string path = cache_path(*c);
  if (path.empty()) return;
  std::lock_guard<std::mutex> lock(c->pipeline_cache_mu);
  size_t n = 0;
  if (vkGetPipelineCacheData(c->device, c->pipeline_cache, &n, nullptr) != VK_SUCCESS || n == c->pipeline_cache_saved_bytes) return;
  std::vector<char> data(n);
  if (vkGetPipelineCacheData(c->device, c->pipeline_cache, &n, data.data()) != VK_SUCCESS) return;
  if (!make_dirs(absl::StrCat(c->cache_dir, "/vulkan"))) return;
  absl::Status s = write_cache_file(path, kMagic, cache_key(device_id(*c)), data.data(), n);
  if (!s.ok()) {
    std::fprintf(stderr, "kiln: warning: pipeline cache: %s\n", std::string(s.message()).c_str());
    return;
  }
  c->pipeline_cache_saved_bytes = n;
}

}  // namespace kiln::runtime::vk

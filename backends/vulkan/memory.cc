// Context memory: one VkBuffer per allocation, bound to a range of a shared memory block
// (memory_blocks.h), freed only once the GPU is done with it. Device buffers are recycled by size in stream order (results are allocated fresh on
// every run, so a replay loop must not allocate device memory each time).
#include "backends/vulkan/memory.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "runtime/stats.h"
#include "backends/vulkan/context.h"
#include "backends/vulkan/vk_status.h"

namespace kiln::runtime::vk {
namespace {


// Rounds up to 1/8 of the enclosing power of two (at most 12.5% waste), so buffers recycle.
VkDeviceSize size_class(VkDeviceSize n) {
  n = std::max<VkDeviceSize>(n, 256);
  VkDeviceSize p = 1;
  while (p < n) p <<= 1;
  VkDeviceSize step = std::max<VkDeviceSize>(p / 8, 256);
  return (n + step - 1) / step * step;
}

struct UseInfo {
  VkBufferUsageFlags usage;
  VkMemoryPropertyFlags required, preferred;
};

UseInfo use_info(MemoryUse u) {
  const VkMemoryPropertyFlags host = VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT;
  switch (u) {
    case MemoryUse::kDevice:
      return {VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT | VK_BUFFER_USAGE_TRANSFER_DST_BIT |
                  VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT,
              VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0};
    case MemoryUse::kUpload:
      return {VK_BUFFER_USAGE_TRANSFER_SRC_BIT, host, 0};
    case MemoryUse::kReadback:
      return {VK_BUFFER_USAGE_TRANSFER_DST_BIT, host, VK_MEMORY_PROPERTY_HOST_CACHED_BIT};
    case MemoryUse::kPredicate:  // a device loop's condition for conditional rendering
      return {VK_BUFFER_USAGE_CONDITIONAL_RENDERING_BIT_EXT | VK_BUFFER_USAGE_TRANSFER_DST_BIT,
              VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, 0};
    case MemoryUse::kTable:
      return {VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT, host,
              VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT};
  }
  return {};
}

}  // namespace

VulkanBuffer::VulkanBuffer(Device* d, std::shared_ptr<Context> ctx, Allocation a, int64_t bytes)
    : Buffer(d, bytes),
      ctx_(std::move(ctx)),
      a_(a),
      last_write_(a.ready_after),
      last_use_(a.ready_after),
      last_copy_(a.ready_after_copy),
      last_copy_use_(a.ready_after_copy) {}

VulkanBuffer::~VulkanBuffer() { ctx_->release(a_, Stamp{last_use_.load(), last_copy_use_.load()}); }

absl::StatusOr<Allocation> Context::allocate(VkDeviceSize bytes, MemoryUse use) {
  collect();
  if (use == MemoryUse::kDevice) {
    VkDeviceSize want = size_class(bytes);
    std::lock_guard<std::mutex> lock(memory_mu_);
    auto it = reuse_.find(want);
    if (it != reuse_.end()) {
      Allocation a = it->second;
      reuse_.erase(it);
      reuse_bytes_ -= a.size;
      return a;
    }
  }
  auto a = allocate_new(bytes, use);
  if (a.ok() || !absl::IsResourceExhausted(a.status())) return a;
  // Out of memory: let the GPU finish what uses the pooled buffers, give them back, try once more.
  wait(last_submitted_all()).IgnoreError();
  {
    std::lock_guard<std::mutex> lock(memory_mu_);
    drop_reuse_pool();
  }
  return allocate_new(bytes, use);
}

absl::StatusOr<Allocation> Context::allocate_new(VkDeviceSize bytes, MemoryUse use) {
  Allocation a;
  a.use = use;
  a.size = use == MemoryUse::kDevice ? size_class(bytes) : std::max<VkDeviceSize>((bytes + 255) / 256 * 256, 256);
  if (a.size > caps.max_allocation)
    return absl::ResourceExhaustedError(absl::StrCat("vulkan: cannot allocate ", bytes, " bytes on ", caps.name,
                                                     ": larger than the device's largest allocation (", caps.max_allocation, " bytes)"));
  UseInfo info = use_info(use);
  VkBufferCreateInfo bi = vk_struct<VkBufferCreateInfo>(VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO);
  bi.size = a.size;
  bi.usage = info.usage;
  // Device buffers are written by the copy queue and used by the compute queue: concurrent
  // sharing between the two families (ownership transfers would need a barrier on the compute
  // queue per upload, and a replayed command buffer is recorded once). Staging buffers stay with
  // the one queue that uses them.
  const uint32_t families[2] = {caps.queue_family, caps.copy_family};
  bi.sharingMode = VK_SHARING_MODE_EXCLUSIVE;
  if (use == MemoryUse::kDevice && dedicated_copy_queue()) {
    bi.sharingMode = VK_SHARING_MODE_CONCURRENT;
    bi.queueFamilyIndexCount = 2;
    bi.pQueueFamilyIndices = families;
  }
  KILN_VK_RETURN_IF_ERROR(vkCreateBuffer(device, &bi, nullptr, &a.buffer), absl::StrCat("vkCreateBuffer (", bytes, " bytes)"));
  VkMemoryRequirements req;
  vkGetBufferMemoryRequirements(device, a.buffer, &req);

  // Candidate memory types: required properties, those with the preferred ones first.
  std::vector<uint32_t> types;
  for (int pass = 0; pass < 2; ++pass) {
    for (uint32_t i = 0; i < memory_properties.memoryTypeCount; ++i) {
      VkMemoryPropertyFlags f = memory_properties.memoryTypes[i].propertyFlags;
      if (!(req.memoryTypeBits & (1u << i)) || (f & info.required) != info.required) continue;
      bool preferred = (f & info.preferred) == info.preferred;
      if (preferred == (pass == 0)) types.push_back(i);
    }
  }
  const bool address = (info.usage & VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT) != 0;
  absl::Status last = absl::ResourceExhaustedError(
      absl::StrCat("vulkan: no memory type on ", caps.name, " for a ", bytes, "-byte buffer"));
  for (uint32_t t : types) {
    VkDeviceSize heap = memory_properties.memoryHeaps[memory_properties.memoryTypes[t].heapIndex].size;
    if (req.size > heap) {
      last = absl::ResourceExhaustedError(absl::StrCat("vulkan: cannot allocate ", bytes, " bytes on ", caps.name,
                                                       ": larger than its memory heap (", heap, " bytes)"));
      continue;
    }
    // Shared blocks of 64 MiB, less where the heap or the largest allocation is small.
    const VkDeviceSize block = std::min({MemoryBlocks::kBlockBytes, heap / 8, caps.max_allocation});
    auto r = blocks_.allocate(device, t, req.size, req.alignment, block,
                              (memory_properties.memoryTypes[t].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) != 0,
                              address);
    last = r.status();
    if (!last.ok()) continue;
    a.memory = r->memory;
    a.block = r->block;
    a.block_offset = r->offset;
    a.block_size = r->size;
    a.mapped = use == MemoryUse::kDevice || use == MemoryUse::kPredicate ? nullptr : r->mapped;
    break;
  }
  if (!last.ok()) {
    vkDestroyBuffer(device, a.buffer, nullptr);
    return last;
  }
  absl::Status s = check(vkBindBufferMemory(device, a.buffer, a.memory, a.block_offset), "vkBindBufferMemory");
  if (s.ok() && use != MemoryUse::kDevice && use != MemoryUse::kPredicate && !a.mapped)
    s = absl::InternalError(absl::StrCat("vulkan: a host-visible block on ", caps.name, " is not mapped"));
  if (!s.ok()) {
    destroy(a);
    return s;
  }
  if (info.usage & VK_BUFFER_USAGE_SHADER_DEVICE_ADDRESS_BIT) {
    VkBufferDeviceAddressInfo di = vk_struct<VkBufferDeviceAddressInfo>(VK_STRUCTURE_TYPE_BUFFER_DEVICE_ADDRESS_INFO);
    di.buffer = a.buffer;
    a.address = vkGetBufferDeviceAddress(device, &di);
  }
  if (use == MemoryUse::kDevice) counters().bytes_allocated += int64_t(a.size);
  return a;
}

void Context::release(Allocation a, Stamp after) {
  if (!a.buffer) return;
  a.ready_after = std::max(a.ready_after, after.compute);
  a.ready_after_copy = std::max(a.ready_after_copy, after.copy);
  std::lock_guard<std::mutex> lock(memory_mu_);
  retired_.push_back(a);
}

void Context::collect() {
  const uint64_t done = completed(), done_copy = copy_completed();
  std::lock_guard<std::mutex> lock(memory_mu_);
  size_t keep = 0;
  for (Allocation& a : retired_) {
    // A device buffer is reusable at once, GPU still busy or not: it carries ready_after (and
    // ready_after_copy), and whoever uses it next waits on the GPU for those first (stream-ordered
    // reuse). Only freeing it has to wait for the GPU.
    if (a.use == MemoryUse::kDevice && reuse_bytes_ + a.size <= reuse_limit_) {
      reuse_bytes_ += a.size;
      reuse_.emplace(a.size, a);
      continue;
    }
    if (a.ready_after > done || a.ready_after_copy > done_copy) {
      retired_[keep++] = a;
      continue;
    }
    destroy(a);
  }
  retired_.resize(keep);
}

void Context::drop_reuse_pool() {
  // Pooled buffers may be in use by queued GPU work (stream-ordered reuse): callers make the GPU
  // idle first (the out-of-memory path waits for every submission, the destructor for the device).
  for (auto& [size, a] : reuse_) destroy(a);
  reuse_.clear();
  reuse_bytes_ = 0;
}

void Context::destroy(Allocation& a) {
  if (a.buffer) vkDestroyBuffer(device, a.buffer, nullptr);
  MemoryBlocks::Range r;
  r.block = a.block;
  r.offset = a.block_offset;
  r.size = a.block_size;
  blocks_.free(device, r);  // frees the block once nothing lives in it
  a = Allocation{};
}

}  // namespace kiln::runtime::vk

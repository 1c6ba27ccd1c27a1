// MemoryBlocks (memory_blocks.h): blocks per memory type, first-fit ranges, coalescing frees.
#include "backends/vulkan/memory_blocks.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "backends/vulkan/vk_status.h"
#include "runtime/stats.h"

namespace kiln::runtime::vk {

bool MemoryBlocks::carve(Block& b, VkDeviceSize size, VkDeviceSize alignment, VkDeviceSize* offset) {
  for (auto it = b.free.begin(); it != b.free.end(); ++it) {
    const VkDeviceSize start = it->first, len = it->second;
    const VkDeviceSize at = (start + alignment - 1) / alignment * alignment;
    if (at + size > start + len) continue;
    b.free.erase(it);
    if (at > start) b.free.emplace(start, at - start);  // the alignment gap stays free
    if (at + size < start + len) b.free.emplace(at + size, start + len - at - size);
    b.used += size;
    counters().memory_block_used_bytes += int64_t(size);
    *offset = at;
    return true;
  }
  return false;
}

absl::StatusOr<MemoryBlocks::Range> MemoryBlocks::allocate(VkDevice device, uint32_t type, VkDeviceSize size,
                                                           VkDeviceSize alignment, VkDeviceSize block_bytes,
                                                           bool host_visible, bool device_address) {
  alignment = std::max<VkDeviceSize>(alignment, 1);
  std::lock_guard<std::mutex> lock(mu_);
  Range r;
  r.size = size;
  const bool dedicated = size > block_bytes / 2;
  if (!dedicated) {
    for (size_t i = 0; i < blocks_.size(); ++i) {
      Block& b = blocks_[i];
      if (!b.memory || b.dedicated || b.type != type || (device_address && !b.device_address) ||
          !carve(b, size, alignment, &r.offset))
        continue;
      r.block = int(i);
      break;
    }
  }
  if (r.block < 0) {
    Block b;
    b.type = type;
    b.dedicated = dedicated;
    b.device_address = device_address;
    b.size = dedicated ? size : block_bytes;
    VkMemoryAllocateFlagsInfo flags = vk_struct<VkMemoryAllocateFlagsInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_FLAGS_INFO);
    flags.flags = VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT;
    VkMemoryAllocateInfo ai = vk_struct<VkMemoryAllocateInfo>(VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO);
    ai.allocationSize = b.size;
    ai.memoryTypeIndex = type;
    if (device_address) ai.pNext = &flags;
    KILN_VK_RETURN_IF_ERROR(vkAllocateMemory(device, &ai, nullptr, &b.memory),
                            absl::StrCat("vkAllocateMemory (a ", b.size, "-byte block for a ", size, "-byte buffer)"));
    if (host_visible) {
      VkResult m = vkMapMemory(device, b.memory, 0, VK_WHOLE_SIZE, 0, &b.mapped);
      if (m != VK_SUCCESS) {
        vkFreeMemory(device, b.memory, nullptr);
        return check(m, "vkMapMemory");
      }
    }
    b.free.emplace(0, b.size);
    counters().memory_blocks += 1;
    counters().memory_block_bytes += int64_t(b.size);
    VkDeviceSize at = 0;
    carve(b, size, alignment, &at);  // fits: the block is empty and at least `size` long
    r.offset = at;
    auto slot = std::find_if(blocks_.begin(), blocks_.end(), [](const Block& x) { return !x.memory; });
    r.block = int(slot - blocks_.begin());
    if (slot == blocks_.end()) blocks_.push_back(std::move(b));
    else *slot = std::move(b);
  }
  const Block& b = blocks_[size_t(r.block)];
  r.memory = b.memory;
  if (b.mapped) r.mapped = static_cast<char*>(b.mapped) + r.offset;
  return r;
}

void MemoryBlocks::free(VkDevice device, const Range& r) {
  if (r.block < 0) return;
  std::lock_guard<std::mutex> lock(mu_);
  Block& b = blocks_[size_t(r.block)];
  VkDeviceSize start = r.offset, len = r.size;
  auto next = b.free.lower_bound(start);
  if (next != b.free.end() && start + len == next->first) {  // merge with the range after
    len += next->second;
    next = b.free.erase(next);
  }
  if (next != b.free.begin()) {  // and with the one before
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      start = prev->first;
      len += prev->second;
      b.free.erase(prev);
    }
  }
  b.free.emplace(start, len);
  b.used -= r.size;
  counters().memory_block_used_bytes -= int64_t(r.size);
  if (b.used == 0) release_block(device, r.block);
}

void MemoryBlocks::release_block(VkDevice device, int index) {
  Block& b = blocks_[size_t(index)];
  if (b.mapped) vkUnmapMemory(device, b.memory);
  vkFreeMemory(device, b.memory, nullptr);
  counters().memory_blocks -= 1;
  counters().memory_block_bytes -= int64_t(b.size);
  counters().memory_block_used_bytes -= int64_t(b.used);  // what free_all drops with the block
  b = Block{};
}

void MemoryBlocks::free_all(VkDevice device) {
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < blocks_.size(); ++i)
    if (blocks_[i].memory) release_block(device, int(i));
}

MemoryBlocks::Stats MemoryBlocks::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  Stats s;
  for (const Block& b : blocks_) {
    if (!b.memory) continue;
    ++s.blocks;
    s.block_bytes += int64_t(b.size);
    s.used_bytes += int64_t(b.used);
    for (const auto& [off, len] : b.free) s.largest_free = std::max(s.largest_free, int64_t(len));
  }
  return s;
}

}  // namespace kiln::runtime::vk

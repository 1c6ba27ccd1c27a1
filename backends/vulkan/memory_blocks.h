// Sub-allocation of Vulkan device memory: buffers are placed in large VkDeviceMemory blocks, one
// list of blocks per memory type, instead of one vkAllocateMemory each.
//
// Drivers cap the number of live allocations (maxMemoryAllocationCount, often 4096) and each
// vkAllocateMemory is a kernel call; a graph of thousands of tensors would hit the cap. A block
// is kBlockBytes (less where the heap or the device's largest allocation is smaller); a buffer
// larger than half a block gets a block of its own size. Within a block, free ranges are kept by
// offset (first fit at the buffer's alignment, neighbours coalesced on free), and a block is
// freed as soon as nothing lives in it. Host-visible blocks are mapped once, whole. Thread-safe.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/vulkan/vk_api.h"

namespace kiln::runtime::vk {

class MemoryBlocks {
 public:
  static constexpr VkDeviceSize kBlockBytes = VkDeviceSize(64) << 20;

  struct Range {
    int block = -1;  // index into the pool's blocks
    VkDeviceSize offset = 0, size = 0;
    VkDeviceMemory memory = VK_NULL_HANDLE;
    void* mapped = nullptr;  // host-visible blocks: this range's first byte
  };
  struct Stats {
    int64_t blocks = 0;
    int64_t block_bytes = 0;  // bytes of VkDeviceMemory held
    int64_t used_bytes = 0;   // bytes of buffers placed in them
    int64_t largest_free = 0; // the largest free range of any block
  };

  // `block_bytes`: the size of a shared block for this memory type (the caller caps it by heap
  // and device limits); a buffer over half of it gets a block of its own size. `device_address`: the memory may back buffers used through addresses.
  absl::StatusOr<Range> allocate(VkDevice device, uint32_t type, VkDeviceSize size, VkDeviceSize alignment,
                                 VkDeviceSize block_bytes, bool host_visible, bool device_address);
  void free(VkDevice device, const Range& r);
  void free_all(VkDevice device);  // at device teardown
  Stats stats() const;

 private:
  struct Block {
    VkDeviceMemory memory = VK_NULL_HANDLE;
    VkDeviceSize size = 0, used = 0;
    uint32_t type = 0;
    bool dedicated = false;  // holds one buffer: never shared
    // Allocated with VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT: only such a block may hold a buffer
    // whose address shaders take (one memory type can serve both kinds, e.g. on lavapipe and
    // integrated GPUs, where device memory is host-visible).
    bool device_address = false;
    void* mapped = nullptr;
    std::map<VkDeviceSize, VkDeviceSize> free;  // offset -> size
  };
  // First fit at `alignment` in block `b`; the range's offset, or false.
  static bool carve(Block& b, VkDeviceSize size, VkDeviceSize alignment, VkDeviceSize* offset);
  void release_block(VkDevice device, int index);

  mutable std::mutex mu_;
  std::vector<Block> blocks_;  // released blocks keep their slot (memory null) for reuse
};

}  // namespace kiln::runtime::vk

// Vulkan memory: an Allocation (one VkBuffer placed in a block of VkDeviceMemory, made and
// recycled by Context::allocate in memory.cc; blocks: memory_blocks.h) and VulkanBuffer, the kiln
// Buffer that owns one.
//
// Kernels reach memory through buffer device addresses, so every device allocation is one
// VkBuffer with an address. A VulkanBuffer also keeps the compute timeline values of the last
// submission that wrote it (downloads wait for that one) and of the last that used it (its memory
// is freed, or recycled, after that one), and the copy timeline values of its last upload and
// last download when transfers have a queue of their own (readers wait for the upload, writers
// and reuse for both): buffers are released in stream order, never by a device-wide wait.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "backends/vulkan/vk_api.h"
#include "runtime/device.h"

namespace kiln::runtime::vk {

class Context;

enum class MemoryUse { kDevice, kUpload, kReadback, kTable, kPredicate };

// A VkBuffer bound to a range of a memory block; `mapped` for host-visible uses.
struct Allocation {
  VkBuffer buffer = VK_NULL_HANDLE;
  VkDeviceMemory memory = VK_NULL_HANDLE;  // the block's memory
  int block = -1;                          // the range in MemoryBlocks
  VkDeviceSize block_offset = 0, block_size = 0;
  VkDeviceAddress address = 0;
  VkDeviceSize size = 0;
  void* mapped = nullptr;
  MemoryUse use = MemoryUse::kDevice;
  // Timeline value of the last GPU use before a recycled buffer was handed out again; a new
  // user's first submission waits for it (already reached, but it orders the accesses for the
  // synchronization validator).
  uint64_t ready_after = 0;
  uint64_t ready_after_copy = 0;  // the same on the copy timeline (its last upload)
};

class VulkanBuffer : public Buffer {
 public:
  VulkanBuffer(Device* d, std::shared_ptr<Context> ctx, Allocation a, int64_t bytes);
  ~VulkanBuffer() override;  // releases the memory after its last use

  VkBuffer buffer() const { return a_.buffer; }
  VkDeviceAddress address() const { return a_.address; }
  uint64_t last_write() const { return last_write_.load(); }
  uint64_t last_use() const { return last_use_.load(); }
  // Copy timeline value of the last upload into it (0: none on a copy queue of its own): readers
  // wait for it.
  uint64_t last_copy() const { return last_copy_.load(); }
  // ... and of its last use there, upload or download: writers wait for it, and its memory is
  // released after it.
  uint64_t last_copy_use() const { return last_copy_use_.load(); }
  void note_copy(uint64_t v) {
    raise(last_copy_, v);
    raise(last_copy_use_, v);
  }
  void note_copy_read(uint64_t v) { raise(last_copy_use_, v); }
  void note_read(uint64_t v) { raise(last_use_, v); }
  void note_write(uint64_t v) {
    raise(last_write_, v);
    raise(last_use_, v);
  }

 private:
  static void raise(std::atomic<uint64_t>& a, uint64_t v) {
    uint64_t cur = a.load();
    while (cur < v && !a.compare_exchange_weak(cur, v)) {
    }
  }
  std::shared_ptr<Context> ctx_;
  Allocation a_;
  std::atomic<uint64_t> last_write_, last_use_, last_copy_, last_copy_use_;
};

}  // namespace kiln::runtime::vk

// A kiln Buffer in Vulkan device memory, with the timeline values of the last submission that
// wrote it (downloads wait for it) and the last that used it (its memory is freed after that).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "runtime/device.h"
#include "backends/vulkan/context.h"

namespace kiln::runtime::vk {

class VulkanBuffer : public Buffer {
 public:
  VulkanBuffer(Device* d, std::shared_ptr<Context> ctx, Allocation a, int64_t bytes)
      : Buffer(d, bytes), ctx_(std::move(ctx)), a_(a), last_write_(a.ready_after), last_use_(a.ready_after) {}
  ~VulkanBuffer() override { ctx_->release(a_, last_use_.load()); }

  VkBuffer buffer() const { return a_.buffer; }
  VkDeviceAddress address() const { return a_.address; }
  uint64_t last_write() const { return last_write_.load(); }
  uint64_t last_use() const { return last_use_.load(); }
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
  std::atomic<uint64_t> last_write_, last_use_;
};

}  // namespace kiln::runtime::vk

// Host <-> device copies through persistently mapped host-visible staging buffers. An upload
// returns once its copy is submitted, to the copy queue where the device has copy engines (so it
// overlaps kernels; a run that reads the buffer waits for that copy alone, Context::submit), else
// to the compute queue; a download waits (on the GPU) for the last submission that wrote the
// buffer, then on the host for its own copy. Several downloads go in one command buffer and one
// submission (up to kKeepStaging bytes of staging at a time), so the host waits once.
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "absl/status/status.h"
#include "backends/vulkan/memory.h"
#include "backends/vulkan/context.h"

namespace kiln::runtime::vk {

class Transfers {
 public:
  explicit Transfers(std::shared_ptr<Context> ctx) : ctx_(std::move(ctx)) {}
  ~Transfers();
  absl::Status init();
  absl::Status upload(VulkanBuffer* dst, const void* src, int64_t bytes);
  absl::Status download(VulkanBuffer* src, void* dst, int64_t bytes);
  struct Download {
    VulkanBuffer* src;
    void* dst;
    int64_t bytes;
  };
  absl::Status download_many(const std::vector<Download>& all);

 private:
  struct InFlight {
    VkCommandBuffer cb;
    Allocation staging;
    uint64_t value;  // on `queue`'s timeline
    Queue queue;
  };
  // Returns finished copies' command buffers and staging to the free lists (mu_ held).
  void reclaim();
  absl::StatusOr<Allocation> take_staging(VkDeviceSize bytes, MemoryUse use);
  absl::StatusOr<VkCommandBuffer> take_command_buffer(Queue q);
  void give_staging(Allocation a);

  std::shared_ptr<Context> ctx_;
  std::mutex mu_;
  VkCommandPool pools_[2] = {VK_NULL_HANDLE, VK_NULL_HANDLE};  // by Queue: the compute and copy families
  std::vector<VkCommandBuffer> free_cbs_[2];
  std::vector<Allocation> free_staging_;
  VkDeviceSize free_staging_bytes_ = 0;
  std::vector<InFlight> in_flight_;
};

}  // namespace kiln::runtime::vk

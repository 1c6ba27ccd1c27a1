// The Vulkan Device (runtime/device.h): memory, transfers and load(CompiledProgram), with no
// compiler in it. load() checks that the CompiledProgram is consistent (it may come from disk)
// and was compiled for this device's target (target.h: target_key), makes one compute pipeline
// per kernel from its SPIR-V and records the executable's command buffer (executable.h).
//
// Opening one reads KILN_VULKAN_DEVICE (physical device index), KILN_VULKAN_VALIDATION=1 (the
// Khronos validation layer with synchronization validation; any message fails the next read of
// a result) and the kernel cache folder (the VkPipelineCache lives there), all through
// support::options(). A Vulkan device on the CPU (Mesa's lavapipe) is_emulated(): usable when
// asked for, never the default.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/vulkan/context.h"
#include "backends/vulkan/transfer.h"
#include "runtime/device.h"

namespace kiln::runtime::vk {

class VulkanDevice : public Device {
 public:
  // InvalidArgument for a malformed KILN_VULKAN_DEVICE; Unavailable with the reason when there
  // is no loader, driver or suitable device.
  static absl::StatusOr<std::unique_ptr<VulkanDevice>> create();

  std::string name() const override { return "vulkan"; }
  std::string description() const override;
  const ir::TargetInfo& target() const override { return ctx_->target; }
  bool is_emulated() const override { return ctx_->caps.type == VK_PHYSICAL_DEVICE_TYPE_CPU; }
  absl::StatusOr<std::shared_ptr<Buffer>> alloc(int64_t bytes) override;
  absl::Status upload(Buffer* dst, const void* src, int64_t bytes) override;
  absl::Status download(Buffer* src, void* dst, int64_t bytes) override;
  absl::Status download_many(const std::vector<Download>& all) override;
  absl::StatusOr<std::unique_ptr<Executable>> load(const CompiledProgram& c) override;
  absl::Status synchronize() override;

  // The compatibility key of this device's target (what load() requires of a CompiledProgram).
  const std::string& target_key() const { return target_key_; }
  // Validation-layer warnings and errors recorded so far (none without KILN_VULKAN_VALIDATION=1).
  std::vector<std::string> validation_messages() const { return ctx_->log.snapshot(); }
  void clear_validation_messages() { ctx_->log.clear(); }
  // The device's context, for tests of its parts (the sub-allocator's placement rules).
  Context& context_for_tests() const { return *ctx_; }
  // Submissions to the compute queue so far (the timeline's last value: one per run, download or
  // upload there), for tests.
  uint64_t submissions() const { return ctx_->last_submitted(); }
  // vkQueueSubmit calls on the compute queue (runs issued while the GPU is busy share one), and
  // the runs now waiting in the batch (context.h: batched submission).
  uint64_t compute_queue_submits() const { return ctx_->compute_queue_submits(); }
  int batched_runs() const { return ctx_->batched_runs(); }
  // Uploads: whether they have a queue of the copy engines (or, KILN_VULKAN_TRANSFER_QUEUE=2, a
  // timeline) of their own, submissions to it so far, and tests' views of the copy timeline.
  bool has_copy_queue() const { return ctx_->dedicated_copy_queue(); }
  bool copy_timeline_on() const { return ctx_->copy_timeline_on(); }
  uint64_t copy_submissions() const { return ctx_->copy_last_submitted(); }
  uint64_t copies_completed() const { return ctx_->copy_completed(); }
  uint64_t compute_completed() const { return ctx_->completed(); }
  // The copy timeline value of `b`'s last upload (0: none on the copy queue).
  absl::StatusOr<uint64_t> upload_value(Buffer* b);
  // The waits of the last compute submission (a run's: which uploads it waited for).
  Stamp last_compute_waits() const { return ctx_->last_waits(Queue::kCompute); }
  // The waits of the last copy-queue submission (an upload's or a download's).
  Stamp last_copy_waits() const { return ctx_->last_waits(Queue::kCopy); }
  // Later copies (uploads and downloads) wait until open_copies(): shows that runs wait only for
  // the copies of their own buffers, and the copies only for the runs using theirs.
  absl::Status hold_copies() { return ctx_->hold_copies(); }
  absl::Status open_copies() { return ctx_->open_copies(); }

 private:
  explicit VulkanDevice(std::shared_ptr<Context> ctx);
  absl::Status validation_status();
  absl::StatusOr<VulkanBuffer*> mine(Buffer* b);

  std::shared_ptr<Context> ctx_;
  std::string target_key_;
  Transfers transfers_;
};

}  // namespace kiln::runtime::vk

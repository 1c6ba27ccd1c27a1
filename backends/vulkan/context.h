// One Vulkan device opened for kiln: instance, logical device, compute queue, the timeline
// semaphore every compute submission signals, the copy queue for uploads and its own timeline
// (where the device has copy engines), memory allocation, and the validation message log.
// Buffers and executables hold a shared_ptr to it, so it outlives every object made from it.
#pragma once

#include <atomic>
#include <cstdint>
#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/target_info.h"
#include "backends/vulkan/memory.h"
#include "backends/vulkan/memory_blocks.h"
#include "backends/vulkan/vk_api.h"
#include "support/shared_by_key.h"
#include "support/trace.h"

namespace kiln::runtime::vk {

// Device facts the runtime needs beyond TargetInfo.
struct Caps {
  int index = -1;  // position in vkEnumeratePhysicalDevices
  std::string name;
  VkPhysicalDeviceType type = VK_PHYSICAL_DEVICE_TYPE_OTHER;
  uint32_t api_version = 0, vendor_id = 0, device_id = 0, driver_version = 0;
  uint8_t pipeline_cache_uuid[VK_UUID_SIZE] = {};
  uint32_t queue_family = 0;
  // A family of copy engines only, where the device has one (UINT32_MAX: none); uploads go there
  // when Context::dedicated_copy_queue().
  uint32_t copy_family = UINT32_MAX;
  uint32_t timestamp_valid_bits = 0;
  float timestamp_period_ns = 1;
  // Pipelines request exactly TargetInfo::subgroup_size when the device can vary it.
  bool require_subgroup_size = false;
  bool full_subgroups = false;  // computeFullSubgroups
  uint32_t max_group_count[3] = {};
  VkDeviceSize max_allocation = 0;  // min(maxMemoryAllocationSize, maxBufferSize)
  VkDeviceSize storage_offset_alignment = 256, max_storage_range = 0;  // descriptor limits
  bool vulkan13 = false;
  bool validation = false;
  bool conditional_rendering = false;  // VK_EXT_conditional_rendering enabled (device loops in batches)
};

// Messages of the validation layer's debug messenger (warnings and errors).
class ValidationLog {
 public:
  void add(std::string m);
  std::vector<std::string> snapshot() const;
  void clear();
  // Messages added since the last call (each is returned once).
  std::vector<std::string> take_unreported();

 private:
  mutable std::mutex mu_;
  std::vector<std::string> messages_;
  size_t reported_ = 0;
};

struct ContextOptions {
  bool validation = false;  // VK_LAYER_KHRONOS_validation with synchronization validation
  int device_index = -1;    // KILN_VULKAN_DEVICE; -1 picks the best
  std::string cache_dir;    // the Vulkan folder of the disk cache ("": none)
  int spin_us = -1;         // KILN_VULKAN_SPIN_US (-1: by device type)
  int transfer_queue = 1;   // KILN_VULKAN_TRANSFER_QUEUE (support/options.h)
  bool skip_done_waits = true;  // KILN_VULKAN_SKIP_DONE_WAITS (support/options.h)
};

// The queues kiln submits to: compute (kernels, downloads) and copy (uploads).
enum class Queue { kCompute, kCopy };

// A point on both timelines: the compute queue's and the copy queue's (0: nothing on that one).
struct Stamp {
  uint64_t compute = 0, copy = 0;
  void raise(const Stamp& o) {
    compute = std::max(compute, o.compute);
    copy = std::max(copy, o.copy);
  }
};

class SharedPipeline;  // pipeline.h

class Context {
 public:
  // Unavailable with the reason when there is no loader, no driver or no suitable device.
  static absl::StatusOr<std::shared_ptr<Context>> create(const ContextOptions& o);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  VkInstance instance = VK_NULL_HANDLE;
  VkPhysicalDevice physical = VK_NULL_HANDLE;
  VkDevice device = VK_NULL_HANDLE;
  VkQueue queue = VK_NULL_HANDLE;
  VkSemaphore timeline = VK_NULL_HANDLE;
  // Uploads: a queue of the copy-engine family (Caps::copy_family) or, in the test mode, the
  // compute queue itself; null when uploads share the compute queue and its timeline.
  VkQueue copy_queue = VK_NULL_HANDLE;
  VkSemaphore copy_timeline = VK_NULL_HANDLE;
  bool copy_timeline_on() const { return copy_timeline != VK_NULL_HANDLE; }
  bool dedicated_copy_queue() const { return copy_queue != VK_NULL_HANDLE && copy_queue != queue; }
  VkPipelineLayout pipeline_layout = VK_NULL_HANDLE;  // push constant: uint64_t table
  VkPipelineCache pipeline_cache = VK_NULL_HANDLE;
  Caps caps;
  ir::TargetInfo target;
  VkPhysicalDeviceMemoryProperties memory_properties{};
  ValidationLog log;
  std::string cache_dir;
  std::mutex pipeline_cache_mu;  // saving the pipeline cache
  // Pipelines executables share (pipeline.h: SharedPipeline), by workgroup size and SPIR-V.
  support::SharedByKey<SharedPipeline> shared_pipelines;
  std::once_flag peaks_once;     // profiles' peaks, measured once (peaks.h)
  support::Peaks peaks;
  size_t pipeline_cache_saved_bytes = 0;

  // Submits `cb` to queue `q`, waiting on the GPU (at `wait_stage`) until the compute timeline
  // reaches wait.compute and the copy timeline wait.copy (0: no wait), and returns the value of
  // q's own timeline it signals. On each timeline values grow in submission order and a signal
  // covers all earlier submissions to that queue, so waiting for value v waits for everything
  // submitted there up to v, and for nothing on the other queue. Without a copy timeline kCopy
  // is kCompute. The semaphore wait makes the other queue's writes visible: no barrier is needed.
  absl::StatusOr<uint64_t> submit(Queue q, VkCommandBuffer cb, Stamp wait, VkPipelineStageFlags wait_stage);
  absl::StatusOr<uint64_t> submit(VkCommandBuffer cb, uint64_t wait_value, VkPipelineStageFlags wait_stage) {
    return submit(Queue::kCompute, cb, Stamp{wait_value, 0}, wait_stage);
  }
  // Host waits until the compute timeline reaches `value` / both reach theirs.
  absl::Status wait(uint64_t value);
  absl::Status wait(Stamp s);
  uint64_t completed();
  uint64_t copy_completed();  // 0 without a copy timeline
  uint64_t last_submitted();
  uint64_t copy_last_submitted();
  Stamp last_submitted_all() { return Stamp{last_submitted(), copy_last_submitted()}; }
  // The waits of the last submission to `q` (tests: which uploads a run waited for).
  Stamp last_waits(Queue q);
  // Tests: later copies also wait for a semaphore the test opens (open_copies), so an upload can
  // be held back while other work goes on. Only with a dedicated copy queue.
  absl::Status hold_copies();
  absl::Status open_copies();

  // Memory. Device allocations are counted in counters().bytes_allocated; a request the device
  // cannot satisfy is ResourceExhausted.
  absl::StatusOr<Allocation> allocate(VkDeviceSize bytes, MemoryUse use);
  // Frees `a` once the timelines reach `after` (device buffers are kept for reuse).
  void release(Allocation a, Stamp after);
  void release(Allocation a, uint64_t after_value) { release(a, Stamp{after_value, 0}); }
  // Frees released allocations the GPU no longer uses.
  void collect();

 private:
  Context() = default;
  absl::Status create_instance(const ContextOptions& o);
  absl::Status create_device(const ContextOptions& o);
  absl::StatusOr<Allocation> allocate_new(VkDeviceSize bytes, MemoryUse use);
  void destroy(Allocation& a);
  void drop_reuse_pool();  // the GPU must be idle

  VkDebugUtilsMessengerEXT messenger_ = VK_NULL_HANDLE;
  PFN_vkDestroyDebugUtilsMessengerEXT destroy_messenger_ = nullptr;
  absl::Status make_timeline(VkSemaphore* s, const char* what);
  absl::Status wait_one(VkSemaphore s, uint64_t value);
  std::mutex queue_mu_;
  uint64_t next_value_ = 0;  // last value handed to a compute submission (queue_mu_)
  std::mutex copy_mu_;       // the copy queue, when dedicated
  uint64_t next_copy_value_ = 0;
  Stamp last_waits_[2];
  VkSemaphore gate_ = VK_NULL_HANDLE;  // hold_copies
  uint64_t gate_value_ = 0;
  bool gated_ = false;
  int spin_us_ = 0;          // how long wait() polls before it blocks
  // submit() leaves out waits for timeline values already reached (a wait costs the driver work
  // even when satisfied): the highest values seen so far, and whether to (options).
  bool skip_done_waits_ = true;
  std::atomic<uint64_t> seen_[2] = {0, 0};  // compute, copy
  bool reached(int timeline_index, uint64_t value);
  std::mutex memory_mu_;
  std::vector<Allocation> retired_;  // waiting for the GPU (ready_after, ready_after_copy)
  std::multimap<VkDeviceSize, Allocation> reuse_;               // device buffers ready for reuse
  VkDeviceSize reuse_bytes_ = 0;
  MemoryBlocks blocks_;  // every allocation's VkDeviceMemory

 public:
  MemoryBlocks::Stats memory_blocks() const { return blocks_.stats(); }
};

}  // namespace kiln::runtime::vk

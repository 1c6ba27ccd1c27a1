// One Vulkan device opened for kiln: instance, logical device, compute queue, the timeline
// semaphore every compute submission signals, the copy queue for uploads and its own timeline
// (where the device has copy engines), memory allocation, and the validation message log.
// Buffers and executables hold a shared_ptr to it, so it outlives every object made from it.
//
// Batched submission: each vkQueueSubmit costs the GPU several microseconds of its own (the
// signal at its end and the driver's bookkeeping), more than a small kernel. So a run issued
// while two earlier submissions are still executing is not handed to the driver at once: it waits
// in a batch, and the batch goes as ONE vkQueueSubmit (one signal, of its last value) when the
// GPU is down to one submission, when it holds ContextOptions::batch runs, when anything else is
// submitted to the queue, or when the host waits for any value in it. A thread of the Context
// (started at the first batched run) hands the batch over when the GPU drains while the host is
// away, so no work waits on the host. Each run keeps its own timeline value; values in a batch
// are reached together.
#pragma once

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
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
  int batch = 16;               // KILN_VULKAN_BATCH: runs per vkQueueSubmit at most (1: no batching)
  // KILN_VULKAN_BATCH_HOLD (test hook): 1: batches go only when full or waited for; 2: or by the
  // flusher thread (the submitting thread never hands one over because the GPU has room).
  int batch_hold = 0;
  int batch_in_flight = 2;      // submissions executing before runs wait in a batch
  int64_t reuse_bytes = int64_t(2) << 30;  // KILN_VULKAN_REUSE_BYTES: freed device buffers kept for reuse
};

// How a compute submission may be handed to the driver (Context::submit).
enum class Submit {
  kNow,       // at once, with any runs waiting in the batch before it
  kMayBatch,  // a run: may wait in the batch while the GPU is busy (see above)
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
  // `how` applies to the compute queue (copies are submitted at once).
  absl::StatusOr<uint64_t> submit(Queue q, VkCommandBuffer cb, Stamp wait, VkPipelineStageFlags wait_stage,
                                  Submit how = Submit::kNow);
  absl::StatusOr<uint64_t> submit(VkCommandBuffer cb, uint64_t wait_value, VkPipelineStageFlags wait_stage) {
    return submit(Queue::kCompute, cb, Stamp{wait_value, 0}, wait_stage);
  }
  // Host waits until the compute timeline reaches `value` / both reach theirs.
  absl::Status wait(uint64_t value);
  absl::Status wait(Stamp s);
  uint64_t completed();
  uint64_t copy_completed();  // 0 without a copy timeline
  uint64_t last_submitted();  // the last compute value given out (it may wait in the batch)
  uint64_t copy_last_submitted();
  // vkQueueSubmit calls on the compute queue so far, and runs now waiting in the batch (tests).
  uint64_t compute_queue_submits();
  int batched_runs();
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
  // The batch (queue_mu_): groups of command buffers, each behind its own semaphore waits; the
  // last signals next_value_ when handed over.
  struct Group {
    std::vector<VkCommandBuffer> cbs;
    std::vector<VkSemaphore> waits;
    std::vector<uint64_t> values;
    std::vector<VkPipelineStageFlags> stages;
  };
  std::vector<Group> batch_;
  int batch_runs_ = 0;
  uint64_t handed_over_ = 0;             // highest compute value given to vkQueueSubmit
  std::deque<uint64_t> executing_;       // signal values of submissions not yet seen complete (rising)
  uint64_t queue_submits_ = 0;
  int batch_max_ = 16, batch_in_flight_ = 2;
  int batch_hold_ = 0;
  // Hands the batch to the driver (queue_mu_ held); on failure the batch stays for a retry.
  absl::Status flush_locked();
  // One vkQueueSubmit of `groups` to `q`, the last group signalling `signal` at `value`.
  absl::Status submit_groups(VkQueue q, const std::vector<Group>& groups, VkSemaphore signal, uint64_t value);
  // Hands it over when value > handed_over_ (a host or copy-queue wait needs it).
  absl::Status flush_for(uint64_t value);
  // Drops executing_ entries the timeline has reached (queried only when batch_in_flight_ or more
  // are listed); whether fewer than batch_in_flight_ remain.
  bool gpu_has_room_locked();
  // The thread that hands the batch over when the GPU drains (started at the first batched run).
  std::thread flusher_;
  std::condition_variable flusher_cv_;
  bool flusher_stop_ = false;
  void flusher_loop();
  void stop_flusher();
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
  VkDeviceSize reuse_limit_ = VkDeviceSize(2) << 30;
  MemoryBlocks blocks_;  // every allocation's VkDeviceMemory

 public:
  MemoryBlocks::Stats memory_blocks() const { return blocks_.stats(); }
};

}  // namespace kiln::runtime::vk

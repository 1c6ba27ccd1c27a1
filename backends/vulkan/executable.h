// A CompiledProgram loaded on a Vulkan device: one compute pipeline per kernel (made from its
// SPIR-V) and ONE recorded command buffer holding every dispatch, with a pipeline barrier only
// before steps that have dependency edges. A program with loops and branches (ir/program.h) has
// a command buffer per straight-line run instead, which run() submits as the host walks the
// step list, and a loop whose body is one run gets a command buffer of several trips under
// conditional rendering (ExecutableOptions::loop_batch). Kernels reach memory through a table of buffer device
// addresses (codegen/c_family/gpu_program.h), so run() replays the recorded command buffer after
// rewriting the table. The contracts of run() are those of runtime/device.h.
#pragma once

#include <array>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/vulkan/context.h"
#include "backends/vulkan/shadow_access.h"
#include "ir/program.h"
#include "runtime/compiled_program.h"
#include "support/trace.h"
#include "runtime/device.h"
#include "support/trace.h"

namespace kiln::runtime::vk {

struct ExecutableOptions {
  int drop_barrier_step = -1;  // test hook (KILN_VULKAN_DROP_BARRIER): omit this step's barrier
  bool profile = false;        // timestamps around each dispatch, read after each run
  bool print_times = false;    // ... and printed (KILN_DEBUG=1 when the executable was made)
  // Runs of one executable in flight before run() waits for the oldest (KILN_VULKAN_IN_FLIGHT).
  // Few slots cap a pipelined loop at (GPU round trip / slots) per run.
  int max_in_flight = 64;
  // Order a run after earlier work by a leading pipeline barrier (earlier submissions on the one
  // queue are in its first scope) instead of a timeline-semaphore wait in the submission
  // (KILN_VULKAN_QUEUE_ORDER=0 restores the wait).
  bool queue_order = true;
  // Trips of a device loop per submission where the device has conditional rendering
  // (KILN_VULKAN_LOOP_BATCH; 1: one submission per trip).
  int loop_batch = 16;
};

class VulkanExecutable : public Executable {
 public:
  // `c` has passed check_consistent and was compiled for this device's target (Device::load
  // checks both). Internal when a kernel's launch shape is beyond the device's limits.
  static absl::StatusOr<std::unique_ptr<VulkanExecutable>> create(Device* owner, std::shared_ptr<Context> ctx,
                                                                  const CompiledProgram& c, ExecutableOptions o);
  ~VulkanExecutable() override;

  absl::Status run(const std::vector<Buffer*>& inputs, const std::vector<Buffer*>& outputs,
                   const ParamValues& params) override;
  int kernels_per_run() const override { return kernel_steps_; }  // a loop's body counts once
  // Another size of a symbolic dimension (runtime/device.h; resize.cc): new dispatch sizes and
  // memory plan for the same pipelines, every slot's command buffer recorded again after the runs
  // in flight. Straight-line programs only.
  bool resizable() const override { return kernel_steps_ == int(steps_.size()); }
  absl::Status resize(const CompiledProgram& c) override;

 private:
  // One replayable command buffer with its own address table, so a run never rewrites a table
  // the GPU may still read. Runs of one executable share the arena and are ordered on the GPU.
  struct Slot {
    VkCommandBuffer cb = VK_NULL_HANDLE;  // the whole program, or its first straight-line run
    std::vector<VkCommandBuffer> runs;    // a program with loops or branches: one per run
    Allocation flags;                     // ... and the flags its runs end with, read by the host
    std::vector<VkCommandBuffer> batches; // per batched loop: loop_batch trips of its body
    Allocation predicates;                // per batched loop: its condition as a 32-bit word
    Allocation table;  // a view into tables_ (not owned)
    VkQueryPool queries = VK_NULL_HANDLE;
    std::unique_ptr<ShadowSets> shadow;  // validation mode
    uint64_t value = 0;  // timeline value of its last submission
  };
  VulkanExecutable() = default;
  // Pipelines from the kernels' SPIR-V (checked structurally first: it may come from disk).
  absl::Status build_pipelines(const CompiledProgram& c);
  // Fills the zeroed intermediates (ir::BufferDesc::zeroed: chained kernels' tickets) of the new
  // arena with zeros, before the first run.
  absl::Status zero_arena_ranges();
  absl::StatusOr<Slot*> acquire_slot();  // mu_ held
  absl::Status prepare(Slot* s);           // command buffer, queries, shadow sets
  absl::Status record(Slot* s);
  // Records steps [begin, end) into cb; `flag` >= 0: then copies that buffer into flag_slot of
  // the slot's host-visible flags.
  void record_steps(Slot* s, VkCommandBuffer cb, size_t begin, size_t end, int flag, size_t flag_slot);
  // loop_batch trips of the loop whose head is step `head`, each under conditional rendering on
  // the loop's predicate word, which the flag is copied into after each trip (so the trips after
  // the condition fails dispatch nothing); then the flag for the host.
  void record_batch(Slot* s, VkCommandBuffer cb, size_t head, size_t word);
  // A program with loops and branches: the host walks the step list, submitting each straight-line
  // run's command buffer and reading the flag a marker tests after the run before it finishes.
  absl::Status run_structured(Slot* s, Stamp first);
  void print_profile(Slot* s);

  Device* owner_ = nullptr;
  std::shared_ptr<Context> ctx_;
  ExecutableOptions opts_;
  std::vector<ir::BufferDesc> buffers_;
  std::vector<ir::Step> steps_;
  int kernel_steps_ = 0;
  // Programs with control flow (ir/program.h): the straight-line runs [begin, end) of steps_,
  // and for each step the run starting there (-1 elsewhere).
  ir::BlockLinks links_;
  std::vector<std::pair<size_t, size_t>> runs_;
  std::vector<int> run_at_;
  // Loops run in batches: per step, the batch of the loop whose head it is (-1: none).
  std::vector<int> batch_at_;
  int num_batches_ = 0;
  int num_inputs_ = 0, num_outputs_ = 0;
  size_t num_params_ = 0;  // their values follow the buffer addresses in each table
  std::vector<VkPipeline> pipelines_;  // per kernel (a twin's is its family's first kernel's)
  // The pipelines this executable holds (shared with other executables of the same shaders).
  std::vector<std::shared_ptr<SharedPipeline>> pipeline_refs_;
  // Per kernel: the push constants of its dispatch (codegen/c_family/gpu_program.h): the table's
  // address is filled in when recording, then the table index of each binding.
  std::vector<std::vector<uint32_t>> pushed_ids_;
  std::vector<std::array<uint32_t, 3>> grids_;
  std::vector<uint64_t> binary_hash_;  // per kernel, of its SPIR-V (resize() takes the same shaders)
  std::vector<support::KernelRun> kernels_;  // per kernel: name and costs, for profiles
  support::Peaks peaks_;                     // for profiles (set when the first is taken)
  Allocation arena_;
  // Validation mode: the command buffer is re-recorded by each run with its shadow descriptor
  // sets bound to that run's buffers (see shadow_access.h); otherwise recorded once per slot.
  std::unique_ptr<ShadowPipelines> shadow_;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  std::mutex mu_;
  std::vector<std::unique_ptr<Slot>> slots_;
  Allocation tables_;               // the slots' address tables, table_stride_ bytes each
  VkDeviceSize table_stride_ = 0;
  uint64_t last_value_ = 0;  // last run (it used the arena)
  uint64_t arena_copy_after_ = 0;  // the arena's last upload, when it was a recycled upload target
  bool ran_once_ = false;    // mu_ held
};

}  // namespace kiln::runtime::vk

// The Metal replay unit: the program's MSL compiled once into a library at load (one compute
// pipeline per entry point, refused unless its SIMD-group width is the target's and it takes the
// kernel's threadgroup size), one arena for the intermediates (zeroed ranges cleared once), and
// an indirect command buffer encoded once with a concurrent-dispatch command per launched kernel
// step (launch_plan.h: step order, barriers only after dependencies). Kernels read their buffers'
// GPU addresses and their params from argument blocks in a shared-storage argument buffer, so
// run() rebinds inputs, outputs and params by rewriting 8-byte values on the CPU and re-encodes
// nothing: it writes the blocks, makes every buffer the kernels reach resident (useResource),
// executes the ICB in one compute pass and commits, without waiting (queue.h orders the runs).
// So that a run never rewrites blocks an earlier run may still read, each of up to kMaxSlots runs
// in flight has its own argument buffer and ICB; a further run waits for the oldest.
#pragma once

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/metal/launch_plan.h"
#include "backends/metal/metal_api.h"
#include "backends/metal/queue.h"
#include "ir/target_info.h"
#include "runtime/compiled_program.h"
#include "runtime/device.h"

namespace kiln::runtime::metal {

class MetalExecutable : public Executable {
 public:
  static constexpr size_t kMaxSlots = 8;

  // `c` passed check_consistent, has only kernel steps and was compiled for `target` (the
  // device's load checks all three). Internal with the compiler's log when the MSL does not
  // compile; Unimplemented or Internal naming the kernel when a pipeline does not fit its launch.
  static absl::StatusOr<std::unique_ptr<MetalExecutable>> create(Device* device, Id mtl_device, std::shared_ptr<Queue> queue,
                                                                 const ir::TargetInfo& target, const CompiledProgram& c);
  ~MetalExecutable() override;
  absl::Status run(const std::vector<Buffer*>& inputs, const std::vector<Buffer*>& outputs,
                   const ParamValues& params) override;
  int kernels_per_run() const override { return int(plan_.launches.size()); }

 private:
  // One run's argument buffer and the ICB whose commands read it.
  struct Slot {
    Id args = nullptr;
    uint64_t* blocks = nullptr;  // its CPU address
    Id icb = nullptr;
    uint64_t tick = 0;           // the last run that used it
  };
  MetalExecutable(Device* device, Id mtl_device, std::shared_ptr<Queue> queue)
      : device_(device), mtl_device_(mtl_device), queue_(std::move(queue)), api_(queue_->api()) {}
  absl::Status build(const ir::TargetInfo& target, const CompiledProgram& c);
  absl::Status build_pipelines(const ir::TargetInfo& target, const CompiledProgram& c);
  absl::Status build_arena(const CompiledProgram& c);
  absl::StatusOr<Slot*> acquire_slot();  // mu_ held
  absl::Status fill_slot(Slot* s);       // its argument buffer and encoded ICB
  absl::Status encode(Id command_buffer, const Slot& s, const std::vector<Buffer*>& inputs,
                      const std::vector<Buffer*>& outputs) const;

  Device* device_;
  Id mtl_device_;
  std::shared_ptr<Queue> queue_;
  const MetalApi& api_;
  Id library_ = nullptr;
  std::vector<Id> functions_, pipelines_;  // owned
  std::vector<Id> launch_pipeline_;        // per launch: one of pipelines_
  Id arena_ = nullptr;
  std::vector<ir::BufferDesc> buffers_;
  std::vector<CompiledKernel> kernels_;  // bindings and launch shapes (sources dropped)
  int num_inputs_ = 0, num_outputs_ = 0;
  size_t num_params_ = 0;
  LaunchPlan plan_;
  std::vector<uint64_t> addresses_;  // per program buffer: its GPU address in the latest run
  std::vector<std::unique_ptr<Slot>> slots_;
  uint64_t last_tick_ = 0;
  std::mutex mu_;  // runs share the arena and the slots: one run() at a time
};

}  // namespace kiln::runtime::metal

// The CPU Executable: a loaded CompiledProgram replayed as a task list. Steps run in order on the
// calling thread (loops and branches as jumps over the list); each kernel spreads its tiles over the thread pool when its work is large
// enough to pay for it. Each concurrent run gets an arena of its own (reused afterwards). A run
// is finished when run() returns.
#pragma once

#include <algorithm>
#include <memory>
#include <mutex>
#include <vector>

#include "backends/cpu/jit_linker.h"
#include "backends/cpu/thread_pool.h"
#include "runtime/device.h"

namespace kiln::runtime::cpu {

class CpuExecutable : public Executable {
 public:
  // Links `c.module` (CpuDevice::load has checked the target and check_consistent). Runs on
  // `pool`; binds only buffers of `device`.
  static absl::StatusOr<std::unique_ptr<Executable>> load(const CompiledProgram& c, Device* device, ThreadPool* pool);
  ~CpuExecutable() override;

  absl::Status run(const std::vector<Buffer*>& inputs, const std::vector<Buffer*>& outputs,
                   const ParamValues& params) override;
  // Kernel steps of one pass over the step list (a loop's body counts once).
  int kernels_per_run() const override {
    return int(std::count_if(steps_.begin(), steps_.end(), [](const ir::Step& s) { return s.is_kernel(); }));
  }
  // Another size of a symbolic dimension (runtime/device.h): new tile counts, buffers and arena
  // size for the same linked code.
  bool resizable() const override { return true; }
  absl::Status resize(const CompiledProgram& c) override;

 private:
  struct Kernel {
    KernelFn fn = nullptr;
    // Where each of its buffers, then each of its params, is in the run's argument array (its own
    // bindings, also when `fn` is a twin's: ir/kernel_twins.h).
    std::vector<int32_t> index;
    int64_t tiles = 0, work = 0;
    std::string name;  // for profiles
    int64_t bytes = 0, flops = 0;  // CompiledKernel's estimates (profiles)
    std::string computes;
  };
  CpuExecutable(const CompiledProgram& c, std::unique_ptr<LinkedObject> code, std::vector<Kernel> kernels,
                Device* device, ThreadPool* pool);
  // The kernels' argument array for one run: the host pointer of every buffer of the program, then
  // each param's 64-bit pattern; InvalidArgument on a wrong binding.
  absl::Status bind(const std::vector<Buffer*>& inputs, const std::vector<Buffer*>& outputs, const ParamValues& params,
                    char* arena, std::vector<char*>* ptrs) const;
  // A collective step (ir/program.h) on the run's buffers, through its group's Communicator.
  absl::Status run_collective(const ir::Step& s, char** bufs) const;
  void* take_arena();
  void give_arena(void* a);

  std::vector<ir::BufferDesc> buffers_;
  std::vector<ir::Step> steps_;
  ir::BlockLinks links_;  // of steps_' loops and branches
  int num_inputs_, num_outputs_;
  size_t num_params_;
  int64_t arena_bytes_;
  std::unique_ptr<LinkedObject> code_;
  uint64_t module_hash_ = 0;  // of the object the code was linked from (resize() takes the same)
  std::vector<Kernel> kernels_;  // parallel to CompiledProgram::kernels
  Device* device_;
  ThreadPool* pool_;
  std::mutex mu_;
  std::vector<void*> arenas_, free_;
};

}  // namespace kiln::runtime::cpu

// The HIP replay unit: the code object loaded once (hipModuleLoadData), one arena for the
// intermediates, and a HIP graph with a kernel node per step and edges only from the steps'
// dependencies, instantiated once. run() rebinds inputs and outputs by updating the parameters of
// the kernel nodes whose pointers changed (hipGraphExecKernelNodeSetParams, no re-instantiation),
// launches the graph on the device's stream and records an event, which a download of an output
// waits for. Where the runtime refuses module functions in graph nodes (some ROCm releases do),
// run() launches the kernels one by one in step order on the stream instead (hipModuleLaunchKernel:
// the stream orders them, so the results are the same).
#pragma once

#include <memory>
#include <mutex>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/hip/hip_api.h"
#include "backends/hip/memory.h"
#include "runtime/compiled_program.h"
#include "runtime/device.h"

namespace kiln::runtime::hip {

class HipExecutable : public Executable {
 public:
  static absl::StatusOr<std::unique_ptr<HipExecutable>> create(Device* device, const HipApi& api, hipStream_t stream,
                                                               const CompiledProgram& c);
  ~HipExecutable() override;
  absl::Status run(const std::vector<Buffer*>& inputs, const std::vector<Buffer*>& outputs,
                   const ParamValues& params) override;
  int kernels_per_run() const override { return int(nodes_.size()); }
  // Whether runs launch a HIP graph (false: kernel by kernel, see above).
  bool uses_graph() const { return exec_ != nullptr; }

 private:
  HipExecutable(Device* device, const HipApi& api, hipStream_t stream) : device_(device), api_(api), stream_(stream) {}
  absl::Status build(const CompiledProgram& c);
  absl::Status build_graph(const CompiledProgram& c);

  struct Node {
    hipGraphNode_t node = nullptr;
    hipFunction_t fn = nullptr;
    hipKernelNodeParams params{};
    std::vector<int> buffers;        // program buffer of each pointer parameter
    std::vector<void*> args;         // the pointers
    std::vector<uint64_t> values;    // the param slots it reads (after the pointers)
    std::vector<int> slots;          // the slot of each of `values`
    std::vector<void*> arg_ptrs;     // what kernelParams points to: &args[i], &values[j]
  };
  Device* device_;
  const HipApi& api_;
  hipStream_t stream_;
  hipModule_t module_ = nullptr;
  void* arena_ = nullptr;
  std::vector<ir::BufferDesc> buffers_;
  int num_inputs_ = 0, num_outputs_ = 0;
  size_t num_params_ = 0;
  std::vector<void*> bound_;  // per program buffer: its pointer at the last run
  std::vector<Node> nodes_;   // in step order
  hipGraph_t graph_ = nullptr;
  hipGraphExec_t exec_ = nullptr;
  std::shared_ptr<Event> done_;  // after the latest run
  std::mutex mu_;                // runs share the arena: one at a time
};

}  // namespace kiln::runtime::hip

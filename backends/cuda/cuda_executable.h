// The CUDA replay unit: one CUDA graph per Program, built explicitly (a kernel node per step,
// edges only from ir::Step::deps, so independent kernels may run concurrently) and instantiated
// once. run() rebinds inputs and outputs by updating the parameters of only the kernel nodes
// whose pointers changed (no re-instantiation), launches the graph on the device's stream and
// records an event; the host waits on that event only when a result is downloaded.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/program.h"
#include "backends/cuda/cuda_context.h"
#include "runtime/device.h"

namespace kiln::runtime::cuda {

// A loaded cubin; unloaded when the last executable using it goes.
class Module {
 public:
  static absl::StatusOr<std::shared_ptr<Module>> load(const std::string& cubin);
  explicit Module(CUmodule m) : m_(m) {}
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  absl::StatusOr<CUfunction> function(const std::string& name) const;

 private:
  CUmodule m_;
};

// One kernel of the module with its launch shape and parameters (ir::Program buffer ids).
struct LaunchSpec {
  std::string name;
  CUfunction fn = nullptr;
  std::vector<int> buffers;
  uint32_t grid[3] = {1, 1, 1};
  uint32_t block[3] = {1, 1, 1};
  uint32_t shared_bytes = 0;
  bool empty() const;  // a zero grid or block dimension: nothing to launch
};

class CudaExecutable : public Executable {
 public:
  // `kernels` is parallel to p.kernels. `sources` is what sources() returns (for dumps).
  static absl::StatusOr<std::unique_ptr<CudaExecutable>> create(Device* device, Context* ctx, const ir::Program& p,
                                                                std::shared_ptr<Module> module,
                                                                std::vector<LaunchSpec> kernels,
                                                                std::vector<std::string> sources);
  ~CudaExecutable() override;

  absl::Status run(const std::vector<Buffer*>& inputs, const std::vector<Buffer*>& outputs) override;
  int kernels_per_run() const override { return int(nodes_.size()); }
  std::vector<std::string> sources() const override { return sources_; }

 private:
  // A kernel node and the storage its parameters point into.
  struct Node {
    CUgraphNode node = nullptr;
    CUDA_KERNEL_NODE_PARAMS params{};
    std::vector<CUdeviceptr> args;  // one per parameter
    std::vector<void*> arg_ptrs;    // &args[i], what kernelParams points at
    std::vector<int> buffers;       // Program buffer id of each parameter
    bool bound_io = false;          // some parameter is an input or an output
  };

  CudaExecutable(Device* device, Context* ctx) : device_(device), ctx_(ctx) {}
  absl::Status build(const ir::Program& p, const std::vector<LaunchSpec>& kernels);
  // Points every input/output buffer id at its binding for this run; false when nothing changed.
  absl::Status bind(const std::vector<Buffer*>& inputs, const std::vector<Buffer*>& outputs, bool* changed);

  Device* device_;
  Context* ctx_;
  std::shared_ptr<Module> module_;
  std::vector<ir::BufferDesc> buffers_;
  int num_inputs_ = 0, num_outputs_ = 0;
  CUdeviceptr arena_ = 0;
  int64_t arena_size_ = 0;
  CUgraph graph_ = nullptr;
  CUgraphExec exec_ = nullptr;
  std::vector<Node> nodes_;
  std::shared_ptr<Event> done_;  // recorded after each launch
  bool launched_ = false;
  std::vector<std::string> sources_;

  std::mutex mu_;                       // concurrent run() calls
  std::vector<CUdeviceptr> bound_;      // per buffer id: the pointer the graph exec uses now
  std::vector<CUdeviceptr> next_;       // per buffer id: the pointer of this run (scratch)
};

}  // namespace kiln::runtime::cuda

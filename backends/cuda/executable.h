// The CUDA replay unit: one CUDA graph per CompiledProgram, built explicitly (a kernel node per
// step, edges only from the steps' dependencies, so independent kernels may run concurrently)
// and instantiated once (loops and branches: conditional nodes whose body graphs hold their
// steps, graph_build.cc). run() rebinds inputs and outputs by updating the parameters of only the
// kernel nodes whose pointers changed (no re-instantiation), launches the graph on the device's
// stream and records an event; the host waits on that event only when a result is downloaded.
//
// Built by CudaDevice::load (device.h) from a CompiledProgram that passed check_consistent: the
// plan is trusted here, only what depends on this GPU is checked (block size, grid limits,
// shared memory).
#pragma once

#include <cuda.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/cuda/context.h"
#include "backends/cuda/nccl.h"
#include "runtime/compiled_program.h"
#include "runtime/device.h"

namespace kiln::runtime::cuda {

// A loaded cubin; unloaded when the last executable using it goes.
class Module {
 public:
  // InvalidArgument when the driver does not take `cubin` (not a cubin, or for another GPU).
  static absl::StatusOr<std::shared_ptr<Module>> load(const std::string& cubin);
  explicit Module(CUmodule m) : m_(m) {}
  ~Module();
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  absl::StatusOr<CUfunction> function(const std::string& name) const;

 private:
  CUmodule m_;
};

inline constexpr uint32_t kDefaultSharedLimit = 48 * 1024;  // dynamic shared memory without opting in

// What a plan cannot know: the limits of this GPU (block and grid sizes, shared memory).
absl::Status check_launch(const CompiledKernel& k, const Context& ctx);

// Encodes a tensor map of `d` over the buffer at `base` (cuTensorMapEncodeTiled).
absl::Status encode_map(const TensorMapDesc& d, CUdeviceptr base, CUtensorMap* out);

class CudaExecutable : public Executable {
 public:
  // `c` must pass check_consistent; `module` holds each of c.kernels by name (null only when
  // there are no kernels). The context must be current.
  static absl::StatusOr<std::unique_ptr<CudaExecutable>> create(Device* device, Context* ctx, const CompiledProgram& c,
                                                                std::shared_ptr<Module> module);
  ~CudaExecutable() override;

  absl::Status run(const std::vector<Buffer*>& inputs, const std::vector<Buffer*>& outputs,
                   const ParamValues& params) override;
  int kernels_per_run() const override { return int(nodes_.size()); }
  bool resizable() const override { return !control_ && colls_.empty(); }
  absl::Status resize(const CompiledProgram& c) override;
  // The graph's kernels launched one at a time between timing events (as a profiled run).
  absl::StatusOr<std::vector<double>> kernel_times(const std::vector<Buffer*>& inputs, const std::vector<Buffer*>& outputs,
                                                   const ParamValues& params) override;

 private:
  // A kernel node and the storage its parameters point into.
  struct Node {
    CUgraphNode node = nullptr;
    CUDA_KERNEL_NODE_PARAMS params{};
    std::vector<CUdeviceptr> args;  // one per pointer parameter
    std::vector<uint64_t> values;   // one per param slot it reads (after the pointers)
    std::vector<int> slots;         // the param slot of each of `values`
    std::vector<CUtensorMap> maps;  // one per tensor map parameter (after the values)
    std::vector<TensorMapDesc> map_desc;
    std::vector<void*> arg_ptrs;    // &args[i], &values[j], &maps[k]: what kernelParams points at
    std::vector<int> buffers;       // buffer id of each pointer parameter
    bool bound_io = false;          // some parameter is an input or an output
  };

  // A collective step's child graph node (nccl.h): the NCCL call captured over `in` -> `out`.
  // The NCCL call captured over one (operand, result) pair of addresses.
  struct Captured {
    CUdeviceptr in = 0, out = 0;
    CUgraph graph = nullptr;
  };
  struct Coll {
    CUgraphNode node = nullptr;
    size_t step = 0;
    bool bound_io = false;  // reads an input or writes an output: captured again when they move
    // Captures over the addresses seen lately, least recently used first; back() is the one the
    // instantiated graph holds now (a copy of it). Fresh outputs come from a recycling pool, so
    // their addresses repeat and a step mostly swaps in a capture it has already made.
    std::vector<Captured> captures;
  };
  static constexpr size_t kMaxCaptures = 8;
  // Collectives' kernels run at the priority they were captured with (graph_build.cc).
  unsigned long long instantiate_flags() const { return colls_.empty() ? 0 : CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY; }

  // A gate kernel node (control_gates.h) and the storage of its parameters.
  struct Gate {
    CUgraphNode node = nullptr;
    CUDA_KERNEL_NODE_PARAMS params{};
    unsigned long long h1 = 0, h2 = 0;  // conditional handles
    CUdeviceptr flag = 0, trips = 0, status = 0;
    long long max_trips = 0;
    int first = 0, has_else = 0;
    std::vector<void*> ptrs;
  };
  // What building the graph reads of the program (build_range).
  struct Plan {
    const CompiledProgram* c;
    const std::vector<CUfunction>* functions;
    std::vector<uint32_t> grid_x;
    ir::BlockLinks links;
    int loops = 0;  // loops given trip counters so far
  };

  CudaExecutable(Device* device, Context* ctx) : device_(device), ctx_(ctx) {}
  absl::Status build(const CompiledProgram& c, const std::vector<CUfunction>& functions);
  // Fills the zeroed intermediates (chained kernels' tickets) of the arena with zeros, on the
  // stream (after the runs before).
  absl::Status zero_tickets();
  // The CUDA graph of `c` over bound_, instantiated.
  absl::Status build_graph(const CompiledProgram& c, const std::vector<CUfunction>& functions, std::vector<uint32_t> grid_x);
  // Adds steps [begin, end) to graph g after the nodes `frontier`; returns the nodes the steps
  // after them wait for. A loop or branch becomes a gate kernel and a conditional node whose
  // body graph gets its steps (control.cc).
  absl::StatusOr<std::vector<CUgraphNode>> build_range(CUgraph g, size_t begin, size_t end, std::vector<CUgraphNode> frontier,
                                                       Plan* plan);
  // The kernel node of step `i` after `deps`, or nullptr for a kernel with nothing to launch.
  absl::StatusOr<CUgraphNode> add_kernel(CUgraph g, size_t i, const std::vector<CUgraphNode>& deps, Plan* plan);
  absl::StatusOr<CUgraphNode> add_gate(CUgraph g, std::unique_ptr<Gate> gate, const std::vector<CUgraphNode>& deps);
  // The child graph node of collective step `i` after `deps` (graph_build.cc).
  absl::StatusOr<CUgraphNode> add_collective(CUgraph g, size_t i, const std::vector<CUgraphNode>& deps, Plan* plan);
  // The NCCL call of collective `c` over next_'s pointers, captured into a new graph.
  absl::StatusOr<CUgraph> capture_collective(const Coll& c, CUdeviceptr in, CUdeviceptr out);
  // After next_ changed: the collectives whose operand or result moved, captured again and
  // swapped into the instantiated graph. mu_ held.
  absl::Status rebind_collectives();
  // Persistent kernels (CompiledKernel::tiles > 0) that may run while a collective is in flight
  // (neither waits for the other) launch on the multiprocessors NCCL's blocks leave free.
  absl::Status leave_room_for_collectives(const CompiledProgram& c);
  // A conditional node of `type` on `handle` after `deps`; its body graph in *body.
  absl::StatusOr<CUgraphNode> add_conditional(CUgraph g, unsigned long long handle, CUgraphConditionalNodeType type,
                                              const std::vector<CUgraphNode>& deps, CUgraph* body);
  // After a launch of a program whose loops have trip limits: waits, and reports a loop that hit one.
  absl::Status check_trips();
  absl::StatusOr<uint32_t> resident_grid(const CompiledKernel& k, CUfunction f);
  // Points every input/output buffer id at its binding for this run; false when nothing changed.
  absl::Status bind(const std::vector<Buffer*>& inputs, const std::vector<Buffer*>& outputs, const ParamValues& params,
                    bool* changed);
  // run()'s first half: binds this run's buffers and param values into the instantiated graph,
  // updating only the nodes that changed. mu_ held.
  absl::Status update(const std::vector<Buffer*>& inputs, const std::vector<Buffer*>& outputs, const ParamValues& params);
  // run()'s last half: the tick that marks the outputs written.
  absl::Status finish_run(const std::vector<Buffer*>& outputs);
  // The graph's kernels launched one at a time between timing events, waited for: each node's
  // microseconds and how long before the last one's end it started.
  absl::Status launch_timed(std::vector<double>* node_us, std::vector<double>* before_end_us);
  // While a profile is on: launch_timed, each kernel traced as a span on the device's track
  // (support/trace.h).
  absl::Status launch_profiled();

  Device* device_;
  Context* ctx_;
  std::shared_ptr<Module> module_;
  std::vector<ir::BufferDesc> buffers_;
  int num_inputs_ = 0, num_outputs_ = 0, num_kernels_ = 0;
  ParamValues params_;  // the values the instantiated graph's nodes hold (zeros until a run)
  bool values_unknown_ = false;  // a failed update left nodes' values unknown: rewrite all next run
  bool resized_ = false;         // resize() changed launch shapes: every node gets new parameters next run
  uint64_t module_hash_ = 0;     // of the module's cubin (resize() takes programs of the same module)
  std::vector<ir::Step> program_steps_;  // the program's steps (resize() takes programs of the same steps)
  CUdeviceptr arena_ = 0;
  int64_t arena_size_ = 0;
  CUgraph graph_ = nullptr;
  CUgraphExec exec_ = nullptr;
  std::vector<Node> nodes_;
  // Collective steps (nccl.h): child graph nodes holding NCCL calls.
  std::vector<Coll> colls_;
  std::vector<std::pair<CUgraph, std::shared_ptr<Event>>> retired_;  // replaced captures, until that tick
  std::vector<ir::Step> steps_;   // the program's steps (a collective's attributes)
  std::vector<NcclComm> comms_;   // the communicators they use (each once)
  std::string collective_what_;   // "all_reduce(sum) on cuda:0" (the first collective), for errors
  int dist_timeout_s_ = 300;
  CUstream capture_stream_ = nullptr;
  // What build_graph needs when the graph waits for the first run's bindings (a collective over
  // an input or output).
  struct Deferred {
    CompiledProgram program;
    std::vector<CUfunction> functions;
    std::vector<uint32_t> grid_x;
  };
  std::unique_ptr<Deferred> deferred_;
  // Loops and branches (ir/program.h): conditional nodes steered by gate kernels.
  bool control_ = false;
  std::vector<std::unique_ptr<Gate>> gates_;
  CUfunction loop_gate_ = nullptr, branch_gate_ = nullptr;
  CUdeviceptr loop_state_ = 0;  // [status, the trip count of each loop]
  bool trip_limits_ = false;    // some loop has max_trips: run() checks the status after its launch
  // A driver that refuses to update a kernel node inside a conditional body in the instantiated
  // graph: rebinding sets the graph's own nodes and instantiates it again.
  bool reinstantiate_ = false;
  std::shared_ptr<Event> done_;  // the compute tick after the latest launch (Context::tick)
  std::vector<support::KernelRun> node_info_;            // per node: name and costs (profiles)
  std::vector<std::shared_ptr<Event>> profile_events_;   // two per node, made by the first profiled run
  bool launched_ = false;

  std::mutex mu_;                       // concurrent run() calls
  std::vector<CUdeviceptr> bound_;      // per buffer id: the pointer the graph exec uses now
  std::vector<CUdeviceptr> next_;       // per buffer id: the pointer of this run (scratch)
};

}  // namespace kiln::runtime::cuda

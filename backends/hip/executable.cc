// The HIP executable (executable.h).
#include "backends/hip/executable.h"
#include "backends/hip/compiler.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "runtime/bindings.h"
#include "runtime/stats.h"

namespace kiln::runtime::hip {

absl::StatusOr<std::unique_ptr<HipExecutable>> HipExecutable::create(Device* device, const HipApi& api, hipStream_t stream,
                                                                     const CompiledProgram& c) {
  std::unique_ptr<HipExecutable> e(new HipExecutable(device, api, stream));
  if (absl::Status s = e->build(c); !s.ok()) return s;
  return e;
}

absl::Status HipExecutable::build(const CompiledProgram& c) {
  buffers_ = c.buffers;
  num_inputs_ = c.num_inputs;
  num_outputs_ = c.num_outputs;
  num_params_ = c.params.size();
  if (!c.kernels.empty())
    if (absl::Status s = hip_check(api_, api_.hipModuleLoadData(&module_, c.module.data()), "loading the code object (hipModuleLoadData)");
        !s.ok())
      return absl::Status(s.code(), absl::StrCat(s.message(), " (is it for this GPU's processor?)"));
  if (c.arena_bytes > 0) {
    if (absl::Status s = hip_check(api_, api_.hipMalloc(&arena_, size_t(c.arena_bytes)), "allocating the arena (hipMalloc)"); !s.ok())
      return s;
    counters().bytes_allocated += c.arena_bytes;
  }
  bound_.assign(buffers_.size(), nullptr);
  for (size_t i = 0; i < buffers_.size(); ++i)
    if (buffers_[i].kind == ir::BufferKind::kIntermediate) bound_[i] = static_cast<char*>(arena_) + buffers_[i].offset;
  // Zeroed intermediates (a chained kernel's tickets) start at zero; the kernels keep them so.
  for (const ir::BufferDesc& b : buffers_)
    if (b.zeroed && b.bytes() > 0)
      if (absl::Status s = hip_check(api_, api_.hipMemset(static_cast<char*>(arena_) + b.offset, 0, size_t(b.bytes())),
                                     "zeroing a chained kernel's tickets (hipMemset)");
          !s.ok())
        return s;
  for (const ir::Step& step : c.steps) {
    if (!step.is_kernel()) return absl::UnimplementedError(kHipNoControl);
    const CompiledKernel& k = c.kernels[size_t(step.kernel)];
    if (k.launches_nothing()) continue;
    Node n;
    if (absl::Status s = hip_check(api_, api_.hipModuleGetFunction(&n.fn, module_, c.entry(size_t(step.kernel)).c_str()),
                                   absl::StrCat("finding kernel ", c.entry(size_t(step.kernel)), " in the code object"));
        !s.ok())
      return s;
    n.buffers = k.buffers;
    for (int b : k.buffers) n.args.push_back(bound_[size_t(b)]);
    n.slots = k.params;
    n.values.assign(k.params.size(), 0);
    for (void*& a : n.args) n.arg_ptrs.push_back(&a);
    for (uint64_t& v : n.values) n.arg_ptrs.push_back(&v);
    n.params.func = reinterpret_cast<void*>(n.fn);
    n.params.gridDim = dim3(k.grid[0], k.grid[1], k.grid[2]);
    n.params.blockDim = dim3(k.block[0], k.block[1], k.block[2]);
    n.params.sharedMemBytes = k.shared_bytes;
    n.params.kernelParams = n.arg_ptrs.empty() ? nullptr : n.arg_ptrs.data();
    n.params.extra = nullptr;
    nodes_.push_back(std::move(n));  // moving keeps args / arg_ptrs' heap storage where it is
  }
  // Without the graph, runs launch kernel by kernel (executable.h); a graph the runtime refuses
  // is dropped, never half-built.
  if (!nodes_.empty() && !build_graph(c).ok()) {
    if (exec_) (void)api_.hipGraphExecDestroy(exec_);
    if (graph_) (void)api_.hipGraphDestroy(graph_);
    exec_ = nullptr;
    graph_ = nullptr;
  }
  return absl::OkStatus();
}

absl::Status HipExecutable::build_graph(const CompiledProgram& c) {
  if (absl::Status s = hip_check(api_, api_.hipGraphCreate(&graph_, 0), "hipGraphCreate"); !s.ok()) return s;
  // Each step's node, or for a step with nothing to launch, the nodes it waited for.
  std::vector<std::vector<hipGraphNode_t>> after(c.steps.size());
  size_t next = 0;
  for (size_t i = 0; i < c.steps.size(); ++i) {
    const ir::Step& step = c.steps[i];
    std::vector<hipGraphNode_t> deps;
    for (int d : step.deps) deps.insert(deps.end(), after[size_t(d)].begin(), after[size_t(d)].end());
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    if (c.kernels[size_t(step.kernel)].launches_nothing()) {
      after[i] = std::move(deps);
      continue;
    }
    Node& n = nodes_[next++];
    if (absl::Status s = hip_check(api_, api_.hipGraphAddKernelNode(&n.node, graph_, deps.empty() ? nullptr : deps.data(),
                                                                    deps.size(), &n.params),
                                   "hipGraphAddKernelNode");
        !s.ok())
      return s;
    after[i] = {n.node};
  }
  return hip_check(api_, api_.hipGraphInstantiate(&exec_, graph_, nullptr, nullptr, 0), "hipGraphInstantiate");
}

HipExecutable::~HipExecutable() {
  if (done_) (void)done_->wait();  // launches in flight still use the arena and the module
  if (exec_) (void)api_.hipGraphExecDestroy(exec_);
  if (graph_) (void)api_.hipGraphDestroy(graph_);
  if (arena_) (void)api_.hipFree(arena_);
  if (module_) (void)api_.hipModuleUnload(module_);
}

absl::Status HipExecutable::run(const std::vector<Buffer*>& inputs, const std::vector<Buffer*>& outputs,
                                const ParamValues& params) {
  if (absl::Status s = check_bindings("hip", device_, buffers_, num_inputs_, num_outputs_, inputs, outputs, num_params_, params);
      !s.ok())
    return s;
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < buffers_.size(); ++i) {
    const ir::BufferDesc& b = buffers_[i];
    if (b.kind == ir::BufferKind::kIntermediate) continue;
    Buffer* buf = b.kind == ir::BufferKind::kInput ? inputs[size_t(b.index)] : outputs[size_t(b.index)];
    bound_[i] = static_cast<HipBuffer*>(buf)->ptr();
  }
  for (Node& n : nodes_) {
    bool dirty = false;
    for (size_t a = 0; a < n.buffers.size(); ++a) {
      void* p = bound_[size_t(n.buffers[a])];
      dirty |= n.args[a] != p;
      n.args[a] = p;
    }
    for (size_t v = 0; v < n.slots.size(); ++v) {
      dirty |= n.values[v] != params[size_t(n.slots[v])];
      n.values[v] = params[size_t(n.slots[v])];
    }
    if (dirty && exec_)
      if (absl::Status s = hip_check(api_, api_.hipGraphExecKernelNodeSetParams(exec_, n.node, &n.params),
                                     "rebinding a kernel of the HIP graph (hipGraphExecKernelNodeSetParams)");
          !s.ok()) {
        std::fill(n.args.begin(), n.args.end(), nullptr);  // unknown now: rebind next time
        std::fill(n.values.begin(), n.values.end(), ~uint64_t(0));
        return s;
      }
  }
  if (exec_) {
    if (absl::Status s = hip_check(api_, api_.hipGraphLaunch(exec_, stream_), "hipGraphLaunch"); !s.ok()) return s;
  } else {
    for (Node& n : nodes_) {
      const hipKernelNodeParams& p = n.params;
      if (absl::Status s = hip_check(api_, api_.hipModuleLaunchKernel(n.fn, p.gridDim.x, p.gridDim.y, p.gridDim.z, p.blockDim.x,
                                                                      p.blockDim.y, p.blockDim.z, p.sharedMemBytes, stream_,
                                                                      n.arg_ptrs.empty() ? nullptr : n.arg_ptrs.data(), nullptr),
                                     "hipModuleLaunchKernel");
          !s.ok())
        return s;
    }
  }
  auto done = Event::record(api_, stream_);
  if (!done.ok()) return done.status();
  done_ = *std::move(done);
  for (Buffer* b : outputs) static_cast<HipBuffer*>(b)->writer = done_;
  return absl::OkStatus();
}

}  // namespace kiln::runtime::hip

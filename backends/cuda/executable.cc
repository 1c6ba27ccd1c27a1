// The CUDA graph of a CompiledProgram (executable.h): load-time device checks, graph building,
// rebinding and launch.
#include "backends/cuda/executable.h"

#include <algorithm>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "runtime/bindings.h"
#include "runtime/disk_cache.h"
#include "backends/cuda/control_gates.h"
#include "backends/cuda/nccl.h"
#include "backends/cuda/driver_api.h"
#include "runtime/stats.h"
#include "support/options.h"
#include "support/trace.h"

namespace kiln::runtime::cuda {

absl::Status check_launch(const CompiledKernel& k, const Context& ctx) {
  if (k.launches_nothing()) return absl::OkStatus();
  auto where = [&] { return absl::StrCat("cuda: kernel ", k.name, " "); };
  const uint64_t threads = uint64_t(k.block[0]) * k.block[1] * k.block[2];
  if (threads > 1024 || k.block[2] > 64)
    return absl::InternalError(absl::StrCat(where(), "has block ", k.block[0], "x", k.block[1], "x", k.block[2],
                                            " (at most 1024 threads, z at most 64)"));
  for (int i = 0; i < 3; ++i)
    if (ctx.max_grid[i] > 0 && k.grid[i] > uint32_t(ctx.max_grid[i]))
      return absl::InternalError(absl::StrCat(where(), "has grid ", k.grid[0], "x", k.grid[1], "x", k.grid[2],
                                              " beyond the device's limit"));
  if (k.shared_bytes > ctx.shared_optin)
    return absl::FailedPreconditionError(absl::StrCat(where(), "needs ", k.shared_bytes,
                                                      " bytes of shared memory; the device has ", ctx.shared_optin,
                                                      " (compiled for a target with more)"));
  return absl::OkStatus();
}

// Encodes a tensor map of `d` over the buffer at `base`.
absl::Status encode_map(const TensorMapDesc& d, CUdeviceptr base, CUtensorMap* out) {
  cuuint64_t dims[5] = {}, strides[4] = {};
  cuuint32_t box[5] = {}, elem[5] = {};
  const size_t rank = d.dims.size();
  for (size_t i = 0; i < rank; ++i) {
    dims[i] = cuuint64_t(d.dims[i]);
    box[i] = d.box[i];
    elem[i] = 1;
  }
  const cuuint64_t eb = d.type == TensorMapDesc::kFloat32 ? 4 : 2;
  for (size_t i = 0; i + 1 < rank; ++i) strides[i] = cuuint64_t(d.strides[i]) * eb;
  CUtensorMapSwizzle sw = d.swizzle == 128  ? CU_TENSOR_MAP_SWIZZLE_128B
                          : d.swizzle == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
                          : d.swizzle == 32 ? CU_TENSOR_MAP_SWIZZLE_32B
                                            : CU_TENSOR_MAP_SWIZZLE_NONE;
  void* addr = reinterpret_cast<void*>(base + CUdeviceptr(d.offset) * eb);
  const CUtensorMapDataType type = d.type == TensorMapDesc::kFloat32    ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
                                   : d.type == TensorMapDesc::kBFloat16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                                        : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
  CUresult r = api().cuTensorMapEncodeTiled(out, type,
                                            cuuint32_t(rank), addr, dims, strides, box, elem,
                                            CU_TENSOR_MAP_INTERLEAVE_NONE, sw, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                                            CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  return cu_check(r, "encoding a tensor map (cuTensorMapEncodeTiled)");
}

absl::StatusOr<std::shared_ptr<Module>> Module::load(const std::string& cubin) {
  CUmodule m = nullptr;
  if (absl::Status s = cu_check(api().cuModuleLoadData(&m, cubin.data()), "loading the compiled kernels (cuModuleLoadData)");
      !s.ok())
    return s;
  return std::make_shared<Module>(m);
}

Module::~Module() {
  if (!process_exiting()) api().cuModuleUnload(m_);
}

absl::StatusOr<CUfunction> Module::function(const std::string& name) const {
  CUfunction f = nullptr;
  CUresult r = api().cuModuleGetFunction(&f, m_, name.c_str());
  if (r == CUDA_ERROR_NOT_FOUND)
    return absl::InternalError(absl::StrCat("cuda: kernel '", name, "' is not in the compiled module"));
  if (absl::Status s = cu_check(r, absl::StrCat("cuModuleGetFunction(", name, ")")); !s.ok()) return s;
  return f;
}

absl::StatusOr<std::unique_ptr<CudaExecutable>> CudaExecutable::create(Device* device, Context* ctx,
                                                                       const CompiledProgram& c,
                                                                       std::shared_ptr<Module> module) {
  if (!c.kernels.empty() && !module)
    return absl::InvalidArgumentError(absl::StrCat("cuda: a program of ", c.kernels.size(), " kernels without a module"));
  std::vector<CUfunction> functions;
  for (size_t i = 0; i < c.kernels.size(); ++i) {
    const CompiledKernel& k = c.kernels[i];
    if (absl::Status s = check_launch(k, *ctx); !s.ok()) return s;
    auto fn = module->function(c.entry(i));
    if (!fn.ok()) return fn.status();
    functions.push_back(*fn);
  }
  std::unique_ptr<CudaExecutable> e(new CudaExecutable(device, ctx));
  bool collectives = false;
  int depth = 0;  // loops and branches around the step
  for (const ir::Step& s : c.steps) {
    if (s.is_marker()) e->control_ = true;
    if (s.kind == ir::StepKind::kWhile || s.kind == ir::StepKind::kIf) ++depth;
    if (s.kind == ir::StepKind::kEnd) --depth;
    if (s.is_collective()) collectives = true;
    // CUDA refuses to instantiate a graph whose conditional body holds NCCL's captured work.
    if (s.is_collective() && depth > 0)
      return absl::UnimplementedError(absl::StrCat(
          "cuda: ", ir::describe(s.collective),
          " inside a device loop or branch (while_loop / cond): NCCL's captured work cannot run inside a CUDA "
          "conditional node; keep the collective outside the loop (a loop of realizes on the host), or run on the cpu device"));
  }
  if (collectives) {
    if (absl::Status s = check_ranks_agree(c.steps, c.buffers); !s.ok()) return s;
    e->dist_timeout_s_ = support::options().dist_timeout_s;
  }
  if (e->control_) {
    auto loop = module->function(kLoopGate);
    auto branch = module->function(kBranchGate);
    if (!loop.ok() || !branch.ok())
      return absl::InvalidArgumentError("cuda: a program with loops or branches whose module lacks their gate kernels: compile it again");
    e->loop_gate_ = *loop;
    e->branch_gate_ = *branch;
  }
  e->module_ = std::move(module);
  e->module_hash_ = stable_hash64(c.module);
  e->program_steps_ = c.steps;
  if (absl::Status s = e->build(c, functions); !s.ok()) return s;
  return e;
}

// A kernel with compile-time cluster dims walks its tiles in a loop over clusters
// (codegen/c_family/gpu_program.h): it launches only as many clusters as can be resident at once,
// since clusters beyond that would start only after a resident one had done all its work.
absl::StatusOr<uint32_t> CudaExecutable::resident_grid(const CompiledKernel& k, CUfunction f) {
  if (k.launches_nothing()) return k.grid[0];
  int width = 0;
  if (absl::Status s = cu_check(api().cuFuncGetAttribute(&width, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, f),
                                absl::StrCat("reading the cluster width of ", k.name));
      !s.ok())
    return s;
  if (width <= 1) return k.grid[0];
  CUlaunchConfig cfg{};
  cfg.gridDimX = k.grid[0];
  cfg.gridDimY = k.grid[1];
  cfg.gridDimZ = k.grid[2];
  cfg.blockDimX = k.block[0];
  cfg.blockDimY = k.block[1];
  cfg.blockDimZ = k.block[2];
  cfg.sharedMemBytes = k.shared_bytes;
  int clusters = 0;
  if (absl::Status s = cu_check(api().cuOccupancyMaxActiveClusters(&clusters, f, &cfg),
                                absl::StrCat("asking how many clusters of ", k.name, " fit"));
      !s.ok())
    return s;
  if (clusters < 1)
    return absl::FailedPreconditionError(absl::StrCat(k.name, ": no cluster of ", width, " blocks fits on this GPU"));
  const uint32_t grid = std::min<uint32_t>(k.grid[0], uint32_t(clusters) * uint32_t(width));
  if (support::debug_level() >= 1 && grid != k.grid[0])
    std::fprintf(stderr, "kiln: %s: %d clusters of %d resident at once: grid %u instead of %u\n", k.name.c_str(), clusters,
                 width, grid, k.grid[0]);
  return grid;
}

absl::Status CudaExecutable::build(const CompiledProgram& c, const std::vector<CUfunction>& functions) {
  buffers_ = c.buffers;
  num_inputs_ = c.num_inputs;
  num_outputs_ = c.num_outputs;
  num_kernels_ = int(c.kernels.size());
  params_.assign(c.params.size(), 0);
  if (absl::Status s = ctx_->make_current(); !s.ok()) return s;

  // The arena holds every intermediate at its planned offset; its pointers never change.
  if (c.arena_bytes > 0) {
    auto a = ctx_->pool->allocate(c.arena_bytes, &arena_size_);
    if (!a.ok()) return a.status();
    arena_ = *a;
    counters().bytes_allocated += c.arena_bytes;
  }
  bound_.assign(buffers_.size(), 0);
  next_.assign(buffers_.size(), 0);
  for (size_t i = 0; i < buffers_.size(); ++i)
    if (buffers_[i].kind == ir::BufferKind::kIntermediate) bound_[i] = next_[i] = arena_ + CUdeviceptr(buffers_[i].offset);
  // Zeroed intermediates (a chained kernel's tickets) start at zero; the kernels keep them so.
  if (absl::Status s = zero_tickets(); !s.ok()) return s;

  for (size_t i = 0; i < c.kernels.size(); ++i) {
    const CompiledKernel& k = c.kernels[i];
    if (k.shared_bytes > kDefaultSharedLimit && !k.launches_nothing()) {
      CUresult r = api().cuFuncSetAttribute(functions[i], CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES,
                                            int(k.shared_bytes));
      if (absl::Status s = cu_check(r, absl::StrCat("raising the shared memory limit of ", k.name)); !s.ok()) return s;
    }
  }
  std::vector<uint32_t> grid_x(c.kernels.size());
  for (size_t i = 0; i < c.kernels.size(); ++i) {
    auto g = resident_grid(c.kernels[i], functions[i]);
    if (!g.ok()) return g.status();
    grid_x[i] = *g;
  }

  // A collective over an input or output is captured with that buffer's address (NCCL keeps it
  // in its work descriptors and may register it with its peers): then the graph is built by the
  // first run, over its bindings.
  for (const ir::Step& s : c.steps)
    if (s.is_collective() && ir::collective_touches_io(s, buffers_)) {
      deferred_ = std::make_unique<Deferred>();
      deferred_->program = c;
      deferred_->program.module.clear();  // (the module is loaded already)
      deferred_->program.portable_module.clear();
      deferred_->functions = functions;
      deferred_->grid_x = std::move(grid_x);
      return absl::OkStatus();
    }
  return build_graph(c, functions, std::move(grid_x));
}

absl::Status CudaExecutable::zero_tickets() {
  for (const ir::BufferDesc& b : buffers_)
    if (b.zeroed && b.bytes() > 0)
      if (absl::Status s = cu_check(api().cuMemsetD8Async(arena_ + CUdeviceptr(b.offset), 0, size_t(b.bytes()), ctx_->stream),
                                    "zeroing a chained kernel's tickets");
          !s.ok())
        return s;
  return absl::OkStatus();
}

absl::Status CudaExecutable::build_graph(const CompiledProgram& c, const std::vector<CUfunction>& functions,
                                         std::vector<uint32_t> grid_x) {
  if (absl::Status s = cu_check(api().cuGraphCreate(&graph_, 0), "cuGraphCreate"); !s.ok()) return s;
  Plan plan{&c, &functions, std::move(grid_x), ir::block_links(c.steps), 0};
  if (control_) {
    int loops = 0;
    for (const ir::Step& s : c.steps) {
      loops += s.kind == ir::StepKind::kWhile;
      trip_limits_ = trip_limits_ || s.max_trips > 0;
    }
    const size_t bytes = sizeof(uint64_t) * size_t(loops + 1);
    if (absl::Status s = cu_check(api().cuMemAlloc(&loop_state_, bytes), "allocating the loops' trip counters"); !s.ok()) return s;
    if (absl::Status s = cu_check(api().cuMemsetD8Async(loop_state_, 0, bytes, ctx_->stream), "zeroing the trip counters"); !s.ok())
      return s;
  }
  auto built = build_range(graph_, 0, c.steps.size(), {}, &plan);
  if (!built.ok()) return built.status();
  if (!colls_.empty() && !control_)
    if (absl::Status s = leave_room_for_collectives(c); !s.ok()) return s;
  if (!nodes_.empty() || control_ || !colls_.empty()) {
    if (absl::Status s = cu_check(api().cuGraphInstantiateWithFlags(&exec_, graph_, instantiate_flags()), "instantiating the CUDA graph");
        !s.ok())
      return s;
  }
  return absl::OkStatus();
}

CudaExecutable::~CudaExecutable() {
  if (process_exiting()) return;  // the process teardown frees it all
  (void)ctx_->make_current();
  if (launched_) (void)done_->wait();  // launches in flight still use the arena and the module
  if (exec_) api().cuGraphExecDestroy(exec_);
  for (Coll& c : colls_)
    for (Captured& k : c.captures) api().cuGraphDestroy(k.graph);
  for (auto& [g, after] : retired_) api().cuGraphDestroy(g);
  if (capture_stream_) api().cuStreamDestroy(capture_stream_);
  if (graph_) api().cuGraphDestroy(graph_);
  if (loop_state_) api().cuMemFree(loop_state_);
  if (arena_) ctx_->pool->release(arena_, arena_size_);
}

absl::Status CudaExecutable::bind(const std::vector<Buffer*>& inputs, const std::vector<Buffer*>& outputs,
                                  const ParamValues& params, bool* changed) {
  if (absl::Status s = check_bindings("cuda", device_, buffers_, num_inputs_, num_outputs_, inputs, outputs,
                                      params_.size(), params);
      !s.ok())
    return s;
  *changed = false;
  for (size_t i = 0; i < buffers_.size(); ++i) {
    const ir::BufferDesc& b = buffers_[i];
    if (b.kind == ir::BufferKind::kIntermediate) continue;
    Buffer* buf = b.kind == ir::BufferKind::kInput ? inputs[size_t(b.index)] : outputs[size_t(b.index)];
    if (b.kind == ir::BufferKind::kInput)
      if (const auto& o = static_cast<CudaBuffer*>(buf)->collectives)
        if (absl::Status s = o->get(); !s.ok()) return s;  // written by a run whose collectives failed
    // An input uploaded on the copy stream: the kernels wait for its copy (once per buffer).
    if (absl::Status s = static_cast<CudaBuffer*>(buf)->make_compute_wait(ctx_->stream); !s.ok()) return s;
    next_[i] = static_cast<CudaBuffer*>(buf)->ptr();
    *changed |= next_[i] != bound_[i];
  }
  return absl::OkStatus();
}

absl::Status CudaExecutable::update(const std::vector<Buffer*>& inputs, const std::vector<Buffer*>& outputs,
                                    const ParamValues& params) {
  if (absl::Status s = ctx_->make_current(); !s.ok()) return s;
  bool changed = false;
  if (absl::Status s = bind(inputs, outputs, params, &changed); !s.ok()) return s;
  if (deferred_) {  // the first run: the graph is built over these bindings
    bound_ = next_;
    const std::unique_ptr<Deferred> d = std::move(deferred_);
    if (absl::Status s = build_graph(d->program, d->functions, d->grid_x); !s.ok()) return s;
    changed = false;
  }
  const bool new_values = values_unknown_ || params != params_;
  bool rebuilt = !exec_ && (!nodes_.empty() || control_ || !colls_.empty());  // a failed re-instantiation: try again
  if (changed || new_values || rebuilt) {
    // Only nodes whose pointers moved or whose param values changed get new parameters; launches
    // already queued keep theirs.
    for (Node& n : nodes_) {
      bool dirty = resized_;  // resize() gave it new launch shapes
      if (new_values)
        for (size_t v = 0; v < n.slots.size(); ++v) {
          dirty |= values_unknown_ || n.values[v] != params[size_t(n.slots[v])];
          n.values[v] = params[size_t(n.slots[v])];
        }
      if (changed && n.bound_io) {
        for (size_t a = 0; a < n.buffers.size(); ++a) {
          CUdeviceptr p = next_[size_t(n.buffers[a])];
          dirty |= n.args[a] != p;
          n.args[a] = p;
        }
        for (const TensorMapDesc& m : n.map_desc) dirty |= next_[size_t(m.buffer)] != bound_[size_t(m.buffer)];
      }
      if (!dirty) continue;
      for (size_t m = 0; m < n.maps.size(); ++m) {
        if (absl::Status s = encode_map(n.map_desc[m], next_[size_t(n.map_desc[m].buffer)], &n.maps[m]); !s.ok()) {
          std::fill(n.args.begin(), n.args.end(), CUdeviceptr(0));
          std::fill(bound_.begin(), bound_.end(), CUdeviceptr(0));
          values_unknown_ = true;
          return s;
        }
      }
      CUresult r = CUDA_ERROR_NOT_SUPPORTED;
      if (!reinstantiate_) r = api().cuGraphExecKernelNodeSetParams(exec_, n.node, &n.params);
      if (r != CUDA_SUCCESS && control_) {
        // A node inside a conditional body: set it in the graph, instantiated again below.
        reinstantiate_ = true;
        r = api().cuGraphKernelNodeSetParams(n.node, &n.params);
        rebuilt = true;
      }
      if (r != CUDA_SUCCESS) {
        std::fill(n.args.begin(), n.args.end(), CUdeviceptr(0));  // unknown now: rebind next time
        std::fill(bound_.begin(), bound_.end(), CUdeviceptr(0));
        values_unknown_ = true;
        return cu_error(r, "rebinding a kernel of the CUDA graph (cuGraphExecKernelNodeSetParams)");
      }
    }
    if (rebuilt) {
      // Nodes updated in the instantiated graph before the refusal hold their new parameters
      // only there: every node's are set in the graph before it is instantiated again.
      for (Node& n : nodes_) {
        if (absl::Status s = cu_check(api().cuGraphKernelNodeSetParams(n.node, &n.params), "rebinding a kernel of the CUDA graph");
            !s.ok()) {
          values_unknown_ = true;
          return s;
        }
      }
      // The launches in flight still run the old instantiation: let them finish first.
      if (launched_)
        if (absl::Status s = done_->wait(); !s.ok()) return s;
      if (exec_) api().cuGraphExecDestroy(exec_);
      exec_ = nullptr;
      if (absl::Status s = cu_check(api().cuGraphInstantiateWithFlags(&exec_, graph_, instantiate_flags()), "instantiating the CUDA graph again");
          !s.ok()) {
        values_unknown_ = true;
        return s;
      }
    }
    if (changed)
      if (absl::Status s = rebind_collectives(); !s.ok()) {
        values_unknown_ = true;
        std::fill(bound_.begin(), bound_.end(), CUdeviceptr(0));
        return s;
      }
    bound_ = next_;  // same size: no allocation
    params_ = params;
    values_unknown_ = false;
    resized_ = false;
  }
  return absl::OkStatus();
}

absl::Status CudaExecutable::run(const std::vector<Buffer*>& inputs, const std::vector<Buffer*>& outputs,
                                 const ParamValues& params) {
  std::lock_guard<std::mutex> lock(mu_);
  // (a communicator aborted after a timeout: its collectives would return at once, wrong; or
  // released with its group)
  for (const NcclComm& comm : comms_)
    if (absl::Status s = comm_status(*comm); !s.ok()) return s;
  {
    support::TraceSpan span("bind (cuda)");
    if (absl::Status s = update(inputs, outputs, params); !s.ok()) return s;
  }
  if (exec_ && support::tracing() && !control_ && colls_.empty()) {
    if (absl::Status s = launch_profiled(); !s.ok()) return s;
  } else if (exec_) {
    support::TraceSpan span("cuGraphLaunch");
    if (absl::Status s = cu_check(api().cuGraphLaunch(exec_, ctx_->stream), "cuGraphLaunch"); !s.ok()) return s;
  }
  {
    support::TraceSpan span("after the launch (cuda)");
    if (absl::Status s = finish_run(outputs); !s.ok()) return s;
  }
  return trip_limits_ ? check_trips() : absl::OkStatus();
}

absl::StatusOr<std::vector<double>> CudaExecutable::kernel_times(const std::vector<Buffer*>& inputs,
                                                                 const std::vector<Buffer*>& outputs,
                                                                 const ParamValues& params) {
  std::lock_guard<std::mutex> lock(mu_);
  if (control_)
    return absl::UnimplementedError("cuda: per-kernel times of a program with loops or branches (its kernels run a data-dependent number of times)");
  if (absl::Status s = update(inputs, outputs, params); !s.ok()) return s;
  std::vector<double> per_kernel(size_t(num_kernels_), 0.0), node_us, before_end_us;
  if (exec_) {
    if (absl::Status s = launch_timed(&node_us, &before_end_us); !s.ok()) return s;
    for (size_t i = 0; i < nodes_.size(); ++i) per_kernel[size_t(node_info_[i].kernel)] += node_us[i];
  }
  if (absl::Status s = finish_run(outputs); !s.ok()) return s;
  return per_kernel;
}

absl::Status CudaExecutable::finish_run(const std::vector<Buffer*>& outputs) {
  auto tick = ctx_->tick();  // the outputs are written when it completes
  if (!tick.ok()) return tick.status();
  done_ = *std::move(tick);
  launched_ = true;
  std::shared_ptr<CollectiveOutcome> outcome;
  if (!comms_.empty()) {
    outcome = std::make_shared<CollectiveOutcome>();
    for (const NcclComm& comm : comms_) outcome->comms.push_back(comm->health);
    watch(comms_, done_, outcome, collective_what_, dist_timeout_s_);
  }
  for (int i = 0; i < num_outputs_; ++i) {
    auto* b = static_cast<CudaBuffer*>(outputs[size_t(i)]);
    b->writer = done_;
    b->collectives = outcome;
  }
  return absl::OkStatus();
}

absl::Status CudaExecutable::launch_timed(std::vector<double>* node_us, std::vector<double>* before_end_us) {
  node_us->clear();
  before_end_us->clear();
  if (nodes_.empty()) return absl::OkStatus();
  while (profile_events_.size() < 2 * nodes_.size()) {
    auto e = Event::create(/*timing=*/true);
    if (!e.ok()) return e.status();
    profile_events_.push_back(*std::move(e));
  }
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const CUDA_KERNEL_NODE_PARAMS& p = nodes_[i].params;
    if (absl::Status s = profile_events_[2 * i]->record(ctx_->stream); !s.ok()) return s;
    CUresult r = api().cuLaunchKernel(p.func, p.gridDimX, p.gridDimY, p.gridDimZ, p.blockDimX, p.blockDimY, p.blockDimZ,
                                      p.sharedMemBytes, ctx_->stream, p.kernelParams, nullptr);
    if (absl::Status s = cu_check(r, absl::StrCat("launching ", node_info_[i].name, " (profiled)")); !s.ok()) return s;
    if (absl::Status s = profile_events_[2 * i + 1]->record(ctx_->stream); !s.ok()) return s;
  }
  const Event& last = *profile_events_[2 * nodes_.size() - 1];
  if (absl::Status s = last.wait(); !s.ok()) return s;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    auto dur = profile_events_[2 * i + 1]->elapsed_ms(*profile_events_[2 * i]);
    auto before_end = last.elapsed_ms(*profile_events_[2 * i]);
    if (!dur.ok()) return dur.status();
    if (!before_end.ok()) return before_end.status();
    node_us->push_back(*dur * 1000);
    before_end_us->push_back(*before_end * 1000);
  }
  return absl::OkStatus();
}

absl::Status CudaExecutable::launch_profiled() {
  std::vector<double> node_us, before_end_us;
  if (absl::Status s = launch_timed(&node_us, &before_end_us); !s.ok()) return s;
  // The GPU's clock placed on the trace's by the end of the last kernel, which launch_timed's
  // wait has just seen (an approximation of up to the wait's latency).
  const double host_end = support::trace_now_us_precise();
  for (size_t i = 0; i < nodes_.size(); ++i) {
    support::KernelRun run = node_info_[i];
    run.start_us = host_end - before_end_us[i];
    run.dur_us = node_us[i];
    support::trace_kernel("cuda", run, ctx_->peaks,
                          "\"clock\": \"CUDA events, aligned at the run's end\", \"launch\": \"one kernel at a time "
                          "(a profiled run launches the graph's kernels in step order)\"");
  }
  return absl::OkStatus();
}

}  // namespace kiln::runtime::cuda

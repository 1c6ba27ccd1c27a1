// Building the CUDA graph of a CompiledProgram (executable.h): a kernel node per step with edges
// from the steps' dependencies, and for loops and branches (ir/program.h) conditional nodes whose
// body graphs hold the steps inside them, steered by the gate kernels of control_gates.h. A whole
// loop of any trip count then runs inside one cuGraphLaunch with no host round trip:
//
//   [steps before]  -> gate(first)  -> WHILE(h) { [body steps] -> gate }      -> [steps after]
//   [steps before]  -> branch gate  -> IF(h1) { [then steps] } -> IF(h2) { [else steps] } -> ...
//
// Markers are full barriers: the first steps of a run wait for everything before it.
#include <algorithm>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "backends/cuda/driver_api.h"
#include "backends/cuda/executable.h"
#include "backends/cuda/nccl.h"
#include "support/options.h"
#include "support/trace.h"

namespace kiln::runtime::cuda {

absl::StatusOr<CUgraphNode> CudaExecutable::add_kernel(CUgraph g, size_t i, const std::vector<CUgraphNode>& deps, Plan* plan) {
  const CompiledProgram& c = *plan->c;
  const ir::Step& step = c.steps[i];
  const CompiledKernel& k = c.kernels[size_t(step.kernel)];
  if (k.launches_nothing()) return nullptr;
  Node n;
  n.buffers = k.buffers;
  for (int b : k.buffers) {
    n.args.push_back(bound_[size_t(b)]);
    n.bound_io |= buffers_[size_t(b)].kind != ir::BufferKind::kIntermediate;
  }
  n.slots = k.params;
  n.values.assign(k.params.size(), 0);
  n.map_desc = k.tensor_maps;
  n.maps.resize(k.tensor_maps.size());
  for (size_t m = 0; m < n.maps.size(); ++m) {
    const int b = n.map_desc[m].buffer;
    n.bound_io |= buffers_[size_t(b)].kind != ir::BufferKind::kIntermediate;
    // Inputs and outputs are not bound yet: encode over a stand-in address (256) until the
    // first run re-encodes them.
    CUdeviceptr at = bound_[size_t(b)] ? bound_[size_t(b)] : CUdeviceptr(256);
    if (absl::Status s = encode_map(n.map_desc[m], at, &n.maps[m]); !s.ok())
      return absl::Status(s.code(), absl::StrCat(k.name, ": ", s.message()));
  }
  for (CUdeviceptr& a : n.args) n.arg_ptrs.push_back(&a);
  for (uint64_t& v : n.values) n.arg_ptrs.push_back(&v);
  for (CUtensorMap& m : n.maps) n.arg_ptrs.push_back(&m);
  n.params.func = (*plan->functions)[size_t(step.kernel)];
  n.params.gridDimX = plan->grid_x[size_t(step.kernel)];
  n.params.gridDimY = k.grid[1];
  n.params.gridDimZ = k.grid[2];
  n.params.blockDimX = k.block[0];
  n.params.blockDimY = k.block[1];
  n.params.blockDimZ = k.block[2];
  n.params.sharedMemBytes = k.shared_bytes;
  n.params.kernelParams = n.arg_ptrs.empty() ? nullptr : n.arg_ptrs.data();
  CUresult r = api().cuGraphAddKernelNode(&n.node, g, deps.empty() ? nullptr : deps.data(), deps.size(), &n.params);
  if (absl::Status s = cu_check(r, absl::StrCat("adding kernel ", k.name, " to the CUDA graph")); !s.ok()) return s;
  CUgraphNode node = n.node;
  nodes_.push_back(std::move(n));  // moving keeps args/arg_ptrs' heap storage where it is
  support::KernelRun info;
  info.name = k.name;
  info.kernel = step.kernel;
  info.bytes = k.bytes;
  info.flops = k.flops;
  info.tensor_math = k.tensor_math;
  info.computes = k.computes;
  node_info_.push_back(std::move(info));
  return node;
}

absl::StatusOr<CUgraphNode> CudaExecutable::add_gate(CUgraph g, std::unique_ptr<Gate> gate, const std::vector<CUgraphNode>& deps) {
  Gate& x = *gate;
  const bool loop = x.trips != 0;
  if (loop)
    x.ptrs = {&x.h1, &x.flag, &x.trips, &x.status, &x.max_trips, &x.first};
  else
    x.ptrs = {&x.h1, &x.h2, &x.flag, &x.has_else};
  x.params.func = loop ? loop_gate_ : branch_gate_;
  x.params.gridDimX = x.params.gridDimY = x.params.gridDimZ = 1;
  x.params.blockDimX = x.params.blockDimY = x.params.blockDimZ = 1;
  x.params.kernelParams = x.ptrs.data();
  CUresult r = api().cuGraphAddKernelNode(&x.node, g, deps.empty() ? nullptr : deps.data(), deps.size(), &x.params);
  if (absl::Status s = cu_check(r, loop ? "adding a loop's gate to the CUDA graph" : "adding a branch's gate to the CUDA graph"); !s.ok())
    return s;
  CUgraphNode node = x.node;
  gates_.push_back(std::move(gate));
  return node;
}

absl::StatusOr<CUgraphNode> CudaExecutable::add_conditional(CUgraph g, unsigned long long handle, CUgraphConditionalNodeType type,
                                                            const std::vector<CUgraphNode>& deps, CUgraph* body) {
  CUgraphNodeParams p{};
  p.type = CU_GRAPH_NODE_TYPE_CONDITIONAL;
  p.conditional.handle = handle;
  p.conditional.type = type;
  p.conditional.size = 1;
  p.conditional.ctx = ctx_->ctx;
  CUgraphNode node = nullptr;
  CUresult r = api().cuGraphAddNode(&node, g, deps.empty() ? nullptr : deps.data(), nullptr, deps.size(), &p);
  if (absl::Status s = cu_check(r, "adding a conditional node to the CUDA graph (a driver for CUDA 12.4 or newer has them)"); !s.ok())
    return s;
  *body = p.conditional.phGraph_out[0];
  return node;
}

absl::StatusOr<std::vector<CUgraphNode>> CudaExecutable::build_range(CUgraph g, size_t begin, size_t end,
                                                                     std::vector<CUgraphNode> frontier, Plan* plan) {
  const std::vector<ir::Step>& steps = plan->c->steps;
  const ir::BlockLinks& links = plan->links;
  // Each step's node, or for a step with nothing to launch, the nodes it waited for (so that its
  // dependents still wait for them). A step of a run with no deps waits for the frontier.
  std::vector<std::vector<CUgraphNode>> after(steps.size());
  std::vector<CUgraphNode> run;  // the current run's nodes
  auto close_run = [&] {
    if (!run.empty()) frontier = std::move(run);
    run.clear();
  };
  auto handle = [&](CUgraph graph) -> absl::StatusOr<unsigned long long> {
    CUgraphConditionalHandle h = 0;
    CUresult r = api().cuGraphConditionalHandleCreate(&h, graph, ctx_->ctx, 0, 0);
    if (absl::Status s = cu_check(r, "creating a conditional handle (cuGraphConditionalHandleCreate)"); !s.ok()) return s;
    return static_cast<unsigned long long>(h);
  };
  for (size_t i = begin; i < end;) {
    const ir::Step& step = steps[i];
    if (step.is_kernel() || step.is_collective()) {
      std::vector<CUgraphNode> deps;
      for (int d : step.deps) deps.insert(deps.end(), after[size_t(d)].begin(), after[size_t(d)].end());
      if (step.deps.empty()) deps = frontier;
      std::sort(deps.begin(), deps.end());
      deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
      auto node = step.is_kernel() ? add_kernel(g, i, deps, plan) : add_collective(g, i, deps, plan);
      if (!node.ok()) return node.status();
      after[i] = *node ? std::vector<CUgraphNode>{*node} : deps;
      if (*node) run.push_back(*node);
      ++i;
      continue;
    }
    close_run();
    const CUdeviceptr flag = arena_ + CUdeviceptr(buffers_[size_t(step.flag)].offset);
    if (step.kind == ir::StepKind::kWhile) {
      auto h = handle(g);
      if (!h.ok()) return h.status();
      const int loop = plan->loops++;
      auto gate = std::make_unique<Gate>();
      gate->h1 = *h;
      gate->flag = flag;
      gate->status = loop_state_;
      gate->trips = loop_state_ + CUdeviceptr(sizeof(uint64_t) * size_t(loop + 1));
      gate->max_trips = step.max_trips;
      gate->first = 1;
      auto again = std::make_unique<Gate>(*gate);
      again->first = 0;
      auto first = add_gate(g, std::move(gate), frontier);
      if (!first.ok()) return first.status();
      CUgraph body = nullptr;
      auto cond = add_conditional(g, *h, CU_GRAPH_COND_TYPE_WHILE, {*first}, &body);
      if (!cond.ok()) return cond.status();
      const size_t e = size_t(links.end[i]);
      auto inner = build_range(body, i + 1, e, {}, plan);
      if (!inner.ok()) return inner.status();
      if (auto last = add_gate(body, std::move(again), *inner); !last.ok()) return last.status();
      frontier = {*cond};
      i = e + 1;
      continue;
    }
    // kIf, with its else when it has one.
    const int otherwise = links.otherwise[i];
    const size_t e = size_t(links.end[i]);
    auto h1 = handle(g);
    if (!h1.ok()) return h1.status();
    auto gate = std::make_unique<Gate>();
    gate->h1 = *h1;
    gate->flag = flag;
    if (otherwise >= 0) {
      auto h2 = handle(g);
      if (!h2.ok()) return h2.status();
      gate->h2 = *h2;
      gate->has_else = 1;
    }
    const unsigned long long h2 = gate->h2;
    auto set = add_gate(g, std::move(gate), frontier);
    if (!set.ok()) return set.status();
    CUgraph then_body = nullptr;
    auto then_node = add_conditional(g, *h1, CU_GRAPH_COND_TYPE_IF, {*set}, &then_body);
    if (!then_node.ok()) return then_node.status();
    if (auto inner = build_range(then_body, i + 1, otherwise >= 0 ? size_t(otherwise) : e, {}, plan); !inner.ok())
      return inner.status();
    frontier = {*then_node};
    if (otherwise >= 0) {
      CUgraph else_body = nullptr;
      auto else_node = add_conditional(g, h2, CU_GRAPH_COND_TYPE_IF, {*then_node}, &else_body);
      if (!else_node.ok()) return else_node.status();
      if (auto inner = build_range(else_body, size_t(otherwise) + 1, e, {}, plan); !inner.ok()) return inner.status();
      frontier = {*else_node};
    }
    i = e + 1;
  }
  close_run();
  return frontier;
}

namespace {

// The nodes of a captured graph (NCCL's capture): each one's type, and a kernel's launch.
struct CapturedNode {
  CUgraphNodeType type;
  CUDA_KERNEL_NODE_PARAMS kernel{};
};
absl::StatusOr<std::vector<CapturedNode>> captured_nodes(CUgraph g) {
  size_t n = 0;
  if (absl::Status s = cu_check(api().cuGraphGetNodes(g, nullptr, &n), "listing a captured collective's nodes"); !s.ok()) return s;
  std::vector<CUgraphNode> nodes(n);
  if (absl::Status s = cu_check(api().cuGraphGetNodes(g, nodes.data(), &n), "listing a captured collective's nodes"); !s.ok())
    return s;
  std::vector<CapturedNode> out(n);
  for (size_t i = 0; i < n; ++i) {
    if (absl::Status s = cu_check(api().cuGraphNodeGetType(nodes[i], &out[i].type), "reading a captured node's type"); !s.ok())
      return s;
    if (out[i].type == CU_GRAPH_NODE_TYPE_KERNEL)
      if (absl::Status s = cu_check(api().cuGraphKernelNodeGetParams(nodes[i], &out[i].kernel), "reading a captured kernel's launch");
          !s.ok())
        return s;
  }
  return out;
}

// Blocks of a captured graph's largest kernel (NCCL's: one per channel, each on its own
// multiprocessor).
absl::StatusOr<uint32_t> kernel_blocks(CUgraph g) {
  auto nodes = captured_nodes(g);
  if (!nodes.ok()) return nodes.status();
  uint32_t blocks = 0;
  for (const CapturedNode& n : *nodes)
    if (n.type == CU_GRAPH_NODE_TYPE_KERNEL) blocks = std::max(blocks, n.kernel.gridDimX * n.kernel.gridDimY * n.kernel.gridDimZ);
  return blocks;
}

// KILN_DEBUG=2: what NCCL's capture holds (node types, kernel launches).
void describe_capture(CUgraph g, const std::string& what) {
  auto nodes = captured_nodes(g);
  if (!nodes.ok()) return;
  std::string text;
  for (const CapturedNode& n : *nodes) {
    absl::StrAppend(&text, " type ", int(n.type));
    if (n.type == CU_GRAPH_NODE_TYPE_KERNEL)
      absl::StrAppend(&text, " (kernel ", n.kernel.gridDimX, "x", n.kernel.gridDimY, " blocks of ", n.kernel.blockDimX, ", ",
                      n.kernel.sharedMemBytes, " B shared)");
  }
  std::fprintf(stderr, "kiln: cuda: the capture of %s holds %zu nodes:%s\n", what.c_str(), nodes->size(), text.c_str());
}

}  // namespace

absl::StatusOr<CUgraph> CudaExecutable::capture_collective(const Coll& c, CUdeviceptr in, CUdeviceptr out) {
  const ir::Step& step = steps_[c.step];
  auto comm = nccl_comm(ctx_, step.collective);
  if (!comm.ok()) return comm.status();
  if (std::find(comms_.begin(), comms_.end(), *comm) == comms_.end()) comms_.push_back(*comm);
  if (collective_what_.empty()) {
    const std::string d = device_->description();  // "cuda:0 (NVIDIA ...)"
    collective_what_ = absl::StrCat(ir::describe(step.collective), " on ", d.substr(0, d.find(' ')));
  }
  // Captured from the greatest-priority stream, NCCL's kernels keep that priority in the graph
  // (instantiated with CUDA_GRAPH_INSTANTIATE_FLAG_USE_NODE_PRIORITY): the block scheduler starts
  // them ahead of the pending blocks of independent kernels, which then fill the other
  // multiprocessors beside them instead of holding the collective back until their last wave.
  if (!capture_stream_) {
    int least = 0, greatest = 0;
    if (absl::Status s = cu_check(api().cuCtxGetStreamPriorityRange(&least, &greatest), "cuCtxGetStreamPriorityRange"); !s.ok())
      return s;
    if (absl::Status s = cu_check(api().cuStreamCreateWithPriority(&capture_stream_, CU_STREAM_NON_BLOCKING, greatest),
                                  "cuStreamCreateWithPriority (capture)");
        !s.ok())
      return s;
  }
  if (absl::Status s = cu_check(api().cuStreamBeginCapture(capture_stream_, CU_STREAM_CAPTURE_MODE_RELAXED),
                                "capturing a collective (cuStreamBeginCapture)");
      !s.ok())
    return s;
  absl::Status queued = enqueue_collective(**comm, ir::collective_call(step, buffers_), in, out, capture_stream_);
  CUgraph child = nullptr;
  absl::Status ended = cu_check(api().cuStreamEndCapture(capture_stream_, &child), "capturing a collective (cuStreamEndCapture)");
  if (!queued.ok() || !ended.ok()) {
    if (child) api().cuGraphDestroy(child);
    return queued.ok() ? ended : queued;
  }
  if (support::debug_level() >= 2) describe_capture(child, collective_what_);
  return child;
}

absl::StatusOr<CUgraphNode> CudaExecutable::add_collective(CUgraph g, size_t i, const std::vector<CUgraphNode>& deps, Plan* plan) {
  if (steps_.empty()) steps_ = plan->c->steps;
  Coll c;
  c.step = i;
  const ir::Step& step = steps_[i];
  c.bound_io = ir::collective_touches_io(step, buffers_);
  // (build() defers a graph with such collectives to the first run: bound_ holds real addresses)
  Captured k{bound_[size_t(step.in)], bound_[size_t(step.out)], nullptr};
  auto child = capture_collective(c, k.in, k.out);
  if (!child.ok()) return child.status();
  k.graph = *child;
  c.captures.push_back(k);
  colls_.push_back(c);  // (owns the capture from here, also when adding the node fails)
  CUresult r = api().cuGraphAddChildGraphNode(&colls_.back().node, g, deps.empty() ? nullptr : deps.data(), deps.size(), k.graph);
  if (absl::Status s = cu_check(r, "adding a collective to the CUDA graph (cuGraphAddChildGraphNode)"); !s.ok()) return s;
  return colls_.back().node;
}

namespace {

// beside[i]: step i neither waits for a collective step nor is waited for by one (deps closed
// transitively), so the two may run at the same time.
std::vector<bool> beside_collectives(const std::vector<ir::Step>& steps) {
  const size_t n = steps.size(), words = (n + 63) / 64;
  std::vector<std::vector<uint64_t>> before(n, std::vector<uint64_t>(words, 0));  // transitive deps
  for (size_t i = 0; i < n; ++i)
    for (int d : steps[i].deps) {
      for (size_t w = 0; w < words; ++w) before[i][w] |= before[size_t(d)][w];
      before[i][size_t(d) / 64] |= uint64_t(1) << (size_t(d) % 64);
    }
  auto waits = [&](size_t a, size_t b) { return (before[a][b / 64] >> (b % 64)) & 1; };
  std::vector<bool> beside(n, false);
  for (size_t c = 0; c < n; ++c) {
    if (!steps[c].is_collective()) continue;
    for (size_t i = 0; i < n; ++i)
      if (i != c && !waits(i, c) && !waits(c, i)) beside[i] = true;
  }
  return beside;
}

}  // namespace

absl::Status CudaExecutable::leave_room_for_collectives(const CompiledProgram& c) {
  uint32_t nccl = 0;
  for (const Coll& coll : colls_) {
    auto b = kernel_blocks(coll.captures.back().graph);
    if (!b.ok()) return b.status();
    nccl = std::max(nccl, *b);
  }
  if (nccl == 0 || int64_t(nccl) >= ctx_->sms) return absl::OkStatus();
  const std::vector<bool> beside = beside_collectives(c.steps);
  std::vector<int> step_of(c.kernels.size(), -1);
  for (size_t i = 0; i < c.steps.size(); ++i)
    if (c.steps[i].is_kernel()) step_of[size_t(c.steps[i].kernel)] = int(i);
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const int kernel = node_info_[i].kernel, step = step_of[size_t(kernel)];
    if (c.kernels[size_t(kernel)].tiles <= 0 || step < 0 || !beside[size_t(step)]) continue;
    Node& n = nodes_[i];
    int width = 0;  // blocks per cluster (0: no compile-time cluster)
    if (absl::Status s = cu_check(api().cuFuncGetAttribute(&width, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, n.params.func),
                                  "reading a kernel's cluster width");
        !s.ok())
      return s;
    const uint32_t w = uint32_t(std::max(width, 1));
    const uint32_t room = std::max(w, (uint32_t(ctx_->sms) - nccl) / w * w);
    if (n.params.gridDimX <= room) continue;
    n.params.gridDimX = room;
    if (absl::Status s = cu_check(api().cuGraphKernelNodeSetParams(n.node, &n.params), "narrowing a kernel beside a collective");
        !s.ok())
      return s;
  }
  return absl::OkStatus();
}

absl::Status CudaExecutable::rebind_collectives() {
  support::TraceSpan span("rebind collectives (cuda)");
  // Captured graphs replaced earlier go once the launches that may still use them are done (NCCL
  // ties its work descriptors to the graph that captured them).
  for (size_t i = 0; i < retired_.size();) {
    if (retired_[i].second && !retired_[i].second->complete()) {
      ++i;
      continue;
    }
    api().cuGraphDestroy(retired_[i].first);
    retired_[i] = retired_.back();
    retired_.pop_back();
  }
  for (Coll& c : colls_) {
    if (!c.bound_io) continue;
    const ir::Step& step = steps_[c.step];
    const CUdeviceptr in = next_[size_t(step.in)], out = next_[size_t(step.out)];
    if (c.captures.back().in == in && c.captures.back().out == out) continue;
    Captured k{in, out, nullptr};
    bool fresh = true;
    for (size_t i = 0; i < c.captures.size(); ++i)
      if (c.captures[i].in == in && c.captures[i].out == out) {
        k = c.captures[i];
        c.captures.erase(c.captures.begin() + std::ptrdiff_t(i));
        fresh = false;
        break;
      }
    if (fresh) {
      auto child = capture_collective(c, in, out);
      if (!child.ok()) return child.status();
      k.graph = *child;
    }
    // Launches already queued keep the parameters they were launched with.
    CUresult r = api().cuGraphExecChildGraphNodeSetParams(exec_, c.node, k.graph);
    if (r != CUDA_SUCCESS) {
      if (fresh) api().cuGraphDestroy(k.graph);
      else c.captures.insert(c.captures.begin(), k);
      return cu_error(r, "rebinding a collective of the CUDA graph (cuGraphExecChildGraphNodeSetParams)");
    }
    c.captures.push_back(k);
    if (c.captures.size() > kMaxCaptures) {
      if (launched_) retired_.push_back({c.captures.front().graph, done_});
      else api().cuGraphDestroy(c.captures.front().graph);
      c.captures.erase(c.captures.begin());
    }
  }
  return absl::OkStatus();
}

absl::Status CudaExecutable::check_trips() {
  uint64_t status = 0;
  if (absl::Status s = done_->wait(); !s.ok()) return s;
  if (absl::Status s = cu_check(api().cuMemcpyDtoH(&status, loop_state_, sizeof status), "reading the loops' status"); !s.ok())
    return s;
  if (status == 0) return absl::OkStatus();
  if (absl::Status s = cu_check(api().cuMemsetD8Async(loop_state_, 0, sizeof status, ctx_->stream), "clearing the loops' status");
      !s.ok())
    return s;
  return absl::OutOfRangeError(ir::max_trips_message(int64_t(status)));
}

}  // namespace kiln::runtime::cuda

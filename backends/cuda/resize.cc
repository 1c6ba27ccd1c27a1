// CudaExecutable::resize (runtime/device.h): another size of a symbolic dimension runs through the
// same instantiated CUDA graph. The sizes share their code (passes/symbolic.h), so what changes
// is data the graph's kernel nodes hold: grids, arena offsets of intermediates, tensor maps (which
// embed extents) and the size params. Those are rewritten here and reach the instantiated graph
// through cuGraphExecKernelNodeSetParams on the next run (update() sees every node dirty), the
// path a rebind takes; nothing is instantiated again. The arena grows when a size needs more
// (after the launches in flight, which still use the old one); it never shrinks, so sizes that
// alternate do not reallocate.
#include "absl/strings/str_cat.h"
#include "backends/cuda/driver_api.h"
#include "backends/cuda/executable.h"
#include "runtime/disk_cache.h"
#include "runtime/stats.h"

namespace kiln::runtime::cuda {
absl::Status CudaExecutable::resize(const CompiledProgram& c) {
  std::lock_guard<std::mutex> lock(mu_);
  auto refuse = [](const std::string& why) {
    return absl::FailedPreconditionError(absl::StrCat("cuda: this executable cannot take the program: ", why));
  };
  if (control_ || !colls_.empty() || deferred_) return refuse("it has loops, branches or collectives");
  if (!c.module.empty() && stable_hash64(c.module) != module_hash_) return refuse("its module differs");
  if (std::string why = differs_beyond_sizes(c, program_steps_, buffers_, size_t(num_kernels_), num_inputs_, num_outputs_, params_.size());
      !why.empty())
    return refuse(why);
  // The kernel nodes: one per launching kernel step, in step order.
  size_t node = 0;
  for (const ir::Step& s : c.steps) {
    if (!s.is_kernel()) continue;
    const CompiledKernel& k = c.kernels[size_t(s.kernel)];
    if (absl::Status st = check_launch(k, *ctx_); !st.ok()) return st;
    if (k.launches_nothing()) continue;
    if (node >= nodes_.size() || node_info_[node].kernel != s.kernel) return refuse("a kernel launches at one size and not at another");
    const Node& n = nodes_[node];
    if (k.block[0] != n.params.blockDimX || k.block[1] != n.params.blockDimY || k.block[2] != n.params.blockDimZ ||
        k.buffers != n.buffers || k.params != n.slots || k.tensor_maps.size() != n.maps.size())
      return refuse(absl::StrCat(k.name, " takes other blocks or arguments"));
    ++node;
  }
  if (node != nodes_.size()) return refuse("a kernel launches at one size and not at another");
  if (absl::Status s = ctx_->make_current(); !s.ok()) return s;

  // Grids first (they may fail): nothing is changed before every check passed.
  std::vector<uint32_t> grid_x(c.kernels.size());
  for (size_t i = 0; i < nodes_.size(); ++i) {
    const int k = node_info_[i].kernel;
    auto g = resident_grid(c.kernels[size_t(k)], nodes_[i].params.func);
    if (!g.ok()) return g.status();
    grid_x[size_t(k)] = *g;
  }
  if (c.arena_bytes > arena_size_) {
    if (launched_)
      if (absl::Status s = done_->wait(); !s.ok()) return s;  // launches in flight use the old arena
    int64_t size = 0;
    auto a = ctx_->pool->allocate(c.arena_bytes, &size);
    if (!a.ok()) return a.status();
    if (arena_) ctx_->pool->release(arena_, arena_size_);
    arena_ = *a;
    arena_size_ = size;
    counters().bytes_allocated += c.arena_bytes;
  }
  buffers_ = c.buffers;
  for (size_t b = 0; b < buffers_.size(); ++b)
    bound_[b] = next_[b] = buffers_[b].kind == ir::BufferKind::kIntermediate ? arena_ + CUdeviceptr(buffers_[b].offset) : 0;
  // Zeroed intermediates (chained kernels' tickets) at their new places; stream-ordered after the
  // runs before.
  if (absl::Status s = zero_tickets(); !s.ok()) return s;
  for (size_t i = 0; i < nodes_.size(); ++i) {
    Node& n = nodes_[i];
    const CompiledKernel& k = c.kernels[size_t(node_info_[i].kernel)];
    if (k.shared_bytes > kDefaultSharedLimit && k.shared_bytes > n.params.sharedMemBytes)
      if (absl::Status s = cu_check(api().cuFuncSetAttribute(n.params.func, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, int(k.shared_bytes)),
                                    absl::StrCat("raising the shared memory limit of ", k.name));
          !s.ok())
        return s;
    n.params.gridDimX = grid_x[size_t(node_info_[i].kernel)];
    n.params.gridDimY = k.grid[1];
    n.params.gridDimZ = k.grid[2];
    n.params.sharedMemBytes = k.shared_bytes;
    for (size_t a = 0; a < n.buffers.size(); ++a) n.args[a] = bound_[size_t(n.buffers[a])];
    n.map_desc = k.tensor_maps;
    node_info_[i].bytes = k.bytes;
    node_info_[i].flops = k.flops;
  }
  // Inputs and outputs (bound_ 0) are pointed at by the next run, which also writes the params and
  // re-encodes every tensor map; until then no launch uses these parameters.
  resized_ = true;
  values_unknown_ = true;
  counters().executables_resized++;
  return absl::OkStatus();
}

}  // namespace kiln::runtime::cuda

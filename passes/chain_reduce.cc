#include "passes/chain_reduce.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace kiln::passes {
namespace {

using ir::Kernel;
using ir::KNode;
using ir::Op;

// A reduction kernel the renderer's plain strategies serve: reduce nodes only (no attention,
// segment, scatter or contraction), fixed extents, outer-level stores.
bool plain_reduction(const Kernel& k) {
  if (!k.has_reduce() || k.serial || k.chained() || k.contraction.reduce >= 0 || k.any_symbolic()) return false;
  bool any = false;
  for (const KNode& n : k.nodes) {
    if (n.op == Op::kAttention || n.op == Op::kSegmentReduce || n.op == Op::kSegmentPos) return false;
    if (ir::is_reduce(n.op)) any = true;
  }
  for (const ir::Store& s : k.stores)
    if (s.indexed() || k.nodes[size_t(s.value)].inner) return false;
  return any;
}

// Whether `m` reads a buffer of the kernel's shape row-major from its start: outer index f,
// position p along the last axis at f * P + p.
bool reads_in_order(const ir::IndexMap& m, const Shape& shape) {
  if (m.views.size() != 1 || m.has_mask()) return false;
  const ir::View& v = m.views[0];
  if (v.shape != shape || v.offset != 0) return false;
  int64_t stride = 1;
  for (size_t d = shape.size(); d-- > 0;) {
    if (shape[d] > 1 && v.strides[d] != stride) return false;
    stride *= shape[d];
  }
  return true;
}

bool coherent_dtype(DType t) {
  return t == DType::kFloat32 || t == DType::kFloat64 || t == DType::kInt32 || t == DType::kInt64;
}

// The partials buffer B folds (its every inner load reads it in order), or -1.
int partials_of(const Kernel& b) {
  if (!plain_reduction(b) || !b.reduce.back() || std::count(b.reduce.begin(), b.reduce.end(), true) != 1) return -1;
  int t = -1;
  for (const KNode& n : b.nodes) {
    if (n.op != Op::kLoad || !n.inner) continue;
    if (ir::is_indexed_load(n) || !reads_in_order(n.map, b.shape) || (t >= 0 && n.buffer != t)) return -1;
    t = n.buffer;
  }
  return t;
}

}  // namespace

int chain_reduce(ir::Program* p) {
  if (p->has_control()) return 0;
  const size_t nb = p->buffers.size();
  // Each buffer's writing steps and reading steps.
  std::vector<std::vector<int>> writers(nb), readers(nb);
  std::vector<int> reads, writes;
  for (size_t s = 0; s < p->steps.size(); ++s) {
    ir::step_buffers(*p, s, &reads, &writes);
    for (int b : reads) readers[size_t(b)].push_back(int(s));
    for (int b : writes) writers[size_t(b)].push_back(int(s));
  }
  std::vector<bool> absorbed(p->steps.size(), false);
  int chained = 0;
  for (size_t j = 0; j < p->steps.size(); ++j) {
    if (!p->steps[j].is_kernel()) continue;
    const Kernel& b = p->kernels[size_t(p->steps[j].kernel)];
    const int t = partials_of(b);
    if (t < 0 || p->buffers[size_t(t)].kind != ir::BufferKind::kIntermediate || !coherent_dtype(p->buffers[size_t(t)].dtype))
      continue;
    if (writers[size_t(t)].size() != 1 || readers[size_t(t)] != std::vector<int>{int(j)}) continue;
    const int i = writers[size_t(t)][0];
    if (i >= int(j) || absorbed[size_t(i)] || !p->steps[size_t(i)].is_kernel()) continue;
    Kernel& a = p->kernels[size_t(p->steps[size_t(i)].kernel)];
    if (!plain_reduction(a) || a.tickets >= 0) continue;
    int stores_t = 0;
    for (const ir::Store& s : a.stores) stores_t += s.buffer == t;
    if (stores_t != 1 || shape_numel(p->buffers[size_t(t)].shape) != shape_numel(b.shape)) continue;
    // B moves up to A's place: what else it reads is ready by then, what it writes nobody else
    // writes.
    bool movable = true;
    for (const KNode& n : b.nodes)
      if (n.op == Op::kLoad && n.buffer != t)
        for (int w : writers[size_t(n.buffer)]) movable = movable && w < i;
    for (const ir::Store& s : b.stores) movable = movable && writers[size_t(s.buffer)] == std::vector<int>{int(j)};
    if (!movable) continue;
    ir::BufferDesc tickets;
    tickets.kind = ir::BufferKind::kIntermediate;
    tickets.dtype = DType::kUInt32;
    tickets.shape = {b.outer_count()};
    tickets.zeroed = true;
    a.tickets = int(p->buffers.size());
    p->buffers.push_back(tickets);
    a.finish.push_back(b);
    a.notes.push_back(absl::StrCat("chained: ", b.name, " folds the partials in buf", t,
                                   " in the last workgroup to store each output's ", b.shape.back()));
    a.sources.insert(a.sources.end(), b.sources.begin(), b.sources.end());
    std::sort(a.sources.begin(), a.sources.end());
    absl::StrAppend(&a.computes, a.computes.empty() ? "" : ", ", b.computes);
    absorbed[j] = true;
    ++chained;
  }
  if (chained == 0) return 0;
  // Drop the absorbed steps and their kernels, renumbering the rest.
  std::vector<ir::Kernel> kernels;
  std::vector<ir::Step> steps;
  for (size_t s = 0; s < p->steps.size(); ++s) {
    if (absorbed[s]) continue;
    ir::Step st = p->steps[s];
    st.deps.clear();  // insert_barriers computes them
    if (st.is_kernel()) {
      kernels.push_back(std::move(p->kernels[size_t(st.kernel)]));
      st.kernel = int(kernels.size()) - 1;
    }
    steps.push_back(st);
  }
  p->kernels = std::move(kernels);
  p->steps = std::move(steps);
  return chained;
}

}  // namespace kiln::passes

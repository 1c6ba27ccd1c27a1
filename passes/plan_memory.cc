#include "passes/plan_memory.h"

#include <algorithm>

namespace kiln::passes {

void plan_memory(ir::Program* p) {
  size_t nb = p->buffers.size();
  std::vector<int> first(nb, -1), last(nb, -1);
  for (size_t s = 0; s < p->steps.size(); ++s) {
    const ir::Kernel& k = p->kernels[p->steps[s].kernel];
    for (const ir::Store& st : k.stores) {
      if (first[st.buffer] < 0) first[st.buffer] = int(s);
      last[st.buffer] = std::max(last[st.buffer], int(s));
    }
    for (const ir::KNode& n : k.nodes)
      if (n.op == ir::Op::kLoad) last[n.buffer] = std::max(last[n.buffer], int(s));
  }
  struct Placed {
    int64_t offset, end;
    int first, last;
  };
  std::vector<Placed> placed;
  p->arena_bytes = 0;
  p->unplanned_bytes = 0;
  // Largest first among buffers in definition order gives tight packings for chains.
  std::vector<size_t> order;
  for (size_t b = 0; b < nb; ++b)
    if (p->buffers[b].kind == ir::BufferKind::kIntermediate) order.push_back(b);
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return first[a] < first[b]; });
  for (size_t b : order) {
    ir::BufferDesc& d = p->buffers[b];
    int64_t bytes = (d.bytes() + kArenaAlignment - 1) / kArenaAlignment * kArenaAlignment;
    if (bytes == 0) bytes = kArenaAlignment;
    p->unplanned_bytes += bytes;
    int f = first[b] < 0 ? 0 : first[b], l = std::max(last[b], f);
    // Conflicting ranges: buffers live at the same time (same step counts as overlap).
    std::vector<std::pair<int64_t, int64_t>> busy;
    for (const Placed& q : placed)
      if (!(q.last < f || l < q.first)) busy.push_back({q.offset, q.end});
    std::sort(busy.begin(), busy.end());
    int64_t off = 0;
    for (auto& [s, e] : busy) {
      if (off + bytes <= s) break;
      off = std::max(off, e);
    }
    d.offset = off;
    placed.push_back({off, off + bytes, f, l});
    p->arena_bytes = std::max(p->arena_bytes, off + bytes);
  }
}

}  // namespace kiln::passes

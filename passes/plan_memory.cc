#include "passes/plan_memory.h"

#include <algorithm>

namespace kiln::passes {

namespace {

// Whether the kernel of step `s` may write buffer `out` over the bytes of buffer `in`: an
// elementwise kernel that reads `in` only at the very element it writes to `out`, so every
// element is read before it is overwritten and by the same iteration.
bool in_place_ok(const ir::Program& p, const ir::Kernel& k, int in, int out) {
  if (k.has_reduce() || p.buffers[in].bytes() != p.buffers[out].bytes()) return false;
  const ir::Store* st = nullptr;
  for (const ir::Store& s : k.stores)
    if (s.buffer == out) st = &s;
  if (!st || dtype_size(p.buffers[in].dtype) != dtype_size(p.buffers[out].dtype)) return false;
  bool reads = false;
  for (const ir::KNode& n : k.nodes) {
    if (n.op != ir::Op::kLoad || n.buffer != in) continue;
    if (ir::is_indexed_load(n) || !(n.map == st->map)) return false;
    reads = true;
  }
  return reads;
}

}  // namespace

void plan_memory(ir::Program* p) {
  size_t nb = p->buffers.size();
  std::vector<int> first(nb, -1), last(nb, -1);
  std::vector<int> reads, writes;
  for (size_t s = 0; s < p->steps.size(); ++s) {
    ir::step_buffers(*p, s, &reads, &writes);
    for (int b : writes) {
      if (first[size_t(b)] < 0) first[size_t(b)] = int(s);
      last[size_t(b)] = std::max(last[size_t(b)], int(s));
    }
    for (int b : reads) last[size_t(b)] = std::max(last[size_t(b)], int(s));
  }
  // Zeroed buffers (a chained kernel's tickets) keep their bytes for the whole program, so that
  // they are still zero when the next run starts.
  for (size_t b = 0; b < nb; ++b)
    if (p->buffers[b].zeroed && !p->steps.empty()) {
      first[b] = 0;
      last[b] = int(p->steps.size()) - 1;
    }
  // A loop runs its body again: a buffer in use before a loop's head and inside its body stays
  // alive to the loop's end (inner loops first, so an outer loop sees their extension).
  const std::vector<int> ends = ir::block_links(p->steps).end;
  std::vector<std::pair<int, int>> loops;  // (end, head)
  for (size_t s = 0; s < p->steps.size(); ++s)
    if (p->steps[s].kind == ir::StepKind::kWhile) loops.push_back({ends[s], int(s)});
  std::sort(loops.begin(), loops.end());
  for (auto [end, head] : loops)
    for (size_t b = 0; b < nb; ++b)
      if (first[b] >= 0 && first[b] < head && last[b] > head) last[b] = std::max(last[b], end);
  struct Placed {
    int64_t offset, end;
    int first, last;
    int buffer;
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
    // A buffer dying in the step that defines this one can hand over its bytes (in place).
    const bool by_kernel = p->steps[size_t(f)].is_kernel();
    const ir::Kernel* def = by_kernel ? &p->kernels[size_t(p->steps[size_t(f)].kernel)] : nullptr;
    int donor = -1;
    for (size_t i = 0; i < placed.size() && donor < 0 && first[b] >= 0 && by_kernel && !d.zeroed; ++i) {
      const Placed& q = placed[i];
      if (q.last != f || q.end - q.offset != bytes || !in_place_ok(*p, *def, q.buffer, int(b))) continue;
      bool free_range = true;  // nobody else placed on those bytes is alive at f
      for (const Placed& o : placed)
        if (&o != &q && !(o.last < f || l < o.first) && o.offset < q.end && q.offset < o.end) free_range = false;
      if (free_range) donor = int(i);
    }
    if (donor >= 0) {
      d.offset = placed[donor].offset;
      placed.push_back({d.offset, d.offset + bytes, f, l, int(b)});
      continue;
    }
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
    placed.push_back({off, off + bytes, f, l, int(b)});
    p->arena_bytes = std::max(p->arena_bytes, off + bytes);
  }
}

}  // namespace kiln::passes

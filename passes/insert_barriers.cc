#include "passes/insert_barriers.h"

#include <algorithm>
#include <set>

namespace kiln::passes {
namespace {

struct Access {
  std::set<int> reads, writes;
};

// Whether two buffers may share bytes: the same buffer, or two arena ranges that overlap.
bool overlap(const ir::Program& p, int a, int b) {
  if (a == b) return true;
  const ir::BufferDesc& x = p.buffers[a];
  const ir::BufferDesc& y = p.buffers[b];
  if (x.kind != ir::BufferKind::kIntermediate || y.kind != ir::BufferKind::kIntermediate) return false;
  return x.offset < y.offset + std::max<int64_t>(y.bytes(), 1) && y.offset < x.offset + std::max<int64_t>(x.bytes(), 1);
}

bool any_overlap(const ir::Program& p, const std::set<int>& a, const std::set<int>& b) {
  for (int x : a)
    for (int y : b)
      if (overlap(p, x, y)) return true;
  return false;
}

}  // namespace

void insert_barriers(ir::Program* p) {
  size_t n = p->steps.size();
  std::vector<Access> acc(n);
  for (size_t s = 0; s < n; ++s) {
    const ir::Kernel& k = p->kernels[p->steps[s].kernel];
    for (const ir::Store& st : k.stores) acc[s].writes.insert(st.buffer);
    for (const ir::KNode& x : k.nodes)
      if (x.op == ir::Op::kLoad) acc[s].reads.insert(x.buffer);
  }
  // reach[s] = steps that s transitively depends on.
  std::vector<std::set<int>> reach(n);
  for (size_t s = 0; s < n; ++s) {
    std::vector<int> hazards;
    for (size_t t = 0; t < s; ++t) {
      bool raw = any_overlap(*p, acc[t].writes, acc[s].reads);
      bool war = any_overlap(*p, acc[t].reads, acc[s].writes);
      bool waw = any_overlap(*p, acc[t].writes, acc[s].writes);
      if (raw || war || waw) hazards.push_back(int(t));
    }
    // Latest first: an earlier hazard already reached through a later one needs no edge.
    std::sort(hazards.rbegin(), hazards.rend());
    std::vector<int> deps;
    for (int t : hazards) {
      if (reach[s].count(t)) continue;
      deps.push_back(t);
      reach[s].insert(t);
      reach[s].insert(reach[t].begin(), reach[t].end());
    }
    std::sort(deps.begin(), deps.end());
    p->steps[s].deps = deps;
  }
}

}  // namespace kiln::passes

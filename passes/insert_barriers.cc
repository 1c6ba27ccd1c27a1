#include "passes/insert_barriers.h"

#include <algorithm>
#include <cstdint>
#include <map>

namespace kiln::passes {
namespace {

// The latest accesses of some bytes: the last step that wrote them and the steps that read them
// since. Every earlier access of those bytes is ordered before one of these already.
struct Latest {
  int writer = -1;
  std::vector<int> readers;
};

// The arena as disjoint byte ranges with their latest accesses. A write replaces the ranges it
// covers; a read joins the readers of every range it touches (a range wider than the read makes
// a later write wait for it too: safe, and rare, since buffers that share bytes mostly share
// whole slots of the plan).
class ArenaAccesses {
 public:
  void hazards(int64_t lo, int64_t hi, bool write, std::vector<int>* out) const {
    for (auto it = first(lo); it != ranges_.end() && it->first < hi; ++it) {
      if (it->second.end <= lo) continue;
      if (it->second.latest.writer >= 0) out->push_back(it->second.latest.writer);
      if (write) out->insert(out->end(), it->second.latest.readers.begin(), it->second.latest.readers.end());
    }
  }
  void read(int64_t lo, int64_t hi, int step) {
    for (auto it = first(lo); it != ranges_.end() && it->first < hi; ++it)
      if (it->second.end > lo) it->second.latest.readers.push_back(step);
  }
  void write(int64_t lo, int64_t hi, int step) {
    // The ranges it covers go; the parts of them outside [lo, hi) stay with their accesses.
    std::vector<std::pair<int64_t, Range>> keep;
    auto it = first(lo);
    while (it != ranges_.end() && it->first < hi) {
      if (it->second.end <= lo) {
        ++it;
        continue;
      }
      const int64_t start = it->first;
      Range r = it->second;
      it = ranges_.erase(it);
      if (start < lo) keep.push_back({start, Range{lo, r.latest}});
      if (r.end > hi) keep.push_back({hi, Range{r.end, r.latest}});
    }
    for (auto& k : keep) ranges_.emplace(std::move(k));
    ranges_[lo] = Range{hi, Latest{step, {}}};
  }

 private:
  struct Range {
    int64_t end;
    Latest latest;
  };
  std::map<int64_t, Range>::const_iterator first(int64_t lo) const {
    auto it = ranges_.upper_bound(lo);
    return it == ranges_.begin() ? it : std::prev(it);
  }
  std::map<int64_t, Range>::iterator first(int64_t lo) {
    auto it = ranges_.upper_bound(lo);
    return it == ranges_.begin() ? it : std::prev(it);
  }
  std::map<int64_t, Range> ranges_;
};

}  // namespace

// A step's hazards are the latest accesses of the bytes it reads (their writer) and writes
// (writer and readers): inputs and outputs per buffer, the arena per byte range. Then the
// transitive reduction, latest hazard first, over bitsets of the steps each step reaches.
void insert_barriers(ir::Program* p) {
  const size_t n = p->steps.size(), nb = p->buffers.size(), words = (n + 63) / 64;
  std::vector<Latest> buffers(nb);
  ArenaAccesses arena;
  std::vector<std::vector<uint64_t>> reach(n, std::vector<uint64_t>(words, 0));
  std::vector<int> reads, writes, hazards;
  auto range = [&](int b) {
    const ir::BufferDesc& d = p->buffers[size_t(b)];
    return std::make_pair(d.offset, d.offset + std::max<int64_t>(d.bytes(), 1));
  };
  auto in_arena = [&](int b) { return p->buffers[size_t(b)].kind == ir::BufferKind::kIntermediate; };
  for (size_t s = 0; s < n; ++s) {
    if (p->steps[s].is_marker()) {
      // A marker is a full barrier (ir/program.h): the next run starts with no hazards.
      p->steps[s].deps.clear();
      buffers.assign(nb, Latest{});
      arena = ArenaAccesses();
      continue;
    }
    ir::step_buffers(*p, s, &reads, &writes);
    hazards.clear();
    for (int b : reads) {
      if (in_arena(b)) arena.hazards(range(b).first, range(b).second, false, &hazards);
      else if (buffers[size_t(b)].writer >= 0) hazards.push_back(buffers[size_t(b)].writer);
    }
    for (int b : writes) {
      if (in_arena(b)) {
        arena.hazards(range(b).first, range(b).second, true, &hazards);
      } else {
        if (buffers[size_t(b)].writer >= 0) hazards.push_back(buffers[size_t(b)].writer);
        hazards.insert(hazards.end(), buffers[size_t(b)].readers.begin(), buffers[size_t(b)].readers.end());
      }
    }
    std::sort(hazards.rbegin(), hazards.rend());
    hazards.erase(std::unique(hazards.begin(), hazards.end()), hazards.end());
    std::vector<int> deps;
    std::vector<uint64_t>& mine = reach[s];
    for (int t : hazards) {
      if (t == int(s) || (mine[size_t(t) / 64] >> (size_t(t) % 64) & 1)) continue;
      deps.push_back(t);
      mine[size_t(t) / 64] |= uint64_t(1) << (size_t(t) % 64);
      const std::vector<uint64_t>& theirs = reach[size_t(t)];
      for (size_t w = 0; w < words; ++w) mine[w] |= theirs[w];
    }
    std::sort(deps.begin(), deps.end());
    p->steps[s].deps = deps;
    for (int b : reads) {
      if (in_arena(b)) arena.read(range(b).first, range(b).second, int(s));
      else buffers[size_t(b)].readers.push_back(int(s));
    }
    for (int b : writes) {
      if (in_arena(b)) arena.write(range(b).first, range(b).second, int(s));
      else buffers[size_t(b)] = Latest{int(s), {}};
    }
  }
}

}  // namespace kiln::passes

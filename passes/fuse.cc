#include "passes/fuse.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <unordered_set>

#include "absl/strings/str_cat.h"
#include "passes/lower.h"

namespace kiln::passes {
namespace {

using ir::Graph;
using ir::IndexMap;
using ir::Node;
using ir::NodeId;
using ir::Op;

struct Read {
  NodeId node;
  IndexMap map;
  // Read at run-time positions (a gather) or by the copy kernel that runs before a scatter's:
  // never a value the reader's loop could compute itself, so never merged into the reader.
  bool indexed = false;
};

// A constant or a param: one value for every element.
bool is_scalar_source(const Graph& g, NodeId x) { return g.node(x).op == Op::kConst || g.node(x).op == Op::kParam; }

// Whether the operand chain of a contraction is cheap enough to recompute inside its tiles:
// movement ops and a few cheap elementwise ops (casts, negation, abs, arithmetic or max/min with
// a constant: scaling, shifting, relu) over memory or constants.
bool cheap_operand(const Graph& g, NodeId id, const std::vector<bool>& mat, NodeId* first_costly, int budget = 4) {
  const Node& n = g.node(id);
  if (n.op == Op::kInput || n.op == Op::kConst || n.op == Op::kParam || mat[id]) return true;
  if (ir::is_movement(n.op) && n.op != Op::kConcat) return cheap_operand(g, n.inputs[0], mat, first_costly, budget);
  bool cheap_unary = n.op == Op::kCast || n.op == Op::kNeg || n.op == Op::kAbs;
  bool cheap_binary = (n.op == Op::kAdd || n.op == Op::kSub || n.op == Op::kMul || n.op == Op::kDiv ||
                       n.op == Op::kMax || n.op == Op::kMin) &&
                      (is_scalar_source(g, n.inputs[0]) || is_scalar_source(g, n.inputs[1]));
  if (budget > 0 && (cheap_unary || cheap_binary)) {
    NodeId x = cheap_unary || is_scalar_source(g, n.inputs[1]) ? n.inputs[0] : n.inputs[1];
    return cheap_operand(g, x, mat, first_costly, budget - 1);
  }
  *first_costly = id;
  return false;
}

constexpr int kMaxInlineDepth = 256;

class Fuser {
 public:
  Fuser(const Graph& g, const ir::TargetInfo& t, bool enable) : g_(g), t_(t), enable_(enable) {}

  FusionPlan run() {
    std::vector<bool> mat(g_.size(), false);
    for (NodeId o : g_.outputs())
      if (g_.node(o).op != Op::kInput) mat[o] = true;
    for (size_t i = 0; i < g_.size(); ++i) {
      const Node& n = g_.node(NodeId(i));
      if (ir::is_reduce(n.op) || n.op == Op::kDot || n.op == Op::kAttention || n.op == Op::kScatter ||
          n.op == Op::kSegmentReduce)
        mat[i] = true;
      if (!enable_ && (ir::is_elementwise(n.op))) mat[i] = true;
    }
    for (size_t i = 0; i < g_.size(); ++i) {
      const Node& n = g_.node(NodeId(i));
      if (n.op != Op::kDot && n.op != Op::kAttention) continue;
      // An attention's bias is read once per score, so any elementwise form of it is inlined.
      for (size_t j = 0; j < std::min<size_t>(n.inputs.size(), 3); ++j) {
        NodeId x = n.inputs[j];
        NodeId costly = -1;
        if (!cheap_operand(g_, x, mat, &costly)) {
          mat[costly] = true;
          plan_.decisions.push_back(absl::StrCat("materialize %", costly, ": matmul operand too costly to recompute per tile"));
        } else if (t_.is_gpu && ir::is_movement(g_.node(x).op) && !reads_as_one_view(g_, x) &&
                   !reads_windows(g_, x)) {
          // One copy kernel instead of index arithmetic per element in every tile. Sliding windows
          // (a convolution's input) stay index arithmetic: their copy would be an im2col matrix
          // K times the input's size, so the tiles read the padded windows in place (implicit GEMM).
          // The copy is taken below a broadcast (a matmul's batch expand), which stays a view of it.
          NodeId c = x;
          while (g_.node(c).op == Op::kExpand && ir::is_movement(g_.node(g_.node(c).inputs[0]).op))
            c = g_.node(c).inputs[0];
          mat[c] = true;
          plan_.decisions.push_back(absl::StrCat("materialize %", c, ": ", n.op == Op::kDot ? "matmul" : "attention",
                                                 " operand is not one strided view"));
        }
      }
    }
    // A gather reads its source at positions known only at run time, so the source is in memory:
    // the first node below the gather's movement ops (those fold into the gather's load).
    // So is a segment_reduce's data: each segment reads rows the offsets name.
    for (size_t i = 0; i < g_.size(); ++i) {
      if (!ir::is_gather(g_.node(NodeId(i)).op) && !ir::is_segment(g_.node(NodeId(i)).op)) continue;
      NodeId src = g_.node(NodeId(i)).inputs[0];
      while (is_reindexing(g_.node(src).op)) src = g_.node(src).inputs[0];
      if (g_.node(src).op != Op::kInput && !mat[size_t(src)]) {
        mat[size_t(src)] = true;
        plan_.decisions.push_back(absl::StrCat("materialize %", src, ": ",
                                               ir::is_gather(g_.node(NodeId(i)).op) ? "gathered from" : "segments read",
                                               " at run-time positions"));
      }
    }
    // A collective runs outside kernels (a step of its own, ir/program.h): it reads its operand
    // from memory, whole and dense, and its result is in memory.
    for (size_t i = 0; i < g_.size(); ++i) {
      if (!ir::is_collective(g_.node(NodeId(i)).op)) continue;
      mat[i] = true;
      const NodeId x = g_.node(NodeId(i)).inputs[0];
      if (g_.node(x).op != Op::kInput && !mat[size_t(x)]) {
        mat[size_t(x)] = true;
        plan_.decisions.push_back(absl::StrCat("materialize %", x, ": operand of a collective"));
      }
    }
    // Inlined expressions stay at most kMaxInlineDepth deep: lowering and code generation walk
    // them recursively, and a 10,000-op chain in one kernel would overflow the stack.
    std::vector<int> depth(g_.size(), 0);
    for (size_t i = 0; i < g_.size(); ++i) {
      const Node& n = g_.node(NodeId(i));
      if (mat[i] || n.op == Op::kInput) continue;
      for (NodeId x : n.inputs) depth[i] = std::max(depth[i], depth[x] + 1);
      if (depth[i] >= kMaxInlineDepth) {
        mat[i] = true;
        depth[i] = 0;
        depth_split_.insert(NodeId(i));
        plan_.decisions.push_back(absl::StrCat("materialize %", i, ": ", kMaxInlineDepth, " ops deep"));
      }
    }
    buffer_of_.assign(g_.size(), -1);
    for (size_t i = 0; i < g_.size(); ++i)
      if (mat[i] || g_.node(NodeId(i)).op == Op::kInput) buffer_of_[i] = int(i);
    for (size_t i = 0; i < g_.size(); ++i)
      if (mat[i]) groups_.push_back(Group{{NodeId(i)}, space_of(g_, NodeId(i))});
    alive_.assign(groups_.size(), true);
    dirty_.assign(groups_.size(), true);
    version_.assign(groups_.size(), 0);
    if (enable_) {
      merge_vertical();
      merge_horizontal();
    } else {
      analyze();
    }
    order();
    plan_.stored.assign(g_.size(), false);
    for (NodeId o : g_.outputs()) plan_.stored[o] = g_.node(o).op != Op::kInput;
    for (size_t gi = 0; gi < groups_.size(); ++gi)
      for (const Read& r : reads_[gi])
        if (g_.node(r.node).op != Op::kInput) plan_.stored[r.node] = true;
    plan_.groups = groups_;
    return std::move(plan_);
  }

 private:
  // Recomputes, for the groups changed since the last call, which materialized nodes they load
  // and at which maps; then who computes each node and who reads each group. Only changed groups
  // are lowered again, so a merge costs one lowering, not one per group.
  void analyze() {
    reads_.resize(groups_.size());
    dirty_.resize(groups_.size(), true);
    for (size_t gi = 0; gi < groups_.size(); ++gi) {
      if (!alive_[gi] || !dirty_[gi]) continue;
      if (!reads_in(groups_[gi], groups_[gi].space, &reads_[gi]) && plan_.status.ok())
        plan_.status = absl::InternalError(absl::StrCat("fuse: the kernel of %", groups_[gi].computed.back(),
                                                        " does not lower over its own space"));
      dirty_[gi] = false;
    }
    group_of_.assign(g_.size(), -1);
    for (size_t gi = 0; gi < groups_.size(); ++gi)
      if (alive_[gi])
        for (NodeId n : groups_[gi].computed) group_of_[n] = int(gi);
    succ_.assign(groups_.size(), {});
    pred_.assign(groups_.size(), {});
    for (size_t k = 0; k < groups_.size(); ++k) {
      if (!alive_[k]) continue;
      for (const Read& r : reads_[k]) {
        int p = group_of_[r.node];
        if (p >= 0 && p != int(k)) {
          succ_[size_t(p)].push_back(int(k));
          pred_[k].push_back(p);
        }
      }
    }
    for (auto* lists : {&succ_, &pred_})
      for (std::vector<int>& s : *lists) {
        std::sort(s.begin(), s.end());
        s.erase(std::unique(s.begin(), s.end()), s.end());
      }
  }

  // The lowering of `group` over the loops of `space` (its own space, or the space a merge
  // would give it): the loads of materialized nodes it makes, and whether it succeeds at all.
  bool reads_in(const Group& group, const Space& space, std::vector<Read>* out) const {
    out->clear();
    if (group.space.collective) {  // no kernel: it reads its operand's buffer as a whole
      out->push_back({g_.node(group.computed.back()).inputs[0], IndexMap{}, true});
      return space == group.space;
    }
    LowerRequest req;
    req.graph = &g_;
    req.space = space;
    req.computed = group.computed;
    for (NodeId n : group.computed)
      if (buffer_of_[n] >= 0) req.stores.push_back(n);
    req.buffer_of = &buffer_of_;
    req.on_read = [out](NodeId n, const IndexMap& m, bool indexed) { out->push_back({n, m, indexed}); };
    return lower_group(req).ok();
  }

  const std::vector<int>& successors(int gi) const { return succ_[size_t(gi)]; }

  // Whether a path of reads leads from a group in `from` to a group marked in `to`, leaving out
  // the direct reads of group `skip_direct` (-1: none; a direct read is what a vertical merge
  // absorbs, so only a path through another group stops it).
  bool path(const std::vector<int>& from, const std::vector<char>& to, int skip_direct = -1) const {
    std::vector<char> seen(groups_.size(), 0);
    std::vector<int> stack;
    for (int f : from)
      for (int s : successors(f))
        if (s != skip_direct) stack.push_back(s);
    while (!stack.empty()) {
      int x = stack.back();
      stack.pop_back();
      if (to[size_t(x)]) return true;
      if (seen[size_t(x)]) continue;
      seen[size_t(x)] = 1;
      for (int s : successors(x)) stack.push_back(s);
    }
    return false;
  }
  std::vector<char> only(int g) const {
    std::vector<char> m(groups_.size(), 0);
    m[size_t(g)] = 1;
    return m;
  }
  bool indirect_path(int from, int to) const { return path({from}, only(to), to); }

  // The space the merged kernel would have, or false when H cannot merge into G.
  //
  // Lowering the merged kernel lowers G's roots at their natural maps in the merged space and
  // requires each of H's values (reductions above all) to be reached at its natural map there.
  // So G's reads of H are taken from lowering G over the loops of the candidate space, not from
  // G's own loops: a read that is the identity in G's own space goes through the same movement
  // ops from a different root map in the merged one, and only lowering says which map that is.
  bool merged_space(int h, int gidx, Space* out, std::string* why) const {
    for (NodeId n : groups_[size_t(h)].computed)
      if (depth_split_.count(n)) {
        *why = absl::StrCat("expressions stay under ", kMaxInlineDepth, " ops deep");
        return false;
      }
    const Space& SH = groups_[h].space;
    const Space& SG = groups_[gidx].space;
    auto all_natural = [&](const Space& s) {
      std::vector<Read> merged_reads;
      const std::vector<Read>* reads = &reads_[gidx];
      if (!(s == SG)) {
        if (!reads_in(groups_[gidx], s, &merged_reads)) return false;
        reads = &merged_reads;
      }
      for (const Read& r : *reads) {
        if (group_of_[r.node] != h) continue;
        if (r.indexed) return false;
        IndexMap want;
        if (!s.natural_map(g_.node(r.node).shape, &want) || !(want == r.map)) return false;
      }
      return true;
    };
    auto row_ok = [&](const Space& s) {
      if (s.reduce_count() <= t_.max_fused_row) return true;
      *why = absl::StrCat("reduced size ", s.reduce_count(), " exceeds the fused-row limit ", t_.max_fused_row);
      return false;
    };
    if (SG.collective || SH.collective) {
      *why = "a collective runs outside kernels";
      return false;
    }
    if (SG.attention) {
      *why = "an attention kernel only inlines cheap operands; this one must be stored";
      return false;
    }
    if (SH.scatter) {
      *why = "a scatter writes its result at run-time positions, after a copy of its data";
      return false;
    }
    if (SG.dot) {
      // H's nodes are in memory for a reason (a graph output, or an operand too costly to
      // recompute per tile), and a contraction kernel stores only values of its result's space:
      // a value indexed by the contraction axis cannot be stored from it. Cheap operands are
      // never groups of their own; they are inlined into the tiles by lowering.
      *why = "a matmul kernel only inlines cheap operands; this one must be stored";
      return false;
    }
    if (!SH.has_reduce()) {
      if (all_natural(SG)) {
        *out = SG;
        out->segment = SG.segment || SH.segment;
        return true;
      }
      *why = "read through a view the consumer's loop cannot produce";
      return false;
    }
    if (!SG.has_reduce()) {
      // The consumer iterates the reduction's outputs (in any shape with as many elements) and
      // reads each at the element it computes.
      if (shape_numel(SG.full) == shape_numel(SH.outer) && all_natural(SH)) {
        *out = SH;
        return true;
      }
      // The consumer iterates the reduction's input space (a normalization).
      if (!SH.dot && !SH.attention && SG.full == SH.full && all_natural(SH)) {
        if (!row_ok(SH)) return false;
        *out = SH;
        return true;
      }
      *why = "the consumer reads the reduction at elements other than those its loop computes";
      return false;
    }
    if (SG == SH && !SH.dot && !SH.attention && all_natural(SG)) {
      if (!row_ok(SG)) return false;
      *out = SG;
      return true;
    }
    *why = "reductions over different spaces";
    return false;
  }

  // Vertical merging to a fixed point. A worklist replaces restarting the scan after each merge:
  // producers are taken latest first, as the scan took them, and a merge puts back only the
  // groups whose pairs it changed (the merged group and its producers); a pair refused before is
  // refused again until one of its groups changes. So each merge costs work near the size of
  // the groups it touches, not of the whole graph.
  void merge_vertical() {
    analyze();
    last_.assign(groups_.size(), -1);
    std::set<std::pair<int, int>, std::greater<>> queue;  // (last node, group), latest first
    for (size_t i = 0; i < groups_.size(); ++i)
      if (alive_[i]) {
        last_[i] = *std::max_element(groups_[i].computed.begin(), groups_[i].computed.end());
        queue.insert({last_[i], int(i)});
      }
    while (!queue.empty()) {
      const int h = queue.begin()->second;
      queue.erase(queue.begin());
      if (!alive_[size_t(h)]) continue;
      const std::vector<int> readers = successors(h);
      for (int gidx : readers) {
        auto memo = refused_.find({h, gidx});
        if (memo != refused_.end() && memo->second == std::make_pair(version_[size_t(h)], version_[size_t(gidx)])) continue;
        Space s;
        std::string why;
        bool ok = merged_space(h, gidx, &s, &why);
        if (ok && s.segment && s.has_reduce()) {
          // (the GPU renderers stage a reduction's rows before their loops: a segment's rows,
          // chosen inside its own loop, would all be read at the first)
          ok = false;
          why = "a segment reduction is stored before a reduction reads it";
        }
        if (ok && indirect_path(h, gidx)) {
          ok = false;
          why = "merging would create a cycle";
        }
        if (!ok) {
          note(absl::StrCat("keep %", last_[size_t(h)], " apart from %", last_[size_t(gidx)], ": ", why));
          refused_[{h, gidx}] = {version_[size_t(h)], version_[size_t(gidx)]};
          continue;
        }
        note(absl::StrCat("fuse %", last_[size_t(h)], " (", groups_[size_t(h)].space.has_reduce() ? "reduction" : "elementwise",
                          ") into the kernel of %", last_[size_t(gidx)]));
        queue.erase({last_[size_t(gidx)], gidx});
        absorb(gidx, h, s);
        relink(gidx, h);
        last_[size_t(gidx)] = std::max(last_[size_t(gidx)], last_[size_t(h)]);
        queue.insert({last_[size_t(gidx)], gidx});
        for (int p : pred_[size_t(gidx)]) queue.insert({last_[size_t(p)], p});
        break;
      }
    }
  }

  // After group `g` absorbed `h`: g's reads lowered again, h's nodes now g's, and the reader /
  // producer lists of every group next to either updated (nothing else changes).
  void relink(int g, int h) {
    auto drop = [](std::vector<int>& v, int x) {
      auto it = std::lower_bound(v.begin(), v.end(), x);
      if (it != v.end() && *it == x) v.erase(it);
    };
    auto add = [](std::vector<int>& v, int x) {
      auto it = std::lower_bound(v.begin(), v.end(), x);
      if (it == v.end() || *it != x) v.insert(it, x);
    };
    for (NodeId n : groups_[size_t(g)].computed) group_of_[n] = g;
    for (int x : {g, h}) {
      for (int p : pred_[size_t(x)]) drop(succ_[size_t(p)], x);
      for (int r : succ_[size_t(x)]) drop(pred_[size_t(r)], x);
    }
    std::vector<int> readers = succ_[size_t(g)];
    for (int r : succ_[size_t(h)]) add(readers, r);
    drop(readers, g);
    drop(readers, h);
    if (!reads_in(groups_[size_t(g)], groups_[size_t(g)].space, &reads_[size_t(g)]) && plan_.status.ok())
      plan_.status = absl::InternalError(absl::StrCat("fuse: the kernel of %", groups_[size_t(g)].computed.back(),
                                                      " does not lower over its own space"));
    dirty_[size_t(g)] = false;
    std::vector<int> producers;
    for (const Read& r : reads_[size_t(g)]) {
      int p = group_of_[r.node];
      if (p >= 0 && p != g) add(producers, p);
    }
    succ_[size_t(h)].clear();
    pred_[size_t(h)].clear();
    succ_[size_t(g)] = readers;
    pred_[size_t(g)] = producers;
    for (int p : producers) add(succ_[size_t(p)], g);
    for (int r : readers) add(pred_[size_t(r)], g);
  }

  // Group `into` takes over group `from`'s nodes and gets space `s`.
  void absorb(int into, int from, const Space& s) {
    Group& G = groups_[size_t(into)];
    G.space = s;
    for (NodeId n : groups_[size_t(from)].computed) G.computed.push_back(n);
    std::sort(G.computed.begin(), G.computed.end());
    groups_[size_t(from)].computed.clear();
    alive_[size_t(from)] = false;
    dirty_[size_t(into)] = true;
    ++version_[size_t(into)];
  }

  // Independent kernels over the same space join: each group absorbs, in index order, the later
  // groups it has no path to or from (counting the groups it absorbed already).
  void merge_horizontal() {
    analyze();
    for (size_t a = 0; a < groups_.size(); ++a) {
      if (!alive_[a]) continue;
      std::vector<int> joined = {int(a)};
      std::vector<char> in_joined(groups_.size(), 0);
      in_joined[a] = 1;
      for (size_t b = a + 1; b < groups_.size(); ++b) {
        if (!alive_[b]) continue;
        const Space &sa = groups_[a].space, &sb = groups_[b].space;
        if (sa.dot || sb.dot || sa.attention || sb.attention || sa.scatter || sb.scatter || sa.segment ||
            sb.segment || sa.collective || sb.collective || sa.full != sb.full)
          continue;
        // Same space, or an elementwise kernel joining a reduction over its full shape (its values
        // become inner-level stores of the reduction kernel).
        if (!(sa == sb) && sa.has_reduce() && sb.has_reduce()) continue;
        Space merged = sa.has_reduce() ? sa : sb;
        if (merged.has_reduce() && merged.reduce_count() > t_.max_fused_row && !(sa == sb)) continue;
        if (path(joined, only(int(b))) || path({int(b)}, in_joined)) continue;
        note(absl::StrCat("fuse independent kernels of %", groups_[a].computed.back(), " and %",
                          groups_[b].computed.back(), " horizontally (same iteration space ",
                          shape_str(groups_[a].space.full), ")"));
        absorb(int(a), int(b), merged);
        joined.push_back(int(b));
        in_joined[b] = 1;
      }
      if (joined.size() > 1) analyze();
    }
  }

  // Topological order of the live groups (producers first); a cycle is an internal error.
  void order() {
    analyze();
    size_t n = groups_.size();
    std::vector<int> indeg(n, 0);
    size_t live = 0;
    for (size_t k = 0; k < n; ++k) {
      if (!alive_[k]) continue;
      ++live;
      for (int s : succ_[k]) indeg[size_t(s)]++;
    }
    std::vector<int> ready, out;
    for (size_t k = 0; k < n; ++k)
      if (alive_[k] && !indeg[k]) ready.push_back(int(k));
    while (!ready.empty()) {
      std::sort(ready.begin(), ready.end(), std::greater<int>());
      int x = ready.back();
      ready.pop_back();
      out.push_back(x);
      for (int s : succ_[size_t(x)])
        if (--indeg[size_t(s)] == 0) ready.push_back(s);
    }
    if (out.size() != live && plan_.status.ok())
      plan_.status = absl::InternalError(absl::StrCat("fuse: the kernels' reads form a cycle (", live - out.size(),
                                                      " of ", live, " kernels cannot be ordered)"));
    std::vector<Group> sorted;
    std::vector<std::vector<Read>> reads;
    for (int x : out) {
      sorted.push_back(groups_[size_t(x)]);
      reads.push_back(reads_[size_t(x)]);
    }
    groups_ = std::move(sorted);
    reads_ = std::move(reads);
    alive_.assign(groups_.size(), true);
    dirty_.assign(groups_.size(), false);
    version_.assign(groups_.size(), 0);
    refused_.clear();
    group_of_.assign(g_.size(), -1);
    for (size_t gi = 0; gi < groups_.size(); ++gi)
      for (NodeId nd : groups_[gi].computed) group_of_[nd] = int(gi);
  }

  void note(std::string s) {
    if (noted_.insert(s).second) plan_.decisions.push_back(std::move(s));
  }

  const Graph& g_;
  const ir::TargetInfo& t_;
  bool enable_;
  std::vector<int> buffer_of_;
  std::vector<Group> groups_;
  std::vector<bool> alive_, dirty_;  // merged-away groups stay in place, empty (stable indices)
  std::vector<int> version_;         // bumped when a group changes (invalidates refused_)
  std::vector<std::vector<Read>> reads_;
  std::vector<int> group_of_;
  std::vector<std::vector<int>> succ_, pred_;  // readers / producers of each group, sorted
  std::vector<int> last_;                      // latest node of each group (merge order)
  std::map<std::pair<int, int>, std::pair<int, int>> refused_;  // (h, g) -> versions when refused
  std::unordered_set<std::string> noted_;
  std::set<NodeId> depth_split_;  // materialized to bound expression depth: never inlined again
  FusionPlan plan_;
};

}  // namespace

FusionPlan fuse(const ir::Graph& g, const ir::TargetInfo& target, bool enable_fusion) {
  return Fuser(g, target, enable_fusion).run();
}

std::vector<ir::NodeId> group_members(const ir::Graph& g, const FusionPlan& plan, const Group& grp) {
  // Sets, not per-node vectors: this runs once per group, and a graph may have thousands.
  const std::unordered_set<ir::NodeId> own(grp.computed.begin(), grp.computed.end());
  std::unordered_set<ir::NodeId> seen;
  std::vector<ir::NodeId> m;
  std::vector<ir::NodeId> stack = grp.computed;
  while (!stack.empty()) {
    ir::NodeId n = stack.back();
    stack.pop_back();
    if (!seen.insert(n).second) continue;
    if (!own.count(n) && (plan.stored[size_t(n)] || g.node(n).op == ir::Op::kInput)) continue;
    m.push_back(n);
    for (ir::NodeId x : g.node(n).inputs) stack.push_back(x);
  }
  std::sort(m.begin(), m.end());
  return m;
}

}  // namespace kiln::passes

#include "passes/fuse.h"

#include <algorithm>
#include <functional>
#include <set>

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
};

// Whether the operand chain of a contraction is cheap enough to recompute inside its tiles:
// movement ops and a few cheap elementwise ops (casts, negation, abs, arithmetic or max/min with
// a constant: scaling, shifting, relu) over memory or constants.
bool cheap_operand(const Graph& g, NodeId id, const std::vector<bool>& mat, NodeId* first_costly, int budget = 4) {
  const Node& n = g.node(id);
  if (n.op == Op::kInput || n.op == Op::kConst || mat[id]) return true;
  if (ir::is_movement(n.op) && n.op != Op::kConcat) return cheap_operand(g, n.inputs[0], mat, first_costly, budget);
  bool cheap_unary = n.op == Op::kCast || n.op == Op::kNeg || n.op == Op::kAbs;
  bool cheap_binary = (n.op == Op::kAdd || n.op == Op::kSub || n.op == Op::kMul || n.op == Op::kDiv ||
                       n.op == Op::kMax || n.op == Op::kMin) &&
                      (g.node(n.inputs[0]).op == Op::kConst || g.node(n.inputs[1]).op == Op::kConst);
  if (budget > 0 && (cheap_unary || cheap_binary)) {
    NodeId x = cheap_unary || g.node(n.inputs[1]).op == Op::kConst ? n.inputs[0] : n.inputs[1];
    return cheap_operand(g, x, mat, first_costly, budget - 1);
  }
  *first_costly = id;
  return false;
}

class Fuser {
 public:
  Fuser(const Graph& g, const ir::TargetInfo& t, bool enable) : g_(g), t_(t), enable_(enable) {}

  FusionPlan run() {
    std::vector<bool> mat(g_.size(), false);
    for (NodeId o : g_.outputs())
      if (g_.node(o).op != Op::kInput) mat[o] = true;
    for (size_t i = 0; i < g_.size(); ++i) {
      const Node& n = g_.node(NodeId(i));
      if (ir::is_reduce(n.op) || n.op == Op::kDot || n.op == Op::kAttention) mat[i] = true;
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
        } else if (t_.is_gpu && ir::is_movement(g_.node(x).op) && !reads_as_one_view(g_, x)) {
          // One copy kernel instead of index arithmetic per element in every tile.
          mat[x] = true;
          plan_.decisions.push_back(absl::StrCat("materialize %", x, ": ", n.op == Op::kDot ? "matmul" : "attention",
                                                 " operand is not one strided view"));
        }
      }
    }
    buffer_of_.assign(g_.size(), -1);
    for (size_t i = 0; i < g_.size(); ++i)
      if (mat[i] || g_.node(NodeId(i)).op == Op::kInput) buffer_of_[i] = int(i);
    for (size_t i = 0; i < g_.size(); ++i)
      if (mat[i]) groups_.push_back(Group{{NodeId(i)}, space_of(g_, NodeId(i))});
    if (enable_) {
      while (merge_vertical()) {
      }
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
  // Recomputes which materialized nodes each group loads, and at which maps.
  void analyze() {
    reads_.assign(groups_.size(), {});
    group_of_.assign(g_.size(), -1);
    for (size_t gi = 0; gi < groups_.size(); ++gi)
      for (NodeId n : groups_[gi].computed) group_of_[n] = int(gi);
    for (size_t gi = 0; gi < groups_.size(); ++gi) {
      bool ok = reads_in(groups_[gi], groups_[gi].space, &reads_[gi]);
      (void)ok;  // groups are formed so that lowering succeeds
    }
  }

  // The loads that lowering `group` over the loops of `space` makes (the group's own space, or
  // the space a merge would give it), and whether that lowering succeeds at all.
  bool reads_in(const Group& group, const Space& space, std::vector<Read>* out) const {
    out->clear();
    LowerRequest req;
    req.graph = &g_;
    req.space = space;
    req.computed = group.computed;
    for (NodeId n : group.computed)
      if (buffer_of_[n] >= 0) req.stores.push_back(n);
    req.buffer_of = &buffer_of_;
    req.on_read = [out](NodeId n, const IndexMap& m) { out->push_back({n, m}); };
    return lower_group(req).ok();
  }

  std::set<int> successors(int gi) const {
    std::set<int> s;
    for (size_t k = 0; k < groups_.size(); ++k)
      for (const Read& r : reads_[k])
        if (group_of_[r.node] == gi && int(k) != gi) s.insert(int(k));
    return s;
  }

  // Whether `to` is reachable from `from` through at least one intermediate group.
  bool indirect_path(int from, int to) const {
    std::vector<bool> seen(groups_.size(), false);
    std::vector<int> stack;
    for (int s : successors(from))
      if (s != to) stack.push_back(s);
    while (!stack.empty()) {
      int x = stack.back();
      stack.pop_back();
      if (x == to) return true;
      if (seen[x]) continue;
      seen[x] = true;
      for (int s : successors(x)) stack.push_back(s);
    }
    return false;
  }

  bool any_path(int from, int to) const {
    std::vector<bool> seen(groups_.size(), false);
    std::vector<int> stack = {from};
    while (!stack.empty()) {
      int x = stack.back();
      stack.pop_back();
      if (x == to) return true;
      if (seen[x]) continue;
      seen[x] = true;
      for (int s : successors(x)) stack.push_back(s);
    }
    return false;
  }

  // The space the merged kernel would have, or false when H cannot merge into G.
  //
  // Lowering the merged kernel lowers G's roots at their natural maps in the merged space and
  // requires each of H's values (reductions above all) to be reached at its natural map there.
  // So G's reads of H are taken from lowering G over the loops of the candidate space, not from
  // G's own loops: a read that is the identity in G's own space goes through the same movement
  // ops from a different root map in the merged one, and only lowering says which map that is.
  bool merged_space(int h, int gidx, Space* out, std::string* why) const {
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
    if (SG.attention) {
      *why = "an attention kernel only inlines cheap operands; this one must be stored";
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

  bool merge_vertical() {
    analyze();
    // Producers latest first, so that chains collapse from the consumer end.
    std::vector<int> cand(groups_.size());
    for (size_t i = 0; i < cand.size(); ++i) cand[i] = int(i);
    auto last = [&](int gi) { return *std::max_element(groups_[gi].computed.begin(), groups_[gi].computed.end()); };
    std::sort(cand.begin(), cand.end(), [&](int a, int b) { return last(a) > last(b); });
    for (int h : cand) {
      std::set<int> readers = successors(h);
      for (int gidx : readers) {
        Space s;
        std::string why;
        if (!merged_space(h, gidx, &s, &why)) {
          note(absl::StrCat("keep %", last(h), " apart from %", last(gidx), ": ", why));
          continue;
        }
        if (indirect_path(h, gidx)) {
          note(absl::StrCat("keep %", last(h), " apart from %", last(gidx), ": merging would create a cycle"));
          continue;
        }
        note(absl::StrCat("fuse %", last(h), " (", groups_[h].space.has_reduce() ? "reduction" : "elementwise",
                          ") into the kernel of %", last(gidx)));
        Group& G = groups_[gidx];
        G.space = s;
        for (NodeId n : groups_[h].computed) G.computed.push_back(n);
        std::sort(G.computed.begin(), G.computed.end());
        groups_.erase(groups_.begin() + h);
        return true;
      }
    }
    return false;
  }

  void merge_horizontal() {
    analyze();
    for (size_t a = 0; a < groups_.size(); ++a) {
      for (size_t b = a + 1; b < groups_.size(); ++b) {
        const Space &sa = groups_[a].space, &sb = groups_[b].space;
        if (sa.dot || sb.dot || sa.attention || sb.attention || sa.full != sb.full) continue;
        // Same space, or an elementwise kernel joining a reduction over its full shape (its values
        // become inner-level stores of the reduction kernel).
        if (!(sa == sb) && sa.has_reduce() && sb.has_reduce()) continue;
        Space merged = sa.has_reduce() ? sa : sb;
        if (any_path(int(a), int(b)) || any_path(int(b), int(a))) continue;
        if (merged.has_reduce() && merged.reduce_count() > t_.max_fused_row && !(sa == sb)) continue;
        note(absl::StrCat("fuse independent kernels of %", groups_[a].computed.back(), " and %",
                          groups_[b].computed.back(), " horizontally (same iteration space ",
                          shape_str(groups_[a].space.full), ")"));
        groups_[a].space = merged;
        for (NodeId n : groups_[b].computed) groups_[a].computed.push_back(n);
        std::sort(groups_[a].computed.begin(), groups_[a].computed.end());
        groups_.erase(groups_.begin() + b);
        analyze();
        --b;
      }
    }
  }

  // Topological order of groups (producers first).
  void order() {
    analyze();
    size_t n = groups_.size();
    std::vector<int> indeg(n, 0);
    std::vector<std::set<int>> succ(n);
    for (size_t k = 0; k < n; ++k) {
      succ[k] = successors(int(k));
    }
    for (size_t k = 0; k < n; ++k)
      for (int s : succ[k]) indeg[s]++;
    std::vector<int> ready, out;
    for (size_t k = 0; k < n; ++k)
      if (!indeg[k]) ready.push_back(int(k));
    while (!ready.empty()) {
      std::sort(ready.begin(), ready.end(), std::greater<int>());
      int x = ready.back();
      ready.pop_back();
      out.push_back(x);
      for (int s : succ[x])
        if (--indeg[s] == 0) ready.push_back(s);
    }
    std::vector<Group> sorted;
    for (int x : out) sorted.push_back(groups_[x]);
    groups_ = sorted;
    analyze();
  }

  void note(std::string s) {
    if (std::find(plan_.decisions.begin(), plan_.decisions.end(), s) == plan_.decisions.end())
      plan_.decisions.push_back(std::move(s));
  }

  const Graph& g_;
  const ir::TargetInfo& t_;
  bool enable_;
  std::vector<int> buffer_of_;
  std::vector<Group> groups_;
  std::vector<std::vector<Read>> reads_;
  std::vector<int> group_of_;
  FusionPlan plan_;
};

}  // namespace

FusionPlan fuse(const ir::Graph& g, const ir::TargetInfo& target, bool enable_fusion) {
  return Fuser(g, target, enable_fusion).run();
}

}  // namespace kiln::passes

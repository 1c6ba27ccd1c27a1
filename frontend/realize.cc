// Realization: turn the lazy nodes behind some tensors into one ir::Graph and run it.
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "frontend/capture.h"
#include "frontend/fast_tls.h"
#include "frontend/lazy.h"
#include "ir/graph.h"
#include "ir/params.h"
#include "replay/compile_or_replay.h"
#include "replay/executable_cache.h"
#include "support/options.h"
#include "support/trace.h"

namespace kiln::detail {
namespace {

std::mutex& realize_mutex() {
  static std::mutex m;
  return m;
}

// What realizing some roots visits, in the post-order a graph is built in: the unrealized
// history, with each realized node (a graph input) once and each input buffer once.
struct Walk {
  std::vector<LazyNode*> visits;
  std::vector<int32_t> input_pos;  // per visit: the buffer's input position, or -1
  std::vector<std::shared_ptr<runtime::Buffer>> inputs;
  absl::flat_hash_map<const runtime::Buffer*, int32_t> positions;  // of inputs, once there are many
  std::vector<int32_t> roots;      // visit index of each root
  uint64_t hash = 0;               // of everything a graph built from the visits depends on
  std::vector<std::pair<LazyNode*, size_t>> stack;

  void clear() {
    visits.clear();
    input_pos.clear();
    inputs.clear();
    positions.clear();
    roots.clear();
    hash = 0;
  }
};

// Cheap within a node (rotate and xor); each node ends with one multiply (spread()).
inline uint64_t mix(uint64_t h, uint64_t v) { return ((h << 7) | (h >> 57)) ^ v; }
inline uint64_t spread(uint64_t h) { return (h ^ (h >> 29)) * 0xff51afd7ed558ccdULL; }

uint64_t scalar_bits(const Scalar& s) {
  uint64_t bits;
  std::memcpy(&bits, &s.f, sizeof bits);
  return s.is_int ? uint64_t(s.i) ^ 0x5bd1e995ULL : bits;
}

// Whether a lazy node's value may become a param (ir::lift_params decides; this is a superset).
bool may_be_param(const LazyNode& n) { return n.op == ir::Op::kConst && is_float(n.dtype); }

// Walks the unrealized history of `roots` (caller holds realize_mutex()). Each walk marks the
// nodes it visits with its own number; a node's collected_id is then its visit index.
void walk(const std::vector<NodePtr>& roots, Walk* w) {
  static uint64_t collection = 0;
  const uint64_t mark = ++collection;
  auto seen = [&](const LazyNode* n) { return n->collected == mark; };
  // The input position of buffer `b` (a new one when it has none): a linear search while there
  // are few inputs (most graphs), a map beyond that (models with hundreds of weights).
  constexpr size_t kLinear = 16;
  auto buffer_position = [&](const std::shared_ptr<runtime::Buffer>& b) {
    if (w->inputs.size() <= kLinear) {
      for (size_t i = 0; i < w->inputs.size(); ++i)
        if (w->inputs[i] == b) return int32_t(i);
    } else if (auto it = w->positions.find(b.get()); it != w->positions.end()) {
      return it->second;
    }
    const int32_t pos = int32_t(w->inputs.size());
    w->inputs.push_back(b);
    if (w->inputs.size() == kLinear + 1)
      for (size_t i = 0; i < w->inputs.size(); ++i) w->positions[w->inputs[i].get()] = int32_t(i);
    else if (w->inputs.size() > kLinear + 1)
      w->positions[b.get()] = pos;
    return pos;
  };
  uint64_t h = 0x6b696c6eULL;
  auto& stack = w->stack;
  stack.clear();  // a walk that threw leaves its stack behind
  auto visit = [&](LazyNode* root) {
    if (seen(root)) return;
    stack.push_back({root, 0});
    while (!stack.empty()) {
      auto& [n, next] = stack.back();
      if (!n->buffer && next < n->inputs.size()) {
        LazyNode* in = n->inputs[next++].get();
        if (!seen(in)) stack.push_back({in, 0});
        continue;
      }
      int32_t pos = -1;
      if (!n->buffer && n->op == ir::Op::kInput)  // a while_loop / cond placeholder
        throw Error(absl::FailedPreconditionError(
            "while_loop/cond: a value of the function being traced was read on the host (to_vector, item, ...); "
            "the functions only record ops, their values exist on the device when the loop runs"));
      h = mix(h, uint64_t(n->dtype) << 8 | n->shape.size() << 16);
      for (int64_t d : n->shape) h = mix(h, uint64_t(d));
      if (n->buffer) {
        pos = buffer_position(n->buffer);
        h = mix(h, uint64_t(ir::Op::kInput) | uint64_t(pos) << 16);
      } else {
        h = mix(h, uint64_t(n->op) | uint64_t(n->inputs.size()) << 16 | uint64_t(n->ints.size()) << 32);
        for (const NodePtr& in : n->inputs) h = mix(h, uint64_t(in->collected_id));
        // Values that may be params (ir/params.h) stay out of the hash: walks that differ only
        // in them find one shortcut, whose match passes the new values.
        if (n->op != ir::Op::kRand && n->op != ir::Op::kRandn)
          for (int64_t v : n->ints) h = mix(h, uint64_t(v));
        if (!may_be_param(*n)) h = mix(h, scalar_bits(n->scalar));
        if (n->regions)
          for (const ir::Graph& r : *n->regions) h = mix(h, r.structural_hash());
      }
      h = spread(h);
      n->collected_id = int32_t(w->visits.size());
      n->collected = mark;
      w->visits.push_back(n);
      w->input_pos.push_back(pos);
      stack.pop_back();
    }
  };
  for (const NodePtr& r : roots) {
    visit(r.get());
    w->roots.push_back(r->collected_id);
    h = mix(h, uint64_t(r->collected_id));
  }
  w->hash = h;
}

// The graph a walk describes; ids[k] is the graph node of visit k (identical nodes are one).
// With `lift`, the values ir::lift_params chooses become params (a realize); without, every
// value stays in the graph (capture and export: the graph a user sees and ships).
ir::Graph build(const Walk& w, std::vector<ir::NodeId>* ids, bool lift) {
  ir::Graph g;
  ids->resize(w.visits.size());
  for (size_t k = 0; k < w.visits.size(); ++k) {
    const LazyNode* n = w.visits[k];
    ir::Node node;
    node.dtype = n->dtype;
    node.shape = n->shape;
    if (n->buffer) {
      node.op = ir::Op::kInput;
      node.ints = {w.input_pos[k]};
    } else {
      node.op = n->op;
      node.ints = n->ints;
      node.scalar = n->scalar;
      node.regions = n->regions;
      node.inputs.reserve(n->inputs.size());
      for (const NodePtr& in : n->inputs) node.inputs.push_back((*ids)[size_t(in->collected_id)]);
    }
    (*ids)[k] = g.add(std::move(node));
  }
  for (int32_t r : w.roots) g.add_output((*ids)[size_t(r)]);
  if (!lift) return g;
  std::vector<ir::NodeId> lifted;
  ir::Graph l = ir::lift_params(g, &lifted);
  for (ir::NodeId& id : *ids) id = lifted[size_t(id)];
  return l;
}

ir::Graph build_unlifted(const Walk& w) {
  std::vector<ir::NodeId> ids;
  return build(w, &ids, /*lift=*/false);
}

// A repeated realize (a loop recording the same ops each iteration) walks the same structure
// again. A shortcut remembers, for the walk's hash, the executable the last such walk used and
// the graph node of each visit; when every visit matches that graph node (op, dtype, shape,
// attributes, operands, input positions) the graph a build would make equals the executable's
// graph, so the realize runs it without building, hashing and comparing a graph.
struct Shortcut {
  std::weak_ptr<const replay::CompiledGraph> exe;
  std::vector<ir::NodeId> ids;
  size_t num_params = 0;
  uint64_t generation = 0;  // for replay::cache_reuse
  mutable std::vector<bool> param_set;  // matches()'s scratch
};

std::unordered_map<uint64_t, Shortcut>& shortcuts() {  // under realize_mutex()
  static auto* m = new std::unordered_map<uint64_t, Shortcut>();
  return *m;
}

// A match also collects the walk's param values by slot into `params` (sized to the graph's
// params): a visit that is a param of `g` gives its value; two visits of one slot must agree.
bool matches(const Walk& w, const Shortcut& s, const ir::Graph& g, std::vector<Scalar>* params) {
  if (s.ids.size() != w.visits.size() || g.outputs().size() != w.roots.size()) return false;
  params->assign(s.num_params, Scalar());
  std::vector<bool>& set = s.param_set;
  set.assign(s.num_params, false);
  auto give = [&](int64_t slot, const Scalar& v) {
    if (slot < 0 || size_t(slot) >= set.size()) return false;
    if (set[size_t(slot)]) return (*params)[size_t(slot)] == v;
    set[size_t(slot)] = true;
    (*params)[size_t(slot)] = v;
    return true;
  };
  for (size_t k = 0; k < w.visits.size(); ++k) {
    const LazyNode* n = w.visits[k];
    const ir::Node& gn = g.node(s.ids[k]);
    if (gn.dtype != n->dtype || gn.shape != n->shape) return false;
    if (n->buffer) {
      if (gn.op != ir::Op::kInput || gn.ints.size() != 1 || gn.ints[0] != w.input_pos[k]) return false;
      continue;
    }
    if (gn.op == ir::Op::kParam) {
      if (n->op != ir::Op::kConst || !give(gn.ints[0], n->scalar)) return false;
      continue;
    }
    if ((gn.op == ir::Op::kRand || gn.op == ir::Op::kRandn) && gn.inputs.size() == 1) {  // a seed param
      if (gn.op != n->op || !n->inputs.empty() || n->ints.size() != 1 ||
          !give(g.node(gn.inputs[0]).ints[0], Scalar::from_int(n->ints[0])))
        return false;
      continue;
    }
    if (gn.op != n->op || gn.ints != n->ints || !(gn.scalar == n->scalar) || gn.inputs.size() != n->inputs.size())
      return false;
    if (gn.regions != n->regions) {
      if (!gn.regions || !n->regions || gn.regions->size() != n->regions->size()) return false;
      for (size_t r = 0; r < gn.regions->size(); ++r)
        if (!((*gn.regions)[r] == (*n->regions)[r])) return false;
    }
    for (size_t j = 0; j < gn.inputs.size(); ++j)
      if (gn.inputs[j] != s.ids[size_t(n->inputs[j]->collected_id)]) return false;
  }
  for (size_t i = 0; i < w.roots.size(); ++i)
    if (g.outputs()[i] != s.ids[size_t(w.roots[i])]) return false;
  for (bool b : set)
    if (!b) return false;  // a param no visit gave (not a graph this walk builds)
  return true;
}

// The executable a shortcut finds for this walk, or nullptr (caller holds realize_mutex()).
std::shared_ptr<const replay::CompiledGraph> find_shortcut(const Walk& w, runtime::Device* device, bool fusion,
                                                         std::vector<Scalar>* params) {
  auto it = shortcuts().find(w.hash);
  if (it == shortcuts().end()) return nullptr;
  std::shared_ptr<const replay::CompiledGraph> e = it->second.exe.lock();
  if (!e || e->device != device || e->fusion != fusion || !matches(w, it->second, e->graph, params)) return nullptr;
  if (!replay::cache_reuse(*e, &it->second.generation)) return nullptr;
  return e;
}

void remember_shortcut(uint64_t hash, std::vector<ir::NodeId> ids, size_t num_params,
                       const std::shared_ptr<const replay::CompiledGraph>& e) {
  auto& m = shortcuts();
  if (m.size() >= 1024 && !m.count(hash)) m.clear();  // bounded: shortcuts are only a speed-up
  m[hash] = Shortcut{e, std::move(ids), num_params, 0, {}};
}

// The walk's scratch, reused by the realizes of this thread (a realize does not nest).
Walk& scratch_walk() {
  static KILN_FAST_TLS Walk w;
  return w;
}

}  // namespace

void realize_nodes(const std::vector<NodePtr>& nodes) {
  start_env_profile();
  support::TraceSpan span("realize");
  Walk& w = scratch_walk();
  std::vector<NodePtr> todo;
  runtime::Device* device = nullptr;
  std::shared_ptr<const replay::CompiledGraph> exe;
  ir::Graph graph;  // built only when no shortcut applies
  std::vector<ir::NodeId> ids;
  std::vector<Scalar> params;  // the values of the graph's params (ir/params.h)
  {
    std::lock_guard<std::mutex> lock(realize_mutex());
    for (const NodePtr& n : nodes) {
      if (n->buffer) continue;
      bool dup = false;
      for (const NodePtr& t : todo) dup = dup || t == n;
      if (!dup) todo.push_back(n);
    }
    if (todo.empty()) return;
    device = todo[0]->device;
    w.clear();
    {
      support::TraceSpan capture("record: collect the graph");
      walk(todo, &w);
    }
    {
      support::TraceSpan lookup("executable cache lookup (shortcut)");
      exe = find_shortcut(w, device, support::fusion_enabled(), &params);
    }
    if (!exe) {
      graph = build(w, &ids, /*lift=*/true);
      params = ir::param_values(graph);
    }
  }
  // The visits may dangle from here on (another thread can realize those nodes).
  if (!exe) {
    auto compiled = replay::compile_graph(device, graph);
    if (!compiled.ok()) {
      w.clear();
      throw Error(compiled.status());
    }
    exe = *std::move(compiled);
    std::lock_guard<std::mutex> lock(realize_mutex());
    remember_shortcut(w.hash, std::move(ids), params.size(), exe);
  }
  auto outs = replay::run_compiled(*exe, w.inputs, params);
  w.inputs.clear();  // the scratch must not keep buffers alive
  if (!outs.ok()) throw Error(outs.status());
  std::lock_guard<std::mutex> lock(realize_mutex());
  for (size_t i = 0; i < todo.size(); ++i) {
    LazyNode* n = todo[i].get();
    if (n->buffer) continue;  // another thread realized it meanwhile; keep one value
    n->buffer = (*outs)[i];
    n->op = ir::Op::kInput;
    n->inputs.clear();
    n->ints.clear();
  }
}

ir::Graph capture(const std::vector<Tensor>& tensors, std::vector<std::shared_ptr<runtime::Buffer>>* inputs) {
  std::vector<NodePtr> nodes;
  for (const Tensor& t : tensors) nodes.push_back(detail::node_of(t));
  std::lock_guard<std::mutex> lock(realize_mutex());
  Walk w;
  walk(nodes, &w);
  if (inputs) *inputs = w.inputs;
  return build_unlifted(w);
}

void under_realize_lock(const std::function<void()>& f) {
  std::lock_guard<std::mutex> lock(realize_mutex());
  f();
}

// Another thread may be realizing the node right now: its buffer is written under the lock.
bool node_is_realized(const NodePtr& node) {
  std::lock_guard<std::mutex> lock(realize_mutex());
  return node->buffer != nullptr;
}

std::string graph_text_of(const std::vector<NodePtr>& nodes) {
  std::lock_guard<std::mutex> lock(realize_mutex());
  Walk w;
  walk(nodes, &w);
  return ir::print(build_unlifted(w));
}

}  // namespace kiln::detail

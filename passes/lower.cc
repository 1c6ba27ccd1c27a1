#include "passes/lower.h"

#include <algorithm>
#include <unordered_map>

#include "absl/hash/hash.h"
#include "absl/strings/str_cat.h"

namespace kiln::passes {
namespace {

using ir::IndexMap;
using ir::KNode;
using ir::KNodeId;
using ir::Node;
using ir::NodeId;
using ir::Op;
using ir::View;

size_t hash_map(const IndexMap& m) {
  size_t h = 0;
  for (const View& v : m.views) {
    std::vector<int64_t> mask;
    for (auto& p : v.mask) {
      mask.push_back(p.first);
      mask.push_back(p.second);
    }
    h = absl::HashOf(h, v.shape, v.strides, v.offset, mask);
  }
  return h;
}

// Whether a map never addresses a valid element: an empty mask range on some dim (a part of a
// concat or pad that the consumer's view slices away entirely, composed through a stride-0 dim).
// Its loads read 0 and its validity is false at every loop index, so it is a constant: keeping
// it as a masked load would make it look dependent on the reduce axes it carries a mask for.
bool never_valid(const IndexMap& m) {
  for (const View& v : m.views)
    for (const auto& [lo, hi] : v.mask)
      if (lo >= hi) return true;
  return false;
}

// ir::compose merges a new view only into the front of the stack. When that merge leaves a
// front view that now merges with the view behind it (a reversal undone by a second one becomes
// the identity, which vanishes into a reshape below it), merge on: a map that one view can express
// exactly is then one view. Maps are compared structurally (check_natural, the fuser's analysis),
// so a stack that only equals the natural map would be refused as a different one.
IndexMap compose_merged(const IndexMap& outer, const View& inner) {
  IndexMap r = ir::compose(outer, inner);
  View merged;
  while (r.views.size() > 1 && ir::merge_views(r.views[1], r.views[0], &merged)) {
    r.views.erase(r.views.begin());
    r.views.front() = merged;
  }
  return r;
}

// The view through which reshape, permute, expand, window or slice node `n` reads its operand.
View reindexing_view(const ir::Graph& g, const Node& n) {
  const Shape& in = g.node(n.inputs[0]).shape;
  switch (n.op) {
    case Op::kReshape: return ir::reshape_view(n.shape);
    case Op::kPermute: return ir::permute_view(in, n.ints);
    case Op::kExpand: return ir::expand_view(in, n.shape);
    case Op::kWindow: return ir::window_view(in, n.ints, n.shape);
    default: return ir::slice_view(in, n.ints, n.shape);
  }
}

size_t hash_knode(const KNode& n) {
  return absl::HashOf(int(n.op), int(n.dtype), n.inputs, n.scalar.is_int, n.scalar.i, n.scalar.f, n.ints, n.buffer,
                      hash_map(n.map));
}

class Builder {
 public:
  explicit Builder(const LowerRequest& r) : r_(r), g_(*r.graph) {
    for (NodeId n : r.computed) computed_.push_back(n);
    k_.shape = r.space.full;
    k_.reduce = r.space.reduce;
  }

  absl::StatusOr<ir::Kernel> build() {
    k_.serial = r_.space.scatter && !r_.scatter_init;
    for (NodeId root : r_.stores) {
      const bool scatter = g_.node(root).op == Op::kScatter;
      if (scatter && !r_.scatter_init) {
        if (absl::Status s = scatter_store(root); !s.ok()) return s;
        continue;
      }
      IndexMap m;
      if (!r_.space.natural_map(g_.node(root).shape, &m))
        return absl::InternalError(absl::StrCat("root %", root, " of shape ", shape_str(g_.node(root).shape),
                                                " does not fit kernel space ", shape_str(r_.space.full)));
      auto v = scatter ? lower(g_.node(root).inputs[0], m) : lower(root, m, /*as_root=*/true);
      if (!v.ok()) return v.status();
      ir::Store s;
      s.buffer = (*r_.buffer_of)[root];
      s.map = m;
      s.value = *v;
      k_.stores.push_back(s);
    }
    std::string err = k_.finalize();
    if (!err.empty()) return absl::InternalError("lowered kernel is malformed: " + err);
    return std::move(k_);
  }

 private:
  bool is_computed(NodeId n) const { return std::find(computed_.begin(), computed_.end(), n) != computed_.end(); }

  KNodeId emit(KNode n) {
    size_t h = hash_knode(n);
    auto range = intern_.equal_range(h);
    for (auto it = range.first; it != range.second; ++it)
      if (k_.nodes[it->second] == n) return it->second;
    KNodeId id = KNodeId(k_.nodes.size());
    k_.nodes.push_back(std::move(n));
    intern_.emplace(h, id);
    return id;
  }

  KNodeId constant(Scalar s, DType dt) {
    KNode c;
    c.op = Op::kConst;
    c.dtype = dt;
    c.scalar = s;
    return emit(c);
  }

  KNodeId op(Op o, DType dt, std::vector<KNodeId> in, std::vector<int64_t> ints = {}) {
    KNode n;
    n.op = o;
    n.dtype = dt;
    n.inputs = std::move(in);
    n.ints = std::move(ints);
    return emit(n);
  }

  KNodeId valid(const IndexMap& m) {
    if (never_valid(m)) return constant(Scalar::from_int(0), DType::kBool);
    KNode v;
    v.op = Op::kValid;
    v.dtype = DType::kBool;
    v.map = m;
    return emit(v);
  }

  absl::StatusOr<KNodeId> lower(NodeId id, const IndexMap& m, bool as_root = false) {
    auto key = std::make_pair(id, hash_map(m));
    auto range = memo_.equal_range(key);
    for (auto it = range.first; it != range.second; ++it)
      if (it->second.first == m) return it->second.second;
    auto r = lower_uncached(id, m, as_root);
    if (r.ok()) memo_.emplace(key, std::make_pair(m, *r));
    return r;
  }

  absl::StatusOr<KNodeId> lower_uncached(NodeId id, const IndexMap& m, bool as_root) {
    const Node& n = g_.node(id);
    int buf = (*r_.buffer_of)[id];
    // Nothing reads a value at a map that is never valid (the consumer masks it out): whatever
    // the node is (a load, a reduction computed here, ...), it is the constant 0 there.
    if (never_valid(m)) return constant(is_float(n.dtype) ? Scalar::from_double(0) : Scalar::from_int(0), n.dtype);
    if (n.op == Op::kInput || (buf >= 0 && !as_root && !is_computed(id))) {
      if (r_.on_read) r_.on_read(id, m, /*indexed=*/false);
      KNode l;
      l.op = Op::kLoad;
      l.dtype = n.dtype;
      l.buffer = buf;
      l.map = m;
      return emit(l);
    }
    switch (ir::op_class(n.op)) {
      case ir::OpClass::kSource: {
        if (n.op == Op::kConst) return constant(n.scalar, n.dtype);
        KNode s;
        s.op = n.op;
        s.dtype = n.dtype;
        s.ints = n.ints;
        if (n.op == Op::kParam) return emit(s);  // the same value everywhere: no map
        s.map = m;
        for (NodeId x : n.inputs) {  // a random op's seed param
          auto v = lower(x, m);
          if (!v.ok()) return v;
          s.inputs.push_back(*v);
        }
        return emit(s);
      }
      case ir::OpClass::kUnary:
      case ir::OpClass::kBinary:
      case ir::OpClass::kTernary: {
        std::vector<KNodeId> in;
        for (NodeId x : n.inputs) {
          auto v = lower(x, m);
          if (!v.ok()) return v;
          in.push_back(*v);
        }
        return op(n.op, n.dtype, in);
      }
      case ir::OpClass::kMovement: return lower_movement(n, m);
      case ir::OpClass::kReduce: return lower_reduce(id, n, m);
      case ir::OpClass::kContract: return n.op == Op::kDot ? lower_dot(id, n, m) : lower_attention(id, n, m);
      case ir::OpClass::kIndex:
        if (n.op == Op::kGather) return lower_gather(n, m);
        if (n.op == Op::kSegmentReduce) return lower_segment(n, m);
        return absl::InternalError(absl::StrCat("scatter %", id, " is read before it is in memory"));
      case ir::OpClass::kKernel:
      case ir::OpClass::kCollective:  // a step of its own (fuse.cc), read from its buffer
      case ir::OpClass::kControl: break;  // control nodes are never inside a kernel (passes/control.h)
    }
    return absl::InternalError("unexpected kernel op in a graph");
  }

  // Index value j as an i64 inside [0, extent): a negative one counts from the end, and one still
  // outside becomes 0 with *ok false (so no access ever leaves the axis).
  KNodeId in_axis(KNodeId j, int64_t extent_value, KNodeId* ok) {
    const DType i64 = DType::kInt64;
    KNodeId jv = k_.nodes[j].dtype == i64 ? j : op(Op::kCast, i64, {j});
    KNodeId zero = constant(Scalar::from_int(0), i64), extent = constant(Scalar::from_int(extent_value), i64);
    KNodeId wrapped = op(Op::kWhere, i64, {op(Op::kLt, DType::kBool, {jv, zero}), op(Op::kAdd, i64, {jv, extent}), jv});
    *ok = op(Op::kAnd, DType::kBool,
             {op(Op::kLe, DType::kBool, {zero, wrapped}), op(Op::kLt, DType::kBool, {wrapped, extent})});
    return op(Op::kWhere, i64, {*ok, wrapped, zero});
  }

  // The scatter kernel: over the updates (the kernel space), its axis a serial reduce axis. Each
  // update reads the result's element it lands on (an indexed load of the scatter's own buffer,
  // which the copy kernel filled with the data), combines and writes it back (an indexed store).
  // An out-of-range update writes the old value of position 0 of its own row back, unchanged.
  // Updates at different positions of the other axes never share an element, and each thread
  // runs the axis in order, so nothing races and the last duplicate wins.
  absl::Status scatter_store(NodeId root) {
    const Node& n = g_.node(root);
    const size_t axis = size_t(n.ints[0]);
    IndexMap m = IndexMap::of(View::contiguous(r_.space.full));
    auto j = lower(n.inputs[1], m);
    if (!j.ok()) return j.status();
    auto u = lower(n.inputs[2], m);
    if (!u.ok()) return u.status();
    KNodeId ok = -1, safe = in_axis(*j, n.shape[axis], &ok);
    // The update's position flattened over the data's shape with the updates' axis extent (the
    // updates may be smaller than the data outside the axis), then the data's own layout.
    Shape g = n.shape;
    g[axis] = r_.space.full[axis];
    View pos;
    pos.shape = r_.space.full;
    pos.strides = ir::contiguous_strides(g);
    pos.canonicalize();
    IndexMap at = IndexMap::of(View::contiguous(n.shape));
    at.views.push_back(pos);
    KNode l;
    l.op = Op::kLoad;
    l.dtype = n.dtype;
    l.buffer = (*r_.buffer_of)[root];
    l.inputs = {safe};
    l.ints = {1, int64_t(axis), r_.space.full[axis]};
    l.map = at;
    KNodeId old = emit(l), v = *u;
    switch (ir::ScatterMode(n.ints[1])) {
      case ir::ScatterMode::kNone: break;
      case ir::ScatterMode::kAdd: v = op(Op::kAdd, n.dtype, {old, v}); break;
      case ir::ScatterMode::kMul: v = op(Op::kMul, n.dtype, {old, v}); break;
      case ir::ScatterMode::kMax: v = op(Op::kMax, n.dtype, {old, v}); break;
      case ir::ScatterMode::kMin: v = op(Op::kMin, n.dtype, {old, v}); break;
    }
    ir::Store s;
    s.buffer = l.buffer;
    s.map = at;
    s.value = op(Op::kWhere, n.dtype, {ok, v, old});
    s.index = safe;
    s.ints = l.ints;
    k_.stores.push_back(s);
    // The copy kernel's reads order this kernel after the data's producers; none of them can
    // join this kernel (the copy runs first).
    if (r_.on_read) {
      LowerRequest copy = r_;
      copy.space = elementwise_space(n.shape);
      copy.computed = {};
      copy.stores = {root};
      copy.scatter_init = true;
      copy.on_read = [this](NodeId x, const IndexMap& xm, bool) { r_.on_read(x, xm, /*indexed=*/true); };
      auto k = Builder(copy).build();
      if (!k.ok()) return k.status();
    }
    return absl::OkStatus();
  }

  // Where operand `x` of a gather or segment_reduce (read at run-time positions) is in memory:
  // the node *src holding its buffer below x's reindexing views, and the map *source from x's
  // coordinates to that buffer's elements (the read is reported as indexed).
  absl::Status in_memory(NodeId x, const char* what, NodeId* src, IndexMap* source) {
    *source = IndexMap::of(View::contiguous(g_.node(x).shape));
    *src = x;
    for (;;) {
      const Node& s = g_.node(*src);
      if (s.op == Op::kInput || ((*r_.buffer_of)[*src] >= 0 && !is_computed(*src))) break;
      if (!is_reindexing(s.op)) return absl::InternalError(absl::StrCat(what, " %", *src, " is not in memory"));
      *source = compose_merged(*source, reindexing_view(g_, s));
      *src = s.inputs[0];
    }
    if (r_.on_read) r_.on_read(*src, *source, /*indexed=*/true);
    return absl::OkStatus();
  }

  // gather(x, idx) at map m (over its result G): idx is read at m like an elementwise operand;
  // x is read from memory (through the movement ops above its buffer) at m's position in G with
  // the axis coordinate taken from the index. An index outside the axis, after counting a
  // negative one from the end, reads 0: the load itself reads position 0 of the axis then.
  absl::StatusOr<KNodeId> lower_gather(const Node& n, const IndexMap& m) {
    const size_t axis = size_t(n.ints[0]);
    const Shape& xs = g_.node(n.inputs[0]).shape;
    auto j = lower(n.inputs[1], m);
    if (!j.ok()) return j;
    KNodeId ok = -1, safe = in_axis(*j, xs[axis], &ok);
    IndexMap source;
    NodeId src = -1;
    if (absl::Status st = in_memory(n.inputs[0], "gather source", &src, &source); !st.ok()) return st;
    KNode l;
    l.op = Op::kLoad;
    l.dtype = n.dtype;
    l.buffer = (*r_.buffer_of)[src];
    l.inputs = {safe};
    l.ints = {int64_t(source.views.size()), int64_t(axis), n.shape[axis]};
    l.map = source;
    l.map.views.insert(l.map.views.end(), m.views.begin(), m.views.end());
    KNodeId loaded = emit(l);
    Scalar z = is_float(n.dtype) ? Scalar::from_double(0) : Scalar::from_int(0);
    return op(Op::kWhere, n.dtype, {ok, loaded, constant(z, n.dtype)});
  }

  // segment_reduce at map m (over its result [S, R...]): the segment's bounds are the offsets at
  // s and s + 1 (read like an elementwise operand through m), and each row of the segment is an
  // indexed load of the data (from memory, through the movement ops above its buffer) whose row
  // coordinate is the segment loop's position (ir/program.h, segment_reduce).
  absl::StatusOr<KNodeId> lower_segment(const Node& n, const IndexMap& m) {
    const Shape& xs = g_.node(n.inputs[0]).shape;
    KNodeId bound[2];
    for (int b = 0; b < 2; ++b) {
      View v;
      v.shape = n.shape;
      v.strides.assign(n.shape.size(), 0);
      v.strides[0] = 1;
      v.offset = b;
      v.canonicalize();
      auto x = lower(n.inputs[1], compose_merged(m, v));
      if (!x.ok()) return x;
      bound[b] = *x;
    }
    IndexMap source;
    NodeId src = -1;
    if (absl::Status st = in_memory(n.inputs[0], "segment_reduce data", &src, &source); !st.ok()) return st;
    KNode pos;
    pos.op = Op::kSegmentPos;
    pos.dtype = DType::kInt64;
    KNode l;
    l.op = Op::kLoad;
    l.dtype = n.dtype;
    l.buffer = (*r_.buffer_of)[src];
    l.inputs = {emit(pos)};
    l.ints = {int64_t(source.views.size()), 0, n.shape[0]};
    l.map = source;
    l.map.views.insert(l.map.views.end(), m.views.begin(), m.views.end());
    KNode seg;
    seg.op = Op::kSegmentReduce;
    seg.dtype = n.dtype;
    seg.inputs = {bound[0], bound[1], emit(l)};
    seg.ints = {n.ints[0], xs[0]};
    return emit(seg);
  }

  absl::StatusOr<KNodeId> lower_movement(const Node& n, const IndexMap& m) {
    const Shape& in = g_.node(n.inputs.empty() ? 0 : n.inputs[0]).shape;
    switch (n.op) {
      case Op::kReshape:
      case Op::kPermute:
      case Op::kExpand:
      case Op::kSlice:
      case Op::kWindow: return lower(n.inputs[0], compose_merged(m, reindexing_view(g_, n)));
      case Op::kPad: {
        IndexMap inner = compose_merged(m, ir::pad_view(in, n.ints));
        auto x = lower(n.inputs[0], inner);
        if (!x.ok()) return x;
        const KNode& xn = k_.nodes[*x];
        bool zero = n.scalar.as_double() == 0 && !(n.scalar.is_int == false && std::signbit(n.scalar.f));
        // A masked load already reads 0 outside its masks.
        if (zero && xn.op == Op::kLoad && xn.map == inner) return *x;
        return op(Op::kWhere, n.dtype, {valid(inner), *x, constant(n.scalar, n.dtype)});
      }
      case Op::kConcat: {
        int64_t axis = n.ints[0], total = n.shape[axis], off = 0;
        std::vector<std::pair<KNodeId, KNodeId>> parts;  // (valid, value)
        for (NodeId x : n.inputs) {
          const Shape& xs = g_.node(x).shape;
          std::vector<int64_t> w(2 * xs.size(), 0);
          w[2 * axis] = off;
          w[2 * axis + 1] = total - off - xs[axis];
          off += xs[axis];
          IndexMap inner = compose_merged(m, ir::pad_view(xs, w));
          auto v = lower(x, inner);
          if (!v.ok()) return v;
          parts.push_back({valid(inner), *v});
        }
        KNodeId acc = parts.back().second;
        for (size_t i = parts.size() - 1; i-- > 0;) acc = op(Op::kWhere, n.dtype, {parts[i].first, parts[i].second, acc});
        return acc;
      }
      default: break;
    }
    return absl::InternalError("unknown movement op");
  }

  absl::Status check_natural(NodeId id, const IndexMap& m) {
    IndexMap want;
    if (!r_.space.natural_map(g_.node(id).shape, &want) || !(want == m))
      return absl::InternalError(absl::StrCat("reduction %", id, " is read at ", m.to_string(),
                                              ", not at its natural map in this kernel"));
    return absl::OkStatus();
  }

  absl::StatusOr<KNodeId> lower_reduce(NodeId id, const Node& n, const IndexMap& m) {
    if (absl::Status s = check_natural(id, m); !s.ok()) return s;
    if (r_.space.dot || g_.node(n.inputs[0]).shape != r_.space.full)
      return absl::InternalError(absl::StrCat("reduction %", id, " does not match the kernel space"));
    auto x = lower(n.inputs[0], IndexMap::of(View::contiguous(r_.space.full)));
    if (!x.ok()) return x;
    return op(n.op, n.dtype, {*x});
  }

  absl::StatusOr<KNodeId> lower_dot(NodeId id, const Node& n, const IndexMap& m) {
    if (absl::Status s = check_natural(id, m); !s.ok()) return s;
    if (!r_.space.dot || k_.contraction.reduce >= 0) return absl::InternalError("contraction outside a dot kernel");
    const Shape& F = r_.space.full;
    size_t r = n.shape.size();
    const Shape& as = g_.node(n.inputs[0]).shape;
    const Shape& bs = g_.node(n.inputs[1]).shape;
    std::vector<int64_t> ca = ir::contiguous_strides(as), cb = ir::contiguous_strides(bs);
    View va, vb;
    va.shape = vb.shape = F;
    va.strides.assign(r + 1, 0);
    vb.strides.assign(r + 1, 0);
    for (size_t d = 0; d + 2 < r; ++d) {
      va.strides[d] = ca[d];
      vb.strides[d] = cb[d];
    }
    va.strides[r - 2] = ca[r - 2];  // m
    va.strides[r] = ca[r - 1];      // k
    vb.strides[r - 1] = cb[r - 1];  // n
    vb.strides[r] = cb[r - 2];      // k
    va.canonicalize();
    vb.canonicalize();
    auto a = lower(n.inputs[0], IndexMap::of(va));
    if (!a.ok()) return a;
    auto b = lower(n.inputs[1], IndexMap::of(vb));
    if (!b.ok()) return b;
    DType acc = (n.dtype == DType::kFloat16 || n.dtype == DType::kBFloat16) ? DType::kFloat32 : n.dtype;
    KNodeId x = acc == n.dtype ? *a : op(Op::kCast, acc, {*a});
    KNodeId y = acc == n.dtype ? *b : op(Op::kCast, acc, {*b});
    KNodeId prod = op(Op::kMul, acc, {x, y});
    KNodeId red = op(Op::kReduceSum, acc, {prod});
    k_.contraction.reduce = red;
    k_.contraction.lhs = x;
    k_.contraction.rhs = y;
    k_.contraction.m_axis = int(r - 2);
    k_.contraction.n_axis = int(r - 1);
    k_.contraction.k_axis = int(r);
    k_.contraction.tf32 = !n.ints.empty() && n.ints[0] == 1;
    return acc == n.dtype ? red : op(Op::kCast, n.dtype, {red});
  }

  // Kernel axes [B..., Sq, Dv, Sk, D]; reduce axes Sk and D. Operands are read at maps that
  // ignore the axes they do not have: q (b, sq, d), k (b, sk, d), v (b, sk, dv), bias (b, sq, sk).
  absl::StatusOr<KNodeId> lower_attention(NodeId id, const Node& n, const IndexMap& m) {
    if (absl::Status s = check_natural(id, m); !s.ok()) return s;
    if (!r_.space.attention) return absl::InternalError("attention outside an attention kernel");
    for (const KNode& kn : k_.nodes)
      if (kn.op == Op::kAttention) return absl::InternalError("two attentions in one kernel");
    const size_t nb = n.shape.size() - 2;
    const int sq = int(nb), dv = int(nb + 1), sk = int(nb + 2), d = int(nb + 3);
    // Strides of operand `x` along the kernel axes `axes` (one per operand dim, in order).
    auto view_of = [&](NodeId x, std::vector<int> axes) {
      View v;
      v.shape = r_.space.full;
      v.strides.assign(v.shape.size(), 0);
      std::vector<int64_t> cs = ir::contiguous_strides(g_.node(x).shape);
      for (size_t b = 0; b < nb; ++b) v.strides[b] = cs[b];
      for (size_t j = 0; j < axes.size(); ++j) v.strides[axes[j]] = cs[nb + j];
      v.canonicalize();
      return IndexMap::of(v);
    };
    std::vector<KNodeId> in;
    const std::vector<std::vector<int>> axes = {{sq, d}, {sk, d}, {sk, dv}, {sq, sk}};
    for (size_t j = 0; j < n.inputs.size(); ++j) {
      auto x = lower(n.inputs[j], view_of(n.inputs[j], axes[j]));
      if (!x.ok()) return x;
      in.push_back(*x);
    }
    KNode a;
    a.op = Op::kAttention;
    a.dtype = n.dtype;
    a.inputs = in;
    a.ints = n.ints;
    a.scalar = n.scalar;
    return emit(a);
  }

  const LowerRequest& r_;
  const ir::Graph& g_;
  std::vector<NodeId> computed_;
  ir::Kernel k_;
  std::unordered_multimap<size_t, KNodeId> intern_;
  struct PairHash {
    size_t operator()(const std::pair<NodeId, size_t>& p) const { return absl::HashOf(p.first, p.second); }
  };
  std::unordered_multimap<std::pair<NodeId, size_t>, std::pair<IndexMap, KNodeId>, PairHash> memo_;
};

}  // namespace

absl::StatusOr<ir::Kernel> lower_group(const LowerRequest& req) { return Builder(req).build(); }

bool is_reindexing(Op op) { return op == Op::kReshape || op == Op::kPermute || op == Op::kExpand || op == Op::kSlice; }

bool reads_as_one_view(const ir::Graph& g, ir::NodeId id) {
  IndexMap m = IndexMap::of(View::contiguous(g.node(id).shape));
  for (NodeId x = id;;) {
    const Node& n = g.node(x);
    if (!is_reindexing(n.op)) break;
    m = compose_merged(m, reindexing_view(g, n));
    x = n.inputs[0];
  }
  return m.views.size() == 1;
}

bool reads_windows(const ir::Graph& g, ir::NodeId id) {
  for (NodeId x = id;;) {
    const Node& n = g.node(x);
    if (n.op == Op::kWindow) return true;
    if (!ir::is_movement(n.op) || n.op == Op::kConcat) return false;
    x = n.inputs[0];
  }
}

}  // namespace kiln::passes

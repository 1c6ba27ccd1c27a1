#include "codegen/c_family/kernel_writer.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "absl/strings/str_cat.h"
#include "ir/graph.h"
#include "ir/half.h"
#include "ir/random.h"

namespace kiln::codegen::gpu {

using ir::KNode;
using ir::KNodeId;
using ir::Op;

KernelWriter::KernelWriter(const ir::Program& p, const ir::Kernel& k, const DialectOps& d)
    : p_(p), k_(k), d_(d), axis_(k.shape.size()) {
  // 64-bit index arithmetic only when some buffer or an iterated range needs it (a contraction or
  // an attention never walks its flattened space, only the axes themselves: an attention's
  // [batch, Sq, Dv, Sk, D] space would otherwise make its index width depend on a symbolic batch).
  int64_t biggest = 1;
  bool attention = false;
  for (const ir::KNode& n : k.nodes) attention = attention || n.op == Op::kAttention;
  if (k.contraction.reduce >= 0 || attention) {
    for (int64_t d : k.shape) biggest = std::max(biggest, d * 256);  // tile counters stay small
  } else {
    biggest = shape_numel(k.shape);
  }
  for (const ir::BufferDesc& b : p.buffers) biggest = std::max(biggest, shape_numel(b.shape));
  wide_ = biggest >= (int64_t(1) << 31) - 1;
  scopes_.emplace_back();
}

void KernelWriter::line(const std::string& s) {
  body_.append(size_t(indent_) * 2, ' ');
  body_ += s;
  body_ += '\n';
}
void KernelWriter::open(const std::string& s) {
  line(s + " {");
  ++indent_;
  push_scope();
}
void KernelWriter::close() {
  pop_scope();
  --indent_;
  line("}");
}
std::string KernelWriter::fresh(const char* prefix) { return absl::StrCat(prefix_, prefix, counter_++); }

void KernelWriter::unravel(const std::string& flat, const std::vector<int>& axes) {
  int64_t stride = 1;
  std::string sym_stride;  // the symbolic factors of the stride, when an inner axis has them
  for (size_t i = axes.size(); i-- > 0;) {
    int a = axes[i];
    std::string v = fresh("i");
    std::string st = sym_stride.empty() ? ilit(stride) : stride == 1 ? sym_stride : absl::StrCat("(", sym_stride, " * ", ilit(stride), ")");
    std::string q = stride == 1 && sym_stride.empty() ? flat : absl::StrCat("(", flat, " / ", st, ")");
    std::string e = i == 0 ? q : absl::StrCat("(", q, " % ", extent(a), ")");
    if (k_.shape[a] == 1 && !k_.symbolic(a)) e = ilit(0);
    line(absl::StrCat(idx_t(), " ", v, " = ", e, ";"));
    axis_[a] = v;
    if (k_.symbolic(a)) sym_stride = sym_stride.empty() ? extent(a) : absl::StrCat("(", sym_stride, " * ", extent(a), ")");
    else stride *= k_.shape[a];
  }
}

std::string KernelWriter::extent(int a) const {
  if (!k_.symbolic(a)) return ilit(k_.shape[size_t(a)]);
  const ir::SymExtent& e = k_.sym[size_t(a)];
  const std::string v = d_.index_cast(DialectOps::param_name(e.slot), wide_);
  return e.coef == 1 ? v : absl::StrCat("(", v, " * ", ilit(e.coef), ")");
}

std::string KernelWriter::extent_product(const std::vector<int>& axes) const {
  int64_t fixed = 1;
  std::string sym;
  for (int a : axes) {
    if (k_.symbolic(a)) sym = sym.empty() ? extent(a) : absl::StrCat("(", sym, " * ", extent(a), ")");
    else fixed *= k_.shape[size_t(a)];
  }
  if (sym.empty()) return ilit(fixed);
  return fixed == 1 ? sym : absl::StrCat("(", sym, " * ", ilit(fixed), ")");
}

std::vector<int> KernelWriter::all_axes() const {
  std::vector<int> axes;
  for (size_t a = 0; a < k_.shape.size(); ++a) axes.push_back(int(a));
  return axes;
}

std::string KernelWriter::lookup(KNodeId id) const {
  for (auto it = scopes_.rbegin(); it != scopes_.rend(); ++it) {
    auto f = it->find(id);
    if (f != it->end()) return f->second;
  }
  return "";
}

std::string KernelWriter::sum_of(const std::vector<Term>& terms, int64_t c0) {
  std::string e = c0 ? ilit(c0) : "";
  for (const Term& t : terms) {
    std::string term = t.coef == 1 ? t.v : absl::StrCat(t.v, " * ", ilit(t.coef));
    e = e.empty() ? term : absl::StrCat(e, " + ", term);
  }
  return e.empty() ? ilit(0) : e;
}

void KernelWriter::unflatten(const std::vector<Term>& terms, int64_t c0, const Shape& s, size_t lo, size_t hi,
                             std::vector<std::string>* out) {
  if (hi - lo == 1) {
    std::string var = fresh("u");
    line(absl::StrCat(idx_t(), " ", var, " = ", sum_of(terms, c0), ";"));
    (*out)[lo] = var;
    return;
  }
  ir::FlatSplit<Term> sp;
  if (ir::split_flat(terms, c0, s, lo, hi, &sp)) {
    unflatten(sp.high, sp.high_c0, s, lo, sp.boundary, out);
    unflatten(sp.low, sp.low_c0, s, sp.boundary, hi, out);
    return;
  }
  std::string flat = fresh("f");
  line(absl::StrCat(idx_t(), " ", flat, " = ", sum_of(terms, c0), ";"));
  int64_t stride = 1;
  for (size_t d = hi; d-- > lo;) {
    std::string q = stride == 1 ? flat : absl::StrCat("(", flat, " / ", ilit(stride), ")");
    std::string x = d == lo ? q : absl::StrCat("(", q, " % ", ilit(s[d]), ")");
    std::string var = fresh("u");
    line(absl::StrCat(idx_t(), " ", var, " = ", x, ";"));
    (*out)[d] = var;
    stride *= s[d];
  }
}

KernelWriter::Addr KernelWriter::address(const ir::IndexMap& m, ir::KNodeId index, const std::vector<int64_t>* at) {
  std::vector<std::string> idx;
  for (size_t d = 0; d < k_.shape.size(); ++d) idx.push_back(axis_[d].empty() ? ilit(0) : axis_[d]);
  std::string valid, flat;
  for (size_t j = m.views.size(); j-- > 0;) {
    const ir::View& v = m.views[j];
    std::vector<Term> terms;
    for (size_t d = 0; d < v.shape.size(); ++d) {
      if (v.has_mask() && (v.mask[d].first > 0 || v.mask[d].second < v.shape[d])) {
        std::string c;
        if (v.mask[d].first > 0) c = absl::StrCat(idx[d], " >= ", ilit(v.mask[d].first));
        if (v.mask[d].second < v.shape[d])
          absl::StrAppend(&c, c.empty() ? "" : " && ", idx[d], " < ", ilit(v.mask[d].second));
        if (v.mask[d].first >= v.mask[d].second) c = "false";
        valid = valid.empty() ? absl::StrCat("(", c, ")") : absl::StrCat(valid, " && (", c, ")");
      }
      if (v.strides[d] != 0 && v.shape[d] != 1) terms.push_back({v.strides[d], idx[d], v.shape[d]});
    }
    const bool split = j > 0 && index >= 0 && int64_t(j) == (*at)[0];
    if (j > 0 && !split) {
      // Unflatten into the previous view's shape, without dividing where the terms split.
      const Shape& s = m.views[j - 1].shape;
      idx.assign(s.size(), "");
      if (!s.empty()) unflatten(terms, v.offset, s, 0, s.size(), &idx);
      continue;
    }
    flat = fresh("f");
    line(absl::StrCat(idx_t(), " ", flat, " = ", sum_of(terms, v.offset), ";"));
    if (split) {
      // An indexed load unflattens over its result's shape and takes one coordinate from its index.
      const Shape s = ir::indexed_space(m, *at);
      std::vector<int64_t> cs = ir::contiguous_strides(s);
      idx.assign(s.size(), "");
      for (size_t d = 0; d < s.size(); ++d) {
        std::string q = cs[d] == 1 ? flat : absl::StrCat("(", flat, " / ", ilit(cs[d]), ")");
        std::string x = d == 0 ? q : absl::StrCat("(", q, " % ", ilit(s[d]), ")");
        std::string var = fresh("u");
        line(absl::StrCat(idx_t(), " ", var, " = ", x, ";"));
        idx[d] = var;
      }
      std::string var = fresh("g");
      DType it = wide_ ? DType::kInt64 : DType::kInt32;
      line(absl::StrCat(idx_t(), " ", var, " = ", d_.cast(DType::kInt64, it, eval(index)), ";"));
      idx[size_t((*at)[1])] = var;
    }
  }
  return {flat, valid};
}

std::string KernelWriter::rng_bits(const KNode& n, const std::string& counter) {
  // The keys: baked from the seed, or the two halves of a seed param (ir::encode_param).
  ir::RngKey key = ir::rng_key(uint64_t(n.ints[0]));
  std::string k0 = d_.u32_literal(key.k0), k1 = d_.u32_literal(key.k1);
  if (!n.inputs.empty()) {
    const std::string raw = DialectOps::param_name(int(k_.nodes[size_t(n.inputs[0])].ints[0]));
    k0 = d_.index_to_u32(raw, 0);
    k1 = d_.index_to_u32(raw, 32);
  }
  std::string u = d_.u32();
  std::string lo = d_.index_to_u32(counter, 0);
  std::string hi = wide_ ? d_.index_to_u32(counter, 32) : d_.u32_literal(0);
  auto mix = [&](const std::string& in) {
    std::string x = fresh("h");
    line(absl::StrCat(u, " ", x, " = ", in, ";"));
    line(absl::StrCat(x, " ^= ", x, " >> 16; ", x, " *= ", d_.u32_literal(0x7feb352du), "; ", x, " ^= ", x,
                      " >> 15; ", x, " *= ", d_.u32_literal(0x846ca68bu), "; ", x, " ^= ", x, " >> 16;"));
    return x;
  };
  std::string a = mix(absl::StrCat(lo, " ^ ", k0));
  return mix(absl::StrCat(a, " + (", hi, " ^ ", k1, ")"));
}

std::string KernelWriter::eval(KNodeId id) {
  std::string v = lookup(id);
  if (!v.empty()) return v;
  v = eval_uncached(id);
  scopes_.back()[id] = v;
  return v;
}

std::string KernelWriter::eval_uncached(KNodeId id) {
  const KNode& n = k_.nodes[id];
  std::string t = d_.type(n.dtype);
  auto def = [&](const std::string& e) {
    std::string var = fresh("v");
    line(absl::StrCat(t, " ", var, " = ", e, ";"));
    return var;
  };
  switch (n.op) {
    case Op::kConst: return d_.literal(n.dtype, ir::const_value(n.dtype, n.scalar));
    case Op::kParam: {  // the 64-bit pattern of ir::encode_param
      const std::string raw = DialectOps::param_name(int(n.ints[0]));
      if (n.dtype == DType::kFloat64) return d_.bits_to_double(raw);
      if (is_float(n.dtype)) return d_.bits_to_float(d_.index_to_u32(raw, 0));
      return d_.convert(t, raw);
    }
    case Op::kLoad: {
      Addr a = ir::is_indexed_load(n) ? address(n.map, n.inputs[0], &n.ints) : address(n.map);
      if (a.valid.empty()) return def(d_.load(n.buffer, n.dtype, a.offset));
      // Masked: read element 0 where the index is invalid, so that a compiler evaluating both
      // sides of the select never touches memory outside the buffer.
      std::string safe = fresh("s");
      line(absl::StrCat(idx_t(), " ", safe, " = ", d_.select(a.valid, a.offset, ilit(0)), ";"));
      return def(d_.select(a.valid, d_.load(n.buffer, n.dtype, safe), d_.literal(n.dtype, Scalar::from_int(0).cast_to(n.dtype))));
    }
    case Op::kValid: {
      Addr a = address(n.map);
      return a.valid.empty() ? std::string("true") : def(absl::StrCat("(", a.valid, ")"));
    }
    case Op::kIota: {
      Addr a = address(n.map);
      return def(d_.cast(wide_ ? DType::kInt64 : DType::kInt32, n.dtype, a.offset));
    }
    case Op::kRand: {
      Addr a = address(n.map);
      return def(d_.u32_to_float(rng_bits(n, a.offset), n.dtype));
    }
    case Op::kRandn: {
      Addr a = address(n.map);
      std::string c0 = fresh("c");
      line(absl::StrCat(idx_t(), " ", c0, " = ", a.offset, " * ", ilit(2), ";"));
      std::string u1 = d_.u32_to_float(rng_bits(n, c0), n.dtype);
      std::string u2 = d_.u32_to_float(rng_bits(n, absl::StrCat(c0, " + ", ilit(1))), n.dtype);
      Scalar one = Scalar::from_double(1.0), m2 = Scalar::from_double(-2.0), tau = Scalar::from_double(6.283185307179586);
      std::string rad = d_.op(Op::kSqrt, n.dtype,
                              {d_.op(Op::kMul, n.dtype,
                                     {d_.literal(n.dtype, m2),
                                      d_.op(Op::kLog, n.dtype, {d_.op(Op::kSub, n.dtype, {d_.literal(n.dtype, one), u1})})})});
      std::string ang = d_.op(Op::kCos, n.dtype, {d_.op(Op::kMul, n.dtype, {d_.literal(n.dtype, tau), u2})});
      return def(d_.op(Op::kMul, n.dtype, {rad, ang}));
    }
    case Op::kCast: return def(d_.cast(k_.nodes[n.inputs[0]].dtype, n.dtype, eval(n.inputs[0])));
    case Op::kWhere: return def(d_.select(eval(n.inputs[0]), eval(n.inputs[1]), eval(n.inputs[2])));
    case Op::kSegmentReduce: return def(segment_fold(id));  // this thread walks the whole segment
    default: break;
  }
  if (ir::is_elementwise(n.op)) {
    std::vector<std::string> args;
    for (KNodeId in : n.inputs) args.push_back(eval(in));
    DType operand = k_.nodes[n.inputs[0]].dtype;
    return def(d_.op(n.op, operand, args));
  }
  // Reductions are bound by the strategy before they are read; reaching here is a bug.
  return absl::StrCat("/* unbound node ", id, " */", d_.literal(n.dtype, Scalar::from_int(0).cast_to(n.dtype)));
}

bool KernelWriter::store_is_inner(const ir::Store& s) const {
  const ir::View& v = s.map.views.back();
  for (size_t d = 0; d < k_.shape.size(); ++d)
    if (k_.reduce[d] && v.strides[d] != 0 && v.shape[d] != 1) return true;
  return false;
}

void KernelWriter::store(const ir::Store& s) {
  std::string v = eval(s.value);
  Addr a = s.indexed() ? address(s.map, s.index, &s.ints) : address(s.map);
  line(d_.store(s.buffer, p_.buffers[s.buffer].dtype, a.offset, v));
}

namespace {
// The reduction a node folds with: its own op, or a segment_reduce's mode as one.
Op fold_op(const KNode& n) { return n.op == Op::kSegmentReduce ? ir::segment_fold_op(n) : n.op; }
}  // namespace

KernelWriter::Segment KernelWriter::segment_bounds(KNodeId id) {
  const KNode& n = k_.nodes[id];
  const DType i64 = DType::kInt64;
  const std::string t = d_.type(i64), rows = d_.literal(i64, Scalar::from_int(n.ints[1]));
  Segment s;
  s.lo = fresh("lo");
  s.hi = fresh("hi");
  line(absl::StrCat(t, " ", s.lo, " = ",
                    d_.op(Op::kMin, i64, {d_.op(Op::kMax, i64, {eval(n.inputs[0]), d_.literal(i64, Scalar::from_int(0))}), rows}),
                    ";"));
  line(absl::StrCat(t, " ", s.hi, " = ", d_.op(Op::kMin, i64, {d_.op(Op::kMax, i64, {eval(n.inputs[1]), s.lo}), rows}), ";"));
  return s;
}

std::string KernelWriter::segment_row(KNodeId id, const std::string& row) {
  for (size_t i = 0; i < k_.nodes.size(); ++i)
    if (k_.nodes[i].op == Op::kSegmentPos) bind(KNodeId(i), row);
  return eval(k_.nodes[id].inputs[2]);
}

std::string KernelWriter::segment_fold(KNodeId id) {
  Segment s = segment_bounds(id);
  Acc a = declare_acc(id);
  std::string r = fresh("row");
  open(absl::StrCat("for (", d_.type(DType::kInt64), " ", r, " = ", s.lo, "; ", r, " < ", s.hi, "; ++", r, ")"));
  push_scope();
  update_acc(id, a, segment_row(id, r), "");
  pop_scope();
  close();
  return acc_result(id, a);
}

DType KernelWriter::acc_type(KNodeId id) const {
  const KNode& n = k_.nodes[id];
  return ir::is_arg_reduce(n.op) ? k_.nodes[n.inputs[0]].dtype : n.dtype;
}

KernelWriter::Acc KernelWriter::declare_acc(KNodeId id) {
  const KNode& n = k_.nodes[id];
  Acc a;
  a.type = acc_type(id);
  a.value = fresh("acc");
  bool f = is_float(a.type);
  Scalar init;
  switch (fold_op(n)) {
    case Op::kReduceSum: init = Scalar::from_int(0); break;
    case Op::kReduceProd: init = Scalar::from_int(1); break;
    case Op::kReduceMax:
    case Op::kArgMax:
      if (f) init = Scalar::from_double(-INFINITY);
      else init = Scalar::from_int(int_lowest(a.type));
      break;
    case Op::kReduceMin:
    case Op::kArgMin:
      if (f) init = Scalar::from_double(INFINITY);
      else init = Scalar::from_int(int_highest(a.type));
      break;
    default: break;
  }
  if (f && init.is_int) init = Scalar::from_double(double(init.i));
  line(absl::StrCat(d_.type(a.type), " ", a.value, " = ", d_.literal(a.type, init.cast_to(a.type)), ";"));
  if (ir::is_arg_reduce(n.op)) {
    a.index = fresh("arg");
    line(absl::StrCat(d_.type(DType::kInt64), " ", a.index, " = ", d_.literal(DType::kInt64, Scalar::from_int(INT64_MAX)), ";"));
  }
  return a;
}

void KernelWriter::combine_into(KNodeId id, const std::string& av, const std::string& ai, const std::string& bv,
                                const std::string& bi) {
  const KNode& n = k_.nodes[id];
  DType t = acc_type(id);
  switch (fold_op(n)) {
    case Op::kReduceSum: line(absl::StrCat(av, " = ", d_.op(Op::kAdd, t, {av, bv}), ";")); return;
    case Op::kReduceProd: line(absl::StrCat(av, " = ", d_.op(Op::kMul, t, {av, bv}), ";")); return;
    case Op::kReduceMax: line(absl::StrCat(av, " = ", d_.op(Op::kMax, t, {av, bv}), ";")); return;
    case Op::kReduceMin: line(absl::StrCat(av, " = ", d_.op(Op::kMin, t, {av, bv}), ";")); return;
    case Op::kArgMax:
    case Op::kArgMin: {
      // First occurrence wins; NaN beats numbers; among NaNs the first wins.
      std::string better = n.op == Op::kArgMax ? d_.op(Op::kLt, t, {av, bv}) : d_.op(Op::kLt, t, {bv, av});
      std::string tie = absl::StrCat("(", d_.op(Op::kEq, t, {av, bv}), " && ", bi, " < ", ai, ")");
      std::string cond = absl::StrCat("(", better, " || ", tie, ")");
      if (is_float(t)) {
        std::string an = d_.is_nan(t, av), bn = d_.is_nan(t, bv);
        cond = absl::StrCat("(", an, " ? (", bn, " && ", bi, " < ", ai, ") : (", bn, " || ", cond, "))");
      }
      std::string c = fresh("take");
      line(absl::StrCat("bool ", c, " = ", cond, ";"));
      line(absl::StrCat(av, " = ", d_.select(c, bv, av), ";"));
      line(absl::StrCat(ai, " = ", d_.select(c, bi, ai), ";"));
      return;
    }
    default: line("/* unknown reduction */"); return;
  }
}

void KernelWriter::update_acc(KNodeId id, const Acc& a, const std::string& value, const std::string& pos) {
  std::string p = pos.empty() ? "" : d_.cast(wide_ ? DType::kInt64 : DType::kInt32, DType::kInt64, pos);
  combine_into(id, a.value, a.index, value, p);
}

std::string KernelWriter::acc_result(KNodeId id, const Acc& a) const {
  const KNode& n = k_.nodes[id];
  if (ir::is_arg_reduce(n.op)) {
    // An empty reduction never happens (the frontend rejects it); guard the sentinel anyway.
    return d_.select(absl::StrCat(a.index, " == ", d_.literal(DType::kInt64, Scalar::from_int(INT64_MAX))),
                     d_.literal(DType::kInt64, Scalar::from_int(0)), a.index);
  }
  return a.value;
}

std::vector<int> KernelWriter::scalar_params() const {
  std::vector<int> slots;
  for (const KNode& n : k_.nodes)
    if (n.op == Op::kParam) slots.push_back(int(n.ints[0]));
  for (const ir::SymExtent& e : k_.sym)
    if (e.symbolic()) slots.push_back(e.slot);
  std::sort(slots.begin(), slots.end());
  slots.erase(std::unique(slots.begin(), slots.end()), slots.end());
  return slots;
}

std::vector<BufferParam> KernelWriter::params() const {
  std::map<int, BufferParam> m;
  for (const KNode& n : k_.nodes)
    if (n.op == Op::kLoad) m.emplace(n.buffer, BufferParam{n.buffer, p_.buffers[n.buffer].dtype, false});
  for (const ir::Store& s : k_.stores) {
    auto it = m.find(s.buffer);
    if (it == m.end()) m.emplace(s.buffer, BufferParam{s.buffer, p_.buffers[s.buffer].dtype, true});
    else it->second.written = true;
  }
  std::vector<BufferParam> r;
  for (auto& [id, b] : m) r.push_back(b);
  for (BufferParam& b : r)
    for (const BufferParam& o : r) b.aliased = b.aliased || ir::share_bytes(p_, b.id, o.id);
  return r;
}

Features KernelWriter::features() const {
  Features f;
  for (const BufferParam& b : params()) f.storage.insert(b.dtype);
  for (const KNode& n : k_.nodes) {
    f.f64 = f.f64 || n.dtype == DType::kFloat64;
    f.i64 = f.i64 || n.dtype == DType::kInt64;
  }
  for (DType t : f.storage) {
    f.f64 = f.f64 || t == DType::kFloat64;
    f.i8 = f.i8 || t == DType::kInt8 || t == DType::kUInt8 || t == DType::kBool;
    f.f16_storage = f.f16_storage || dtype_size(t) == 2;  // f16, bf16, i16, u16
  }
  for (const ir::KNode& n : k_.nodes) {
    f.i8 = f.i8 || n.dtype == DType::kInt8 || n.dtype == DType::kUInt8;
    f.f16_storage = f.f16_storage || n.dtype == DType::kInt16 || n.dtype == DType::kUInt16;  // 16-bit arithmetic
  }
  return f;
}

}  // namespace kiln::codegen::gpu

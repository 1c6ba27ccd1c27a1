#include "ir/program.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace kiln::ir {

bool Kernel::has_reduce() const {
  for (bool r : reduce)
    if (r) return true;
  return false;
}

bool Kernel::any_symbolic() const {
  for (const SymExtent& s : sym)
    if (s.symbolic()) return true;
  return false;
}

int SymbolicTemplate::marked() const {
  int n = 0;
  for (const auto& k : axes)
    for (const auto& [s, c] : k) n += s >= 0;
  return n;
}

int64_t Kernel::outer_count() const {
  int64_t n = 1;
  for (size_t d = 0; d < shape.size(); ++d)
    if (!reduce[d]) n *= shape[d];
  return n;
}

int64_t Kernel::reduce_count() const {
  int64_t n = 1;
  for (size_t d = 0; d < shape.size(); ++d)
    if (reduce[d]) n *= shape[d];
  return n;
}

namespace {
// Whether a map's value changes along any reduce axis.
bool map_depends_on_reduce(const IndexMap& m, const std::vector<bool>& reduce) {
  const View& v = m.views.back();
  for (size_t d = 0; d < reduce.size(); ++d) {
    if (!reduce[d] || v.shape[d] == 1) continue;
    if (v.strides[d] != 0) return true;
    if (v.has_mask() && (v.mask[d].first > 0 || v.mask[d].second < v.shape[d])) return true;
  }
  return false;
}
}  // namespace

Shape indexed_space(const IndexMap& m, const std::vector<int64_t>& ints) {
  Shape s = m.views[size_t(ints[0]) - 1].shape;
  s[size_t(ints[1])] = ints[2];
  return s;
}

namespace {
std::string check_indexed(const std::vector<KNode>& nodes, KNodeId index, const IndexMap& m,
                          const std::vector<int64_t>& ints) {
  if (ints.size() != 3) return "needs ints {split, axis, extent}";
  if (nodes[size_t(index)].dtype != DType::kInt64) return "index value must be i64";
  if (ints[0] < 1 || ints[0] >= int64_t(m.views.size())) return "split out of range";
  const Shape& src = m.views[size_t(ints[0]) - 1].shape;
  if (ints[1] < 0 || ints[1] >= int64_t(src.size()) || ints[2] < 0) return "axis out of range";
  return "";
}
}  // namespace

std::string Kernel::finalize() {
  if (reduce.size() != shape.size()) return "reduce flags do not match the kernel rank";
  for (size_t i = 0; i < nodes.size(); ++i) {
    KNode& n = nodes[i];
    for (KNodeId in : n.inputs)
      if (in < 0 || size_t(in) >= i) return absl::StrCat("node ", i, " uses a later node");
    if (n.op == Op::kLoad || n.op == Op::kValid || n.op == Op::kIota || n.op == Op::kRand ||
        n.op == Op::kRandn) {
      if (n.map.views.empty() || n.map.shape() != shape) return absl::StrCat("node ", i, " has a map of the wrong shape");
      n.inner = map_depends_on_reduce(n.map, reduce);
      if (is_indexed_load(n)) {
        if (n.inputs.size() != 1) return absl::StrCat("indexed load ", i, " takes one index value");
        if (std::string e = check_indexed(nodes, n.inputs[0], n.map, n.ints); !e.empty())
          return absl::StrCat("indexed load ", i, ": ", e);
        n.inner = n.inner || nodes[size_t(n.inputs[0])].inner;
      }
    } else if (n.op == Op::kAxisIndex) {
      n.inner = reduce[n.ints[0]];
    } else if (n.op == Op::kAttention) {
      n.inner = false;  // folds over the Sk and D axes like a reduction
    } else if (n.op == Op::kSegmentReduce) {
      if (n.inputs.size() != 3 || n.ints.size() != 2) return absl::StrCat("segment_reduce ", i, " needs lo, hi, value and {mode, rows}");
      n.inner = false;
      for (KNodeId in : n.inputs) n.inner = n.inner || nodes[size_t(in)].inner;
    } else if (n.op == Op::kSegmentPos) {
      n.inner = false;
    } else if (is_reduce(n.op)) {
      if (!nodes[n.inputs[0]].inner && !has_reduce()) return absl::StrCat("reduce node ", i, " in a kernel without reduce axes");
      n.inner = false;
    } else {
      n.inner = false;
      for (KNodeId in : n.inputs) n.inner = n.inner || nodes[in].inner;
    }
  }
  for (const Store& s : stores) {
    if (s.map.views.empty() || s.map.shape() != shape) return "store map has the wrong shape";
    bool store_inner = map_depends_on_reduce(s.map, reduce);
    if (nodes[s.value].inner && !store_inner) return "inner-level value stored at an outer-level map";
    if (s.indexed()) {
      if (s.index >= KNodeId(nodes.size())) return "indexed store of a missing index";
      if (std::string e = check_indexed(nodes, s.index, s.map, s.ints); !e.empty()) return "indexed store: " + e;
      if (!serial) return "an indexed store needs a serial kernel";
    }
  }
  if (finish.size() > 1) return "more than one finish";
  if (chained()) {
    Kernel& f = finish[0];
    if (std::string e = f.finalize(); !e.empty()) return "finish: " + e;
    if (f.shape.empty() || !f.reduce.back() || std::count(f.reduce.begin(), f.reduce.end(), true) != 1)
      return "finish: its one reduce axis must be its last";
    if (f.chained() || f.serial || f.any_symbolic() || any_symbolic()) return "finish: a plain reduction of fixed size";
    if (tickets < 0) return "a finish without tickets";
  }
  return "";
}

bool share_bytes(const Program& p, int a, int b) {
  if (a == b) return false;
  const BufferDesc &x = p.buffers[size_t(a)], &y = p.buffers[size_t(b)];
  if (x.kind != BufferKind::kIntermediate || y.kind != BufferKind::kIntermediate) return false;
  return x.bytes() > 0 && y.bytes() > 0 && x.offset < y.offset + y.bytes() && y.offset < x.offset + x.bytes();
}

std::string kernel_to_string(const Kernel& k) {
  std::string r = absl::StrCat("kernel ", k.name, " shape=", shape_str(k.shape), " reduce=[");
  bool first = true;
  for (size_t d = 0; d < k.reduce.size(); ++d)
    if (k.reduce[d]) {
      absl::StrAppend(&r, first ? "" : ",", d);
      first = false;
    }
  r += "]";
  if (k.contraction.reduce >= 0)
    absl::StrAppend(&r, " contraction(m=", k.contraction.m_axis, ",n=", k.contraction.n_axis, ",k=",
                    k.contraction.k_axis, k.contraction.tf32 ? ",tf32" : "", ")");
  if (k.serial) r += " serial";
  for (size_t d = 0; d < k.sym.size(); ++d)
    if (k.sym[d].symbolic()) absl::StrAppend(&r, " axis", d, "=", k.sym[d].coef, "*p", k.sym[d].slot);
  r += " {\n";
  for (size_t i = 0; i < k.nodes.size(); ++i) {
    const KNode& n = k.nodes[i];
    absl::StrAppend(&r, "  $", i, " = ", op_name(n.op));
    for (size_t j = 0; j < n.inputs.size(); ++j) absl::StrAppend(&r, j ? ", $" : " $", n.inputs[j]);
    if (n.op == Op::kConst) absl::StrAppend(&r, " ", n.scalar.is_int ? std::to_string(n.scalar.i) : absl::StrCat(n.scalar.f));
    if (n.buffer >= 0) absl::StrAppend(&r, " buf", n.buffer);
    if (!n.ints.empty()) {
      r += " ints=";
      r += shape_str(n.ints);
    }
    if (!n.map.views.empty()) absl::StrAppend(&r, " ", n.map.to_string());
    absl::StrAppend(&r, " : ", dtype_name(n.dtype), n.inner ? " inner" : " outer", "\n");
  }
  for (const Store& s : k.stores) {
    absl::StrAppend(&r, "  store buf", s.buffer, " <- $", s.value, " ", s.map.to_string());
    if (s.indexed()) absl::StrAppend(&r, " at $", s.index, " ints=", shape_str(s.ints));
    r += "\n";
  }
  if (!k.config.empty()) absl::StrAppend(&r, "  config \"", k.config, "\"\n");
  for (const std::string& note : k.notes) absl::StrAppend(&r, "  # ", note, "\n");
  for (const Kernel& f : k.finish) {
    absl::StrAppend(&r, "  finish (tickets buf", k.tickets, "): ");
    const std::string inner = kernel_to_string(f);
    for (size_t at = 0; at < inner.size();) {
      const size_t end = inner.find('\n', at);
      absl::StrAppend(&r, at ? "  " : "", inner.substr(at, end - at + 1));
      at = end + 1;
    }
  }
  return r + "}\n";
}

const char* step_kind_name(StepKind k) {
  switch (k) {
    case StepKind::kKernel: return "kernel";
    case StepKind::kWhile: return "while";
    case StepKind::kIf: return "if";
    case StepKind::kElse: return "else";
    case StepKind::kEnd: return "end";
    case StepKind::kCollective: return "collective";
  }
  return "?";
}

bool Program::has_control() const {
  for (const Step& s : steps)
    if (s.is_marker()) return true;
  return false;
}

CollectiveCall collective_call(const Step& s, const std::vector<BufferDesc>& buffers) {
  CollectiveCall c;
  c.attrs = s.collective;
  c.dtype = buffers[size_t(s.in)].dtype;
  c.in_elems = shape_numel(buffers[size_t(s.in)].shape);
  return c;
}

bool collective_touches_io(const Step& s, const std::vector<BufferDesc>& buffers) {
  return buffers[size_t(s.in)].kind != BufferKind::kIntermediate || buffers[size_t(s.out)].kind != BufferKind::kIntermediate;
}

void step_buffers(const Program& p, size_t s, std::vector<int>* reads, std::vector<int>* writes) {
  reads->clear();
  writes->clear();
  const Step& st = p.steps[s];
  if (st.is_collective()) {
    reads->push_back(st.in);
    writes->push_back(st.out);
  } else if (st.is_kernel()) {
    const Kernel& k = p.kernels[size_t(st.kernel)];
    for (const Kernel* x : k.launched()) {
      for (const Store& w : x->stores) writes->push_back(w.buffer);
      for (const KNode& n : x->nodes)
        if (n.op == Op::kLoad) reads->push_back(n.buffer);
    }
    if (k.tickets >= 0) writes->push_back(k.tickets);
  } else if (st.flag >= 0) {
    reads->push_back(st.flag);
  }
  for (auto* v : {reads, writes}) {
    std::sort(v->begin(), v->end());
    v->erase(std::unique(v->begin(), v->end()), v->end());
  }
}

BlockLinks block_links(const std::vector<Step>& steps) {
  const size_t n = steps.size();
  BlockLinks l{std::vector<int>(n, -1), std::vector<int>(n, -1), std::vector<int>(n, -1)};
  std::vector<int> open;  // heads of the blocks around step i
  for (size_t i = 0; i < n; ++i) {
    switch (steps[i].kind) {
      case StepKind::kKernel:
      case StepKind::kCollective: break;
      case StepKind::kWhile:
      case StepKind::kIf: open.push_back(int(i)); break;
      case StepKind::kElse:
        if (open.empty()) break;
        l.head[i] = open.back();
        l.otherwise[size_t(open.back())] = int(i);
        break;
      case StepKind::kEnd: {
        if (open.empty()) break;
        const int h = open.back();
        open.pop_back();
        l.head[i] = h;
        l.end[size_t(h)] = int(i);
        if (l.otherwise[size_t(h)] >= 0) l.end[size_t(l.otherwise[size_t(h)])] = int(i);
        break;
      }
    }
  }
  return l;
}

absl::StatusOr<size_t> step_after_marker(const std::vector<Step>& steps, const BlockLinks& links, size_t i, bool flag,
                                         std::vector<int64_t>* trips) {
  const Step& s = steps[i];
  switch (s.kind) {
    case StepKind::kWhile:
      if (!flag) {
        (*trips)[i] = 0;
        return size_t(links.end[i]) + 1;
      }
      if (s.max_trips > 0 && (*trips)[i]++ == s.max_trips) return absl::OutOfRangeError(max_trips_message(s.max_trips));
      return i + 1;
    case StepKind::kIf:
      return flag ? i + 1 : size_t(links.otherwise[i] >= 0 ? links.otherwise[i] : links.end[i]) + 1;
    case StepKind::kElse: return size_t(links.end[i]) + 1;  // the then branch ran
    case StepKind::kEnd: return steps[size_t(links.head[i])].kind == StepKind::kWhile ? size_t(links.head[i]) : i + 1;
    case StepKind::kKernel:
    case StepKind::kCollective: break;
  }
  return i + 1;
}

std::string max_trips_message(int64_t max_trips) {
  return absl::StrCat("while_loop: its condition still holds after the maximum of ", max_trips,
                      " trips (WhileOptions::max_trips); the loop's results are not kept");
}

std::string Program::to_string() const {
  std::string r = "program {\n";
  for (size_t i = 0; i < buffers.size(); ++i) {
    const BufferDesc& b = buffers[i];
    const char* kind = b.kind == BufferKind::kInput ? "input" : b.kind == BufferKind::kOutput ? "output" : "temp";
    absl::StrAppend(&r, "  buf", i, " = ", kind, " ", b.index, " : ", dtype_name(b.dtype), shape_str(b.shape));
    if (b.kind == BufferKind::kIntermediate) absl::StrAppend(&r, " @arena+", b.offset);
    if (b.zeroed) r += " zeroed";
    r += "\n";
  }
  absl::StrAppend(&r, "  arena_bytes = ", arena_bytes, " (unplanned ", unplanned_bytes, ")\n");
  for (size_t i = 0; i < params.size(); ++i)
    absl::StrAppend(&r, "  param ", i, " : ", params[i].rng_key ? "rng_key" : dtype_name(params[i].dtype), "\n");
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& s = steps[i];
    if (s.is_collective()) {
      absl::StrAppend(&r, "  step ", i, ": ", describe(s.collective), " buf", s.in, " -> buf", s.out, " (group ",
                      s.collective.comm, " of ", s.collective.world, ")");
      if (!s.deps.empty()) {
        r += " after";
        for (int d : s.deps) absl::StrAppend(&r, " ", d);
      }
      r += "\n";
      continue;
    }
    if (!s.is_kernel()) {
      absl::StrAppend(&r, "  step ", i, ": ", step_kind_name(s.kind));
      if (s.flag >= 0) absl::StrAppend(&r, " buf", s.flag);
      if (s.max_trips > 0) absl::StrAppend(&r, " max_trips=", s.max_trips);
      r += "\n";
      continue;
    }
    absl::StrAppend(&r, "  step ", i, ": ", kernels[steps[i].kernel].name);
    if (!steps[i].deps.empty()) {
      r += " after";
      for (int d : steps[i].deps) absl::StrAppend(&r, " ", d);
    }
    r += "\n";
  }
  r += "}\n";
  for (const Kernel& k : kernels) r += kernel_to_string(k);
  return r;
}

}  // namespace kiln::ir

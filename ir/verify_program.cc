#include "ir/verify_program.h"

#include <algorithm>

#include "absl/strings/str_cat.h"

namespace kiln::ir {
namespace {

absl::Status bad(const std::string& what) { return absl::InvalidArgumentError(absl::StrCat("program: ", what)); }

// A collective step reads one dense buffer and writes another of the same dtype, with the element
// counts its kind gives, and they share no bytes (no collective runs in place).
absl::Status check_collective(const std::vector<BufferDesc>& buffers, const Step& s, size_t i) {
  const auto at = [&](const std::string& what) { return bad(absl::StrCat("step ", i, " (collective): ", what)); };
  if (s.in < 0 || s.out < 0 || size_t(s.in) >= buffers.size() || size_t(s.out) >= buffers.size() || s.in == s.out)
    return at(absl::StrCat("buffers ", s.in, " -> ", s.out, " of ", buffers.size()));
  const BufferDesc &in = buffers[size_t(s.in)], &out = buffers[size_t(s.out)];
  if (out.kind == BufferKind::kInput) return at("writes an input buffer");
  if (in.dtype != out.dtype) return at("operand and result differ in dtype");
  auto shape = collective_shape(s.collective, in.shape);
  if (!shape.ok()) return at(std::string(shape.status().message()));
  if (shape_numel(*shape) != shape_numel(out.shape)) return at("result size does not match the operand's");
  if (in.kind == BufferKind::kIntermediate && out.kind == BufferKind::kIntermediate && in.offset < out.offset + out.bytes() &&
      out.offset < in.offset + in.bytes())
    return at("operand and result share arena bytes");
  if (s.kernel != -1 || s.flag != -1 || s.max_trips != 0) return at("has a kernel, flag or trip limit");
  return absl::OkStatus();
}

}  // namespace

absl::Status verify_plan(const std::vector<BufferDesc>& buffers, const std::vector<Step>& steps, int num_kernels,
                         int64_t arena_bytes, int num_inputs, int num_outputs, const std::vector<int>& outputs) {
  if (num_inputs < 0 || num_outputs < 0 || arena_bytes < 0) return bad("negative input, output or arena size");
  std::vector<int> inputs_seen(size_t(num_inputs), 0), outputs_seen(size_t(num_outputs), 0);
  for (size_t i = 0; i < buffers.size(); ++i) {
    const BufferDesc& b = buffers[i];
    for (int64_t d : b.shape)
      if (d < 0) return bad(absl::StrCat("buffer ", i, " has a negative dimension"));
    const int64_t n = shape_numel(b.shape);
    if (n < 0 || n > INT64_MAX / 8) return bad(absl::StrCat("buffer ", i, " has too many elements"));
    switch (b.kind) {
      case BufferKind::kInput:
        if (b.index < 0 || b.index >= num_inputs) return bad(absl::StrCat("buffer ", i, " is input ", b.index, " of ", num_inputs));
        if (inputs_seen[size_t(b.index)]++) return bad(absl::StrCat("input ", b.index, " is bound twice"));
        break;
      case BufferKind::kOutput:
        if (b.index < 0 || b.index >= num_outputs)
          return bad(absl::StrCat("buffer ", i, " is output ", b.index, " of ", num_outputs));
        if (outputs_seen[size_t(b.index)]++) return bad(absl::StrCat("output ", b.index, " is bound twice"));
        break;
      case BufferKind::kIntermediate:
        if (b.offset < 0 || b.offset > arena_bytes || b.bytes() > arena_bytes - b.offset)
          return bad(absl::StrCat("intermediate buffer ", i, " at offset ", b.offset, " (", b.bytes(), " bytes) lies outside the ",
                                  arena_bytes, "-byte arena"));
        break;
    }
  }
  // Markers nest (while ... end, if ... [else ...] end), test a bool buffer of one element, and
  // deps stay inside their straight-line run.
  std::vector<StepKind> open;
  int run_start = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& s = steps[i];
    if (s.is_collective()) {
      if (absl::Status st = check_collective(buffers, s, i); !st.ok()) return st;
    } else if (s.is_marker()) {
      run_start = int(i) + 1;
      if (!s.deps.empty()) return bad(absl::StrCat("step ", i, " (", step_kind_name(s.kind), ") has deps"));
      switch (s.kind) {
        case StepKind::kWhile:
        case StepKind::kIf: {
          if (s.flag < 0 || size_t(s.flag) >= buffers.size() || buffers[size_t(s.flag)].dtype != DType::kBool ||
              shape_numel(buffers[size_t(s.flag)].shape) != 1 || buffers[size_t(s.flag)].kind != BufferKind::kIntermediate)
            return bad(absl::StrCat("step ", i, " (", step_kind_name(s.kind), ") tests buffer ", s.flag,
                                    ", not an intermediate bool buffer of one element"));
          if (s.max_trips < 0 || (s.kind == StepKind::kIf && s.max_trips != 0))
            return bad(absl::StrCat("step ", i, " has a bad trip limit"));
          if (open.size() >= 64) return bad("blocks nested too deeply");
          open.push_back(s.kind);
          break;
        }
        case StepKind::kElse:
          if (open.empty() || open.back() != StepKind::kIf) return bad(absl::StrCat("step ", i, ": else outside an if"));
          open.back() = StepKind::kElse;
          break;
        case StepKind::kEnd:
          if (open.empty()) return bad(absl::StrCat("step ", i, ": end without a block"));
          open.pop_back();
          break;
        case StepKind::kKernel:
        case StepKind::kCollective: break;
      }
      if (s.kind != StepKind::kWhile && s.kind != StepKind::kIf && (s.flag != -1 || s.max_trips != 0))
        return bad(absl::StrCat("step ", i, " (", step_kind_name(s.kind), ") has a flag"));
      continue;
    } else if (s.kernel < 0 || s.kernel >= num_kernels) {
      return bad(absl::StrCat("step ", i, " runs kernel ", s.kernel, " of ", num_kernels));
    }
    for (int d : s.deps)
      if (d < run_start || size_t(d) >= i)
        return bad(absl::StrCat("step ", i, " depends on step ", d, ", not an earlier one of its run"));
  }
  if (!open.empty()) return bad("a block is not closed");
  for (int o : outputs)
    if (o < 0 || size_t(o) >= buffers.size()) return bad(absl::StrCat("a graph output is buffer ", o, " of ", buffers.size()));
  return absl::OkStatus();
}

namespace {

// The checks of one kernel (or a chained kernel's finish, named `label`) against the program.
absl::Status verify_kernel(const Program& p, const Kernel& k, const std::string& label) {
  const int nbuf = int(p.buffers.size());
  auto in_kernel = [&](const std::string& what) { return bad(absl::StrCat("kernel ", label, ": ", what)); };
  for (size_t i = 0; i < k.nodes.size(); ++i) {
    const KNode& n = k.nodes[i];
    if (n.op == Op::kLoad && (n.buffer < 0 || n.buffer >= nbuf))
      return in_kernel(absl::StrCat("node ", i, " loads buffer ", n.buffer, " of ", nbuf));
  }
  for (const Store& s : k.stores) {
    if (s.buffer < 0 || s.buffer >= nbuf) return in_kernel(absl::StrCat("stores into buffer ", s.buffer, " of ", nbuf));
    if (p.buffers[size_t(s.buffer)].kind == BufferKind::kInput)
      return in_kernel(absl::StrCat("stores into input buffer ", s.buffer));
    if (s.value < 0 || size_t(s.value) >= k.nodes.size()) return in_kernel(absl::StrCat("stores node ", s.value));
  }
  for (size_t i = 0; i < k.nodes.size(); ++i) {
    const KNode& n = k.nodes[i];
    if (n.op == Op::kAxisIndex && (n.ints.empty() || n.ints[0] < 0 || size_t(n.ints[0]) >= k.shape.size()))
      return in_kernel(absl::StrCat("node ", i, " indexes an axis out of range"));
    if (is_reduce(n.op) && n.inputs.empty()) return in_kernel(absl::StrCat("reduce node ", i, " has no operand"));
    if (n.op == Op::kParam) {
      if (n.ints.size() != 1 || n.ints[0] < 0 || size_t(n.ints[0]) >= p.params.size())
        return in_kernel(absl::StrCat("node ", i, " reads a param outside the program's ", p.params.size()));
      if (p.params[size_t(n.ints[0])].dtype != n.dtype)
        return in_kernel(absl::StrCat("node ", i, " reads param ", n.ints[0], " as another dtype"));
    }
    if ((n.op == Op::kRand || n.op == Op::kRandn) && !n.inputs.empty()) {
      const KNode& s = k.nodes[size_t(n.inputs[0])];
      if (n.inputs.size() != 1 || s.op != Op::kParam || !p.params[size_t(s.ints[0])].rng_key)
        return in_kernel(absl::StrCat("random node ", i, " takes its keys from something other than a seed param"));
    }
  }
  if (!k.sym.empty() && k.sym.size() != k.shape.size())
    return in_kernel(absl::StrCat("has ", k.sym.size(), " symbolic extents for ", k.shape.size(), " axes"));
  for (size_t a = 0; a < k.sym.size(); ++a) {
    const SymExtent& e = k.sym[a];
    if (!e.symbolic()) continue;
    if (size_t(e.slot) >= p.params.size() || p.params[size_t(e.slot)].dtype != DType::kInt64 ||
        p.params[size_t(e.slot)].rng_key)
      return in_kernel(absl::StrCat("axis ", a, " reads its extent from param ", e.slot, ", which is not an i64 param"));
    if (e.coef <= 0 || k.shape[a] % e.coef != 0)
      return in_kernel(absl::StrCat("axis ", a, " of extent ", k.shape[a], " is not a positive multiple of ", e.coef,
                                    " symbolic units"));
    if (a < k.reduce.size() && k.reduce[a]) return in_kernel(absl::StrCat("reduce axis ", a, " has a symbolic extent"));
  }
  // Two buffers of one kernel that share arena bytes must be an in-place pair: the same range,
  // one read and one written (codegen then declares just those two as possibly aliasing).
  std::vector<int> touched, written;
  for (const KNode& n : k.nodes)
    if (n.op == Op::kLoad) touched.push_back(n.buffer);
  for (const Store& s : k.stores) {
    touched.push_back(s.buffer);
    written.push_back(s.buffer);
  }
  for (int w : written)
    for (int t : touched) {
      if (!share_bytes(p, w, t)) continue;
      const BufferDesc &a = p.buffers[size_t(w)], &b = p.buffers[size_t(t)];
      const bool in_place = a.offset == b.offset && a.bytes() == b.bytes() &&
                            std::find(written.begin(), written.end(), t) == written.end();
      if (!in_place)
        return in_kernel(absl::StrCat("writes buffer ", w, " [", a.offset, ", ", a.offset + a.bytes(),
                                      ") and touches buffer ", t, " [", b.offset, ", ", b.offset + b.bytes(),
                                      "): they share arena bytes without being an in-place pair"));
    }
  Kernel copy = k;  // finalize() recomputes KNode::inner; the Program itself is not touched
  if (std::string e = copy.finalize(); !e.empty()) return in_kernel(e);
  const Contraction& c = k.contraction;
  if (c.reduce >= 0) {
    const int nn = int(k.nodes.size()), rank = int(k.shape.size());
    if (c.reduce >= nn || c.lhs < 0 || c.lhs >= nn || c.rhs < 0 || c.rhs >= nn)
      return in_kernel("a contraction names nodes out of range");
    if (c.m_axis < 0 || c.m_axis >= rank || c.n_axis < 0 || c.n_axis >= rank || c.k_axis < 0 || c.k_axis >= rank)
      return in_kernel("a contraction names axes out of range");
  }
  return absl::OkStatus();
}

// A chained kernel (ir::Kernel::finish): its finish reads the partials it stores, P to an
// output, and counts them in tickets of its own.
absl::Status verify_chain(const Program& p, const Kernel& k) {
  auto in_kernel = [&](const std::string& what) { return bad(absl::StrCat("kernel ", k.name, ": ", what)); };
  const Kernel& f = k.finish[0];
  // (verify_kernel has finalized k, its finish's shape rules included.)
  if (absl::Status s = verify_kernel(p, f, k.name + "'s finish"); !s.ok()) return s;
  if (k.tickets < 0 || size_t(k.tickets) >= p.buffers.size()) return in_kernel("tickets outside the program's buffers");
  const BufferDesc& t = p.buffers[size_t(k.tickets)];
  if (t.kind != BufferKind::kIntermediate || !t.zeroed || t.dtype != DType::kUInt32 || shape_numel(t.shape) < f.outer_count())
    return in_kernel(absl::StrCat("tickets buffer ", k.tickets, " is not a zeroed uint32 intermediate of ", f.outer_count()));
  for (const Kernel* x : k.launched()) {
    for (const KNode& n : x->nodes)
      if (n.op == Op::kLoad && n.buffer == k.tickets) return in_kernel("loads its tickets");
    for (const Store& s : x->stores)
      if (s.buffer == k.tickets) return in_kernel("stores into its tickets");
  }
  // The partials: every inner load of the finish reads a buffer this kernel stores.
  for (const KNode& n : f.nodes) {
    if (n.op != Op::kLoad || !n.inner) continue;
    bool stored = false;
    for (const Store& s : k.stores) stored = stored || s.buffer == n.buffer;
    if (!stored) return in_kernel(absl::StrCat("its finish folds buffer ", n.buffer, ", which it does not store"));
  }
  return absl::OkStatus();
}

// Zeroed buffers are tickets of one chained kernel each, and share no bytes with another buffer.
absl::Status verify_zeroed(const Program& p) {
  for (size_t b = 0; b < p.buffers.size(); ++b) {
    if (!p.buffers[b].zeroed) continue;
    if (p.buffers[b].kind != BufferKind::kIntermediate) return bad(absl::StrCat("zeroed buffer ", b, " is not an intermediate"));
    int users = 0;
    for (const Kernel& k : p.kernels) users += k.tickets == int(b);
    if (users != 1) return bad(absl::StrCat("zeroed buffer ", b, " is the tickets of ", users, " kernels"));
    for (size_t o = 0; o < p.buffers.size(); ++o)
      if (share_bytes(p, int(b), int(o))) return bad(absl::StrCat("zeroed buffer ", b, " shares arena bytes with buffer ", o));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status verify(const Program& p) {
  if (absl::Status s = verify_plan(p.buffers, p.steps, int(p.kernels.size()), p.arena_bytes, p.num_inputs, p.num_outputs,
                                   p.outputs);
      !s.ok())
    return s;
  for (const Kernel& k : p.kernels) {
    if (absl::Status s = verify_kernel(p, k, k.name); !s.ok()) return s;
    if (k.chained()) {
      if (absl::Status s = verify_chain(p, k); !s.ok()) return s;
    } else if (k.tickets >= 0) {
      return bad(absl::StrCat("kernel ", k.name, ": tickets without a finish"));
    }
  }
  return verify_zeroed(p);
}

}  // namespace kiln::ir

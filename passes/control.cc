#include "passes/control.h"

#include <algorithm>
#include <functional>

#include "absl/strings/str_cat.h"
#include "ir/params.h"
#include "ir/verify_program.h"
#include "passes/insert_barriers.h"
#include "passes/plan_memory.h"

namespace kiln::passes {
namespace {

using ir::NodeId;

// A node every stage may compute for itself: built from constants, iotas, params and random
// values by elementwise and movement ops only (cheap to repeat, and fused into its readers).
std::vector<bool> free_nodes(const ir::Graph& g) {
  std::vector<bool> free(g.size(), false);
  for (size_t i = 0; i < g.size(); ++i) {
    const ir::Node& n = g.node(NodeId(i));
    const ir::OpClass c = ir::op_class(n.op);
    if (c == ir::OpClass::kSource) {
      free[i] = n.op != ir::Op::kInput;
    } else if (ir::is_elementwise(n.op) || c == ir::OpClass::kMovement) {
      free[i] = true;
      for (NodeId in : n.inputs) free[i] = free[i] && free[size_t(in)];
    }
  }
  return free;
}

class Structurer {
 public:
  Structurer(const ir::TargetInfo& target, const Options& opts) : target_(target), opts_(opts) {}

  ir::Program& program() { return p_; }
  std::string dump_prefix;

  int new_buffer(DType dtype, const Shape& shape, ir::BufferKind kind = ir::BufferKind::kIntermediate, int index = 0) {
    ir::BufferDesc b;
    b.kind = kind;
    b.index = index;
    b.dtype = dtype;
    b.shape = shape;
    p_.buffers.push_back(b);
    return int(p_.buffers.size()) - 1;
  }

  // The buffers holding g's outputs, with g's input position i bound to in_bufs[i]. want[k] >= 0
  // puts output k in that buffer (a copy where the value lives elsewhere already).
  absl::StatusOr<std::vector<int>> emit(const ir::Graph& g, const std::vector<int>& in_bufs, const std::vector<int>& want) {
    const size_t N = g.size();
    const std::vector<bool> free = free_nodes(g);
    std::vector<int> stage(N, 0), buf(N, -1);
    std::vector<std::vector<int>> results(N);
    int last_stage = 0;
    for (size_t i = 0; i < N; ++i) {
      const ir::Node& n = g.node(NodeId(i));
      for (NodeId in : n.inputs) stage[i] = std::max(stage[i], stage[size_t(in)]);
      if (n.op == ir::Op::kResult) stage[i] = stage[size_t(n.inputs[0])] + 1;
      if (n.op == ir::Op::kInput) buf[i] = in_bufs[size_t(n.ints[0])];
      last_stage = std::max(last_stage, stage[i]);
    }
    // Which nodes are read from memory outside their own stage's straight-line part: by a node
    // of a later stage, by a control node, or as an output.
    std::vector<bool> escapes(N, false);
    for (size_t i = 0; i < N; ++i) {
      const ir::Node& n = g.node(NodeId(i));
      for (NodeId in : n.inputs) {
        const bool straight = !ir::is_control(n.op) && n.op != ir::Op::kResult;
        if (!straight || (!free[size_t(in)] && stage[size_t(in)] != stage[i])) escapes[size_t(in)] = true;
      }
    }
    for (NodeId o : g.outputs()) escapes[size_t(o)] = true;
    std::vector<bool> claimed(want.size(), false);
    for (int s = 0; s <= last_stage; ++s) {
      std::vector<NodeId> members, outs;
      for (size_t i = 0; i < N; ++i) {
        const ir::Node& n = g.node(NodeId(i));
        if (n.op == ir::Op::kInput || n.op == ir::Op::kResult || ir::is_control(n.op)) continue;
        // A free node is computed where it is read, and materialized in stage 0 where it escapes.
        const bool member = free[i] ? (s == 0 && escapes[i]) : stage[i] == s;
        if (!member) continue;
        members.push_back(NodeId(i));
        if (escapes[i]) outs.push_back(NodeId(i));
      }
      if (!outs.empty()) {
        if (absl::Status st = emit_stage(g, free, members, outs, &buf, want, &claimed); !st.ok()) return st;
      }
      for (size_t i = 0; i < N; ++i) {
        const ir::Node& n = g.node(NodeId(i));
        if (!ir::is_control(n.op) || stage[i] != s) continue;
        std::vector<int> ops;
        for (NodeId in : n.inputs) ops.push_back(buf[size_t(in)]);
        auto got = n.op == ir::Op::kWhile ? emit_while(n, ops) : emit_if(n, ops);
        if (!got.ok()) return got.status();
        results[i] = *std::move(got);
      }
      for (size_t i = 0; i < N; ++i) {
        const ir::Node& n = g.node(NodeId(i));
        if (n.op == ir::Op::kResult && stage[i] == s + 1) buf[i] = results[size_t(n.inputs[0])][size_t(n.ints[0])];
      }
    }
    std::vector<int> out;
    for (size_t k = 0; k < g.outputs().size(); ++k) {
      const int b = buf[size_t(g.outputs()[k])];
      if (b < 0) return absl::InternalError(absl::StrCat("control: output ", k, " has no buffer"));
      const int w = k < want.size() ? want[k] : -1;
      if (w >= 0 && w != b) copy(b, w);
      out.push_back(w >= 0 ? w : b);
    }
    return out;
  }

  // A kernel step copying buffer src into dst (same dtype and size).
  void copy(int src, int dst) {
    const ir::BufferDesc& d = p_.buffers[size_t(dst)];
    const int64_t n = shape_numel(d.shape);
    if (n == 0) return;
    ir::Kernel k;
    k.name = absl::StrCat("k", p_.kernels.size(), "_copy");
    k.shape = {n};
    k.reduce = {false};
    ir::KNode load;
    load.op = ir::Op::kLoad;
    load.dtype = d.dtype;
    load.buffer = src;
    load.map = ir::IndexMap::of(ir::View::contiguous({n}));
    k.nodes.push_back(load);
    ir::Store st;
    st.buffer = dst;
    st.map = load.map;
    st.value = 0;
    k.stores.push_back(st);
    k.computes = "copy (a loop's or branch's value into its buffer)";
    k.finalize();
    add_step(int(p_.kernels.size()));
    p_.kernels.push_back(std::move(k));
  }

 private:
  void add_step(int kernel) {
    ir::Step s;
    s.kernel = kernel;
    p_.steps.push_back(s);
  }
  void add_marker(ir::StepKind kind, int flag = -1, int64_t max_trips = 0) {
    ir::Step s;
    s.kind = kind;
    s.flag = flag;
    s.max_trips = max_trips;
    p_.steps.push_back(s);
  }

  // One stage's straight-line part: `members` (ascending) as a graph of their own whose inputs
  // are the values they read from elsewhere, compiled by the ordinary pipeline, its kernels and
  // buffers added to the program. Free operands are cloned in; param slots renumbered densely
  // (the pipeline's rule) and mapped back in the kernels.
  absl::Status emit_stage(const ir::Graph& g, const std::vector<bool>& free, const std::vector<NodeId>& members,
                          const std::vector<NodeId>& outs, std::vector<int>* buf, const std::vector<int>& want,
                          std::vector<bool>* claimed) {
    ir::Graph seg;
    std::vector<NodeId> loc(g.size(), -1);
    std::vector<int> ext;
    std::vector<int> slots;  // global slot of each local param
    std::vector<bool> is_member(g.size(), false);
    for (NodeId m : members) is_member[size_t(m)] = true;
    absl::Status failed;
    std::function<NodeId(NodeId)> ensure = [&](NodeId x) -> NodeId {
      if (loc[size_t(x)] >= 0) return loc[size_t(x)];
      const ir::Node& n = g.node(x);
      ir::Node c = n;
      if (!is_member[size_t(x)] && !free[size_t(x)]) {
        const int b = (*buf)[size_t(x)];
        if (b < 0 && failed.ok()) failed = absl::InternalError(absl::StrCat("control: %", x, " is read before it has a buffer"));
        c = ir::Node();
        c.op = ir::Op::kInput;
        c.dtype = n.dtype;
        c.shape = n.shape;
        c.ints = {int64_t(ext.size())};
        ext.push_back(b);
        return loc[size_t(x)] = seg.add(std::move(c));
      }
      for (NodeId& in : c.inputs) in = ensure(in);
      if (c.op == ir::Op::kParam) {
        c.ints = {int64_t(slots.size())};
        slots.push_back(int(n.ints[0]));
      }
      return loc[size_t(x)] = seg.add(std::move(c));
    };
    for (NodeId m : members) ensure(m);
    if (!failed.ok()) return failed;
    for (NodeId o : outs) seg.add_output(loc[size_t(o)]);
    auto compiled = compile_graph(seg, target_, opts_);
    if (!compiled.ok()) return compiled.status();
    if (dump_prefix.empty()) dump_prefix = compiled->dump_prefix;
    std::vector<int> targets(outs.size(), -1);
    for (size_t k = 0; k < outs.size(); ++k)
      for (size_t j = 0; j < g.outputs().size() && j < want.size(); ++j)
        if (g.outputs()[j] == outs[k] && want[j] >= 0 && !(*claimed)[j]) {
          targets[k] = want[j];
          (*claimed)[j] = true;
          break;
        }
    std::vector<int> got = inline_program(compiled->program, ext, targets, slots);
    for (size_t k = 0; k < outs.size(); ++k) (*buf)[size_t(outs[k])] = got[k];
    return absl::OkStatus();
  }

  // Adds a compiled straight-line program: its inputs are `ext`, output k goes to targets[k]
  // (or a new buffer when -1); returns the buffer of each output.
  std::vector<int> inline_program(const ir::Program& sub, const std::vector<int>& ext, const std::vector<int>& targets,
                                  const std::vector<int>& slots) {
    std::vector<int> map(sub.buffers.size(), -1);
    for (size_t b = 0; b < sub.buffers.size(); ++b) {
      const ir::BufferDesc& d = sub.buffers[b];
      if (d.kind == ir::BufferKind::kInput) {
        map[b] = ext[size_t(d.index)];
        continue;
      }
      if (d.kind == ir::BufferKind::kOutput)
        for (size_t k = 0; k < sub.outputs.size() && map[b] < 0; ++k)
          if (sub.outputs[k] == int(b) && targets[k] >= 0) map[b] = targets[k];
      if (map[b] < 0) map[b] = new_buffer(d.dtype, d.shape);
    }
    const int base = int(p_.kernels.size());
    for (const ir::Kernel& k : sub.kernels) {
      ir::Kernel c = k;
      for (ir::KNode& n : c.nodes) {
        if (n.op == ir::Op::kLoad) n.buffer = map[size_t(n.buffer)];
        if (n.op == ir::Op::kParam) n.ints[0] = slots[size_t(n.ints[0])];
      }
      for (ir::Store& s : c.stores) s.buffer = map[size_t(s.buffer)];
      // Names are unique in a program (they are symbols of one module): renumber "k<i>_...".
      size_t rest = 1;
      while (rest < c.name.size() && c.name[rest] >= '0' && c.name[rest] <= '9') ++rest;
      c.name = absl::StrCat("k", p_.kernels.size(), c.name.substr(std::min(rest, c.name.size())));
      c.sources.clear();  // they index the stage's graph, not the one the program computes
      p_.kernels.push_back(std::move(c));
    }
    for (const ir::Step& s : sub.steps) {
      if (!s.is_collective()) {
        add_step(base + s.kernel);
        continue;
      }
      ir::Step c = s;
      c.deps.clear();
      c.in = map[size_t(s.in)];
      c.out = map[size_t(s.out)];
      p_.steps.push_back(c);
    }
    std::vector<int> out;
    for (size_t k = 0; k < sub.outputs.size(); ++k) {
      const int b = map[size_t(sub.outputs[k])];
      if (targets[k] >= 0 && b != targets[k]) copy(b, targets[k]);
      out.push_back(targets[k] >= 0 ? targets[k] : b);
    }
    return out;
  }

  absl::StatusOr<std::vector<int>> emit_while(const ir::Node& n, const std::vector<int>& ops) {
    const size_t carried = size_t(n.ints[0]);
    std::vector<int> args = ops, c(carried);
    for (size_t k = 0; k < carried; ++k) {
      const ir::BufferDesc& d = p_.buffers[size_t(ops[k])];
      c[k] = new_buffer(d.dtype, d.shape);
      copy(ops[k], c[k]);
      args[k] = c[k];
    }
    const int flag = new_buffer(DType::kBool, {});
    const size_t cond_begin = p_.steps.size();
    if (auto s = emit((*n.regions)[0], args, {flag}); !s.ok()) return s.status();
    const size_t cond_end = p_.steps.size();
    add_marker(ir::StepKind::kWhile, flag, n.ints[1]);
    const size_t body_begin = p_.steps.size();
    const int fresh_from = int(p_.buffers.size());
    auto out = emit((*n.regions)[1], args, std::vector<int>(carried, -1));
    if (!out.ok()) return out.status();
    write_in_place(body_begin, fresh_from, c, &*out);
    // All carried values change at once: one that becomes another's old value is saved first.
    for (size_t k = 0; k < carried; ++k) {
      const int b = (*out)[k];
      if (b == c[k] || std::find(c.begin(), c.end(), b) == c.end()) continue;
      const int t = new_buffer(p_.buffers[size_t(b)].dtype, p_.buffers[size_t(b)].shape);
      copy(b, t);
      (*out)[k] = t;
    }
    for (size_t k = 0; k < carried; ++k)
      if ((*out)[k] != c[k]) copy((*out)[k], c[k]);
    // The condition again, for the next trip: the same kernels on the same buffers.
    for (size_t i = cond_begin; i < cond_end; ++i) p_.steps.push_back(p_.steps[i]);
    add_marker(ir::StepKind::kEnd);
    return c;
  }

  // A body result that one kernel of the body computes goes straight into its carried buffer
  // (no copy after the body) when no later step of the body reads the carried value (it would
  // see the new one) and that kernel reads it, if at all, only at the element it writes: an
  // elementwise kernel loading it over the map it stores with, so each element is read before it
  // is overwritten and by the same iteration (plan_memory's in-place rule). `fresh_from`: the
  // first buffer the body made.
  void write_in_place(size_t body_begin, int fresh_from, const std::vector<int>& c, std::vector<int>* out) {
    const size_t body_end = p_.steps.size();
    for (size_t s = body_begin; s < body_end; ++s)
      if (p_.steps[s].is_collective()) return;  // (kernels alone are checked below)
    std::vector<int> uses(p_.kernels.size(), 0);  // steps running each kernel
    for (const ir::Step& st : p_.steps)
      if (st.is_kernel()) ++uses[size_t(st.kernel)];
    auto loads = [](const ir::Kernel& k, int b) {
      for (const ir::KNode& x : k.nodes)
        if (x.op == ir::Op::kLoad && x.buffer == b) return true;
      return false;
    };
    for (size_t k = 0; k < c.size(); ++k) {
      const int b = (*out)[k];
      if (b == c[k] || b < fresh_from || p_.buffers[size_t(b)].kind != ir::BufferKind::kIntermediate ||
          std::count(out->begin(), out->end(), b) != 1 || std::count(out->begin(), out->end(), c[k]) != 0)
        continue;  // (another result that is carried value k unchanged needs its old value)
      // The one step writing b, outside any block nested in the body.
      int writer = -1, depth = 0, writers = 0;
      for (size_t s = body_begin; s < body_end; ++s) {
        const ir::Step& st = p_.steps[s];
        if (st.is_marker()) {
          depth += st.kind == ir::StepKind::kWhile || st.kind == ir::StepKind::kIf ? 1 : st.kind == ir::StepKind::kEnd ? -1 : 0;
          continue;
        }
        for (const ir::Store& x : p_.kernels[size_t(st.kernel)].stores)
          if (x.buffer == b) {
            ++writers;
            if (depth == 0) writer = int(s);
          }
      }
      if (writers != 1 || writer < 0) continue;
      const ir::Kernel& w = p_.kernels[size_t(p_.steps[size_t(writer)].kernel)];
      bool ok = true;
      if (loads(w, c[k])) {
        const ir::Store* st = nullptr;
        for (const ir::Store& x : w.stores)
          if (x.buffer == b) st = &x;
        ok = !w.has_reduce() && st && !st->indexed();
        for (const ir::KNode& x : w.nodes)
          if (ok && x.op == ir::Op::kLoad && x.buffer == c[k]) ok = !ir::is_indexed_load(x) && x.map == st->map;
      }
      for (size_t s = size_t(writer); s < body_end && ok; ++s) {
        const ir::Step& st = p_.steps[s];
        if (!st.is_kernel()) continue;
        const ir::Kernel& x = p_.kernels[size_t(st.kernel)];
        if (s > size_t(writer) && loads(x, c[k])) ok = false;
        if ((loads(x, b) || s == size_t(writer)) && uses[size_t(st.kernel)] != 1) ok = false;  // renamed below: its own
      }
      if (!ok) continue;
      for (size_t s = size_t(writer); s < body_end; ++s) {
        if (!p_.steps[s].is_kernel()) continue;
        ir::Kernel& x = p_.kernels[size_t(p_.steps[s].kernel)];
        for (ir::KNode& n : x.nodes)
          if (n.op == ir::Op::kLoad && n.buffer == b) n.buffer = c[k];
        for (ir::Store& n : x.stores)
          if (n.buffer == b) n.buffer = c[k];
      }
      (*out)[k] = c[k];
    }
  }

  absl::StatusOr<std::vector<int>> emit_if(const ir::Node& n, const std::vector<int>& ops) {
    const ir::Graph& then = (*n.regions)[0];
    std::vector<int> r;
    for (NodeId o : then.outputs()) r.push_back(new_buffer(then.node(o).dtype, then.node(o).shape));
    const std::vector<int> args(ops.begin() + 1, ops.end());
    // The predicate in a flag of its own: markers test intermediates (ir/program.h), which a
    // backend can read without knowing the run's bindings.
    const int flag = new_buffer(DType::kBool, {});
    copy(ops[0], flag);
    add_marker(ir::StepKind::kIf, flag);
    if (auto s = emit(then, args, r); !s.ok()) return s.status();
    add_marker(ir::StepKind::kElse);
    if (auto s = emit((*n.regions)[1], args, r); !s.ok()) return s.status();
    add_marker(ir::StepKind::kEnd);
    return r;
  }

  const ir::TargetInfo& target_;
  const Options& opts_;
  ir::Program p_;
};

}  // namespace

bool has_control(const ir::Graph& g) {
  for (const ir::Node& n : g.nodes())
    if (ir::is_control(n.op)) return true;
  return false;
}

absl::StatusOr<Compiled> compile_structured(const ir::Graph& g, const ir::TargetInfo& target, const Options& opts) {
  Structurer st(target, opts);
  ir::Program& p = st.program();
  const std::vector<NodeId> inputs = g.input_nodes();
  std::vector<int> in_bufs;
  for (size_t pos = 0; pos < inputs.size(); ++pos) {
    const DType dt = inputs[pos] >= 0 ? g.node(inputs[pos]).dtype : DType::kFloat32;
    const Shape sh = inputs[pos] >= 0 ? g.node(inputs[pos]).shape : Shape{};
    in_bufs.push_back(st.new_buffer(dt, sh, ir::BufferKind::kInput, int(pos)));
  }
  p.num_inputs = int(inputs.size());
  auto outs = st.emit(g, in_bufs, {});
  if (!outs.ok()) return outs.status();
  for (int b : *outs) {
    if (p.buffers[size_t(b)].kind == ir::BufferKind::kIntermediate) p.buffers[size_t(b)].kind = ir::BufferKind::kOutput;
    p.outputs.push_back(b);
  }
  for (ir::BufferDesc& d : p.buffers)  // numbered in buffer order, as schedule() numbers them
    if (d.kind == ir::BufferKind::kOutput) d.index = p.num_outputs++;
  p.params = ir::param_descs(g);
  plan_memory(&p);
  insert_barriers(&p);
  if (absl::Status s = ir::verify(p); !s.ok())
    return absl::InternalError(absl::StrCat("control: passes produced a bad program: ", s.message()));
  if (opts.debug >= 3) std::fprintf(stderr, "kiln: --- structured program ---\n%s", p.to_string().c_str());
  if (opts.on_stage) opts.on_stage("program", p.to_string());
  Compiled out;
  out.program = std::move(p);
  out.graph = g;
  out.dump_prefix = st.dump_prefix;
  return out;
}

}  // namespace kiln::passes

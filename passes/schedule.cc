#include "passes/schedule.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "passes/lower.h"

namespace kiln::passes {

namespace {

std::vector<ir::IndexMap*> kernel_maps(ir::Kernel* k) {
  std::vector<ir::IndexMap*> maps;
  for (ir::KNode& n : k->nodes)
    if (!n.map.views.empty()) maps.push_back(&n.map);
  for (ir::Store& s : k->stores) maps.push_back(&s.map);
  return maps;
}

bool full_mask(const ir::View& v, size_t d) {
  return !v.has_mask() || (v.mask[d].first == 0 && v.mask[d].second == v.shape[d]);
}

void erase_axis(ir::Kernel* k, size_t d) {
  for (ir::IndexMap* m : kernel_maps(k)) {
    ir::View& v = m->views.back();
    v.shape.erase(v.shape.begin() + d);
    v.strides.erase(v.strides.begin() + d);
    if (v.has_mask()) v.mask.erase(v.mask.begin() + d);
  }
  k->shape.erase(k->shape.begin() + d);
  k->reduce.erase(k->reduce.begin() + d);
}

void remap_contraction_axis(int* axis, size_t removed) {
  if (*axis > int(removed)) --*axis;
}

}  // namespace

void merge_axes(ir::Kernel* k) {
  bool attention = false;
  for (const ir::KNode& n : k->nodes) attention = attention || n.op == ir::Op::kAttention;
  if (k->contraction.reduce >= 0 || attention) {
    // Keep the m/n/k axes addressable; only batch axes could merge, and rarely matter.
    return;
  }
  // Drop size-1 axes (keeping at least one reduce axis when the kernel reduces).
  for (size_t d = k->shape.size(); d-- > 0;) {
    if (k->shape[d] != 1) continue;
    if (k->reduce[d]) {
      int reduce_axes = 0;
      for (bool r : k->reduce) reduce_axes += r;
      if (reduce_axes == 1) continue;
    }
    bool has_argreduce = false;
    for (const ir::KNode& n : k->nodes) has_argreduce = has_argreduce || ir::is_arg_reduce(n.op);
    if (k->reduce[d] && has_argreduce) continue;
    erase_axis(k, d);
  }
  // Merge axis d into d+1 when every map walks them as one.
  for (size_t d = k->shape.size(); d-- > 1;) {
    size_t a = d - 1, b = d;
    if (k->reduce[a] != k->reduce[b]) continue;
    bool ok = true;
    for (ir::IndexMap* m : kernel_maps(k)) {
      const ir::View& v = m->views.back();
      if (v.strides[a] != v.strides[b] * v.shape[b] || !full_mask(v, a) || !full_mask(v, b)) {
        ok = false;
        break;
      }
    }
    if (!ok) continue;
    for (ir::IndexMap* m : kernel_maps(k)) {
      ir::View& v = m->views.back();
      v.shape[b] *= v.shape[a];
      if (v.has_mask()) v.mask[b] = {0, v.shape[b]};
      v.shape.erase(v.shape.begin() + a);
      v.strides.erase(v.strides.begin() + a);
      if (v.has_mask()) v.mask.erase(v.mask.begin() + a);
      v.canonicalize();
    }
    k->shape[b] *= k->shape[a];
    k->shape.erase(k->shape.begin() + a);
    k->reduce.erase(k->reduce.begin() + a);
  }
  (void)remap_contraction_axis;
}

absl::StatusOr<ir::Program> schedule(const ir::Graph& g, const FusionPlan& plan) {
  ir::Program p;
  std::vector<int> buffer_of(g.size(), -1);
  std::vector<ir::NodeId> inputs = g.input_nodes();
  p.num_inputs = int(inputs.size());
  for (size_t pos = 0; pos < inputs.size(); ++pos) {
    ir::BufferDesc b;
    b.kind = ir::BufferKind::kInput;
    b.index = int(pos);
    if (inputs[pos] >= 0) {
      b.dtype = g.node(inputs[pos]).dtype;
      b.shape = g.node(inputs[pos]).shape;
      buffer_of[inputs[pos]] = int(pos);
    }
    p.buffers.push_back(b);
  }
  int num_out = 0;
  for (ir::NodeId o : g.outputs()) {
    if (buffer_of[o] < 0) {
      ir::BufferDesc b;
      b.kind = ir::BufferKind::kOutput;
      b.index = num_out++;
      b.dtype = g.node(o).dtype;
      b.shape = g.node(o).shape;
      buffer_of[o] = int(p.buffers.size());
      p.buffers.push_back(b);
    }
    p.outputs.push_back(buffer_of[o]);
  }
  p.num_outputs = num_out;
  for (size_t i = 0; i < g.size(); ++i) {
    if (!plan.stored[i] || buffer_of[i] >= 0) continue;
    ir::BufferDesc b;
    b.kind = ir::BufferKind::kIntermediate;
    b.dtype = g.node(ir::NodeId(i)).dtype;
    b.shape = g.node(ir::NodeId(i)).shape;
    buffer_of[i] = int(p.buffers.size());
    p.buffers.push_back(b);
  }
  auto append = [&](const LowerRequest& req, const std::vector<ir::NodeId>& named_by,
                    std::vector<ir::NodeId> sources) -> absl::Status {
    auto k = lower_group(req);
    if (!k.ok()) return k.status();
    std::string name = absl::StrCat("k", p.kernels.size());
    std::vector<std::string> seen;
    for (ir::NodeId n : named_by) {
      std::string op = req.scatter_init ? "scatter_copy" : ir::op_name(g.node(n).op);
      if (std::find(seen.begin(), seen.end(), op) == seen.end() && seen.size() < 3) {
        seen.push_back(op);
        name += "_" + op;
      }
    }
    k->name = name;
    for (ir::NodeId n : sources)
      absl::StrAppend(&k->computes, k->computes.empty() ? "" : ", ", "%", n, " ",
                      req.scatter_init ? "scatter (copy of its data)" : ir::op_name(g.node(n).op));
    k->sources = std::move(sources);
    merge_axes(&*k);
    std::string err = k->finalize();
    if (!err.empty()) return absl::InternalError(absl::StrCat("kernel ", name, ": ", err));
    ir::Step s;
    s.kernel = int(p.kernels.size());
    p.kernels.push_back(*std::move(k));
    p.steps.push_back(s);
    return absl::OkStatus();
  };
  for (const Group& grp : plan.groups) {
    if (grp.space.collective) {  // a step, not a kernel (ir/program.h)
      const ir::Node& n = g.node(grp.computed.back());
      ir::Step s;
      s.kind = ir::StepKind::kCollective;
      s.collective = ir::CollectiveAttrs::from_ints(n.ints);
      s.in = buffer_of[size_t(n.inputs[0])];
      s.out = buffer_of[size_t(grp.computed.back())];
      if (grp.computed.size() != 1 || s.in < 0 || s.out < 0)
        return absl::InternalError(absl::StrCat("schedule: the collective %", grp.computed.back(), " has no buffers"));
      p.steps.push_back(s);
      continue;
    }
    LowerRequest req;
    req.graph = &g;
    req.space = grp.space;
    req.computed = grp.computed;
    for (ir::NodeId n : grp.computed)
      if (plan.stored[n]) req.stores.push_back(n);
    if (req.stores.empty()) continue;
    req.buffer_of = &buffer_of;
    // A scatter's buffer first gets a copy of its data (a kernel of the data's own space).
    for (ir::NodeId n : req.stores) {
      if (g.node(n).op != ir::Op::kScatter) continue;
      LowerRequest copy;
      copy.graph = &g;
      copy.space = elementwise_space(g.node(n).shape);
      copy.stores = {n};
      copy.buffer_of = &buffer_of;
      copy.scatter_init = true;
      if (absl::Status st = append(copy, {n}, {n}); !st.ok()) return st;
    }
    if (absl::Status st = append(req, grp.computed, group_members(g, plan, grp)); !st.ok()) return st;
  }
  return p;
}

}  // namespace kiln::passes

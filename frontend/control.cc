// while_loop and cond (kiln/control.h): the functions are called once on placeholders and what
// they record becomes the regions of one while / if node (ir/graph.h).
#include "kiln/control.h"

#include <atomic>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "frontend/lazy.h"
#include "frontend/node_pool.h"
#include "ir/graph.h"
#include "runtime/device.h"

namespace kiln {
namespace {

using detail::LazyNode;
using detail::NodePtr;

NodePtr new_node(ir::Op op, DType dtype, Shape shape, runtime::Device* device) {
  auto n = std::allocate_shared<LazyNode>(detail::NodeAllocator<LazyNode>());
  n->op = op;
  n->dtype = dtype;
  n->shape = std::move(shape);
  n->device = device;
  n->trace = detail::current_trace();
  return n;
}

// Marks what this thread records while a cond branch is traced (restored on exit, so branches
// nest).
class BranchTrace {
 public:
  BranchTrace() : saved_(detail::current_trace()) {
    static std::atomic<uint32_t> serial{0};
    id_ = serial.fetch_add(1) + 1;
    detail::current_trace() = id_;
  }
  ~BranchTrace() { detail::current_trace() = saved_; }
  uint32_t id() const { return id_; }

 private:
  uint32_t saved_, id_ = 0;
};

// A stand-in for a function argument while it is traced: an input without a buffer (realize
// refuses to read one).
NodePtr placeholder(const Tensor& like, runtime::Device* device) {
  return new_node(ir::Op::kInput, like.dtype(), like.shape(), device);
}

// The values some functions recorded (walked under the realize lock: another thread may be
// realizing part of the history they read), split into what depends on their arguments (the regions'
// nodes), constants built by cheap ops and views of captured values (both cloned into the
// regions), and everything else they read (captured: operands of the control node, computed once
// outside it).
class Tracer {
 public:
  // `own`: a cond's branch trace, whose nodes all belong to the regions even where they do not
  // depend on the operands (a branch runs only what it recorded); 0 for a loop, whose work that
  // does not depend on its carried values is captured, i.e. hoisted out of the loop.
  explicit Tracer(std::vector<NodePtr> args, uint32_t own = 0) : args_(std::move(args)), own_(own) {
    for (size_t k = 0; k < args_.size(); ++k) state_[args_[k].get()] = kDepends;
  }

  // Classifies everything reachable from `roots` and adds the values they capture.
  void scan(const std::vector<NodePtr>& roots) {
    std::vector<std::pair<LazyNode*, size_t>> stack;
    for (const NodePtr& r : roots) {
      if (state_.count(r.get())) continue;
      stack.push_back({r.get(), 0});
      while (!stack.empty()) {
        auto& [n, next] = stack.back();
        if (!n->buffer && next < n->inputs.size()) {
          LazyNode* in = n->inputs[next++].get();
          if (!state_.count(in)) stack.push_back({in, 0});
          continue;
        }
        state_[n] = classify(*n);
        stack.pop_back();
      }
    }
    auto capture = [&](const NodePtr& x) {
      if (state_[x.get()] != kCaptured || position_.count(x.get())) return;
      position_[x.get()] = int(args_.size() + captures_.size());
      captures_.push_back(x);
    };
    // The captured values are the outside operands of region nodes, and roots that are outside.
    std::vector<LazyNode*> todo;
    for (const NodePtr& r : roots) {
      capture(r);
      todo.push_back(r.get());
    }
    std::unordered_map<const LazyNode*, bool> seen;
    while (!todo.empty()) {
      LazyNode* n = todo.back();
      todo.pop_back();
      if (seen[n] || state_[n] == kCaptured) continue;
      seen[n] = true;
      for (const NodePtr& in : n->inputs) {
        capture(in);
        todo.push_back(in.get());
      }
    }
  }

  const std::vector<NodePtr>& captures() const { return captures_; }

  // The region computing `roots`: inputs 0..n-1 the arguments, then every capture (in every
  // region, so that the control node's operand list serves all of them).
  ir::Graph build(const std::vector<NodePtr>& roots) const {
    ir::Graph g;
    std::unordered_map<const LazyNode*, ir::NodeId> id;
    auto input = [&](const NodePtr& x, int pos) {
      ir::Node n;
      n.op = ir::Op::kInput;
      n.dtype = x->dtype;
      n.shape = x->shape;
      n.ints = {pos};
      id[x.get()] = g.add(std::move(n));
    };
    for (size_t k = 0; k < args_.size(); ++k) input(args_[k], int(k));
    for (size_t k = 0; k < captures_.size(); ++k) input(captures_[k], int(args_.size() + k));
    std::vector<std::pair<const LazyNode*, size_t>> stack;
    for (const NodePtr& r : roots) {
      if (id.count(r.get())) continue;
      stack.push_back({r.get(), 0});
      while (!stack.empty()) {
        auto& [n, next] = stack.back();
        if (next < n->inputs.size()) {
          const LazyNode* in = n->inputs[next++].get();
          if (!id.count(in)) stack.push_back({in, 0});
          continue;
        }
        ir::Node node;
        node.op = n->op;
        node.dtype = n->dtype;
        node.shape = n->shape;
        node.ints = n->ints;
        node.scalar = n->scalar;
        node.regions = n->regions;
        for (const NodePtr& in : n->inputs) node.inputs.push_back(id.at(in.get()));
        id[n] = g.add(std::move(node));
        stack.pop_back();
      }
    }
    for (const NodePtr& r : roots) g.add_output(id.at(r.get()));
    return g;
  }

 private:
  enum State { kDepends, kConstant, kView, kCaptured };

  State classify(const LazyNode& n) const {
    if (n.buffer) return kCaptured;
    bool depends = false, constant = true;
    for (const NodePtr& in : n.inputs) {
      const State s = state_.at(in.get());
      depends = depends || s == kDepends;
      constant = constant && s == kConstant;
    }
    if (depends || (own_ && n.trace == own_)) return kDepends;
    const ir::OpClass c = ir::op_class(n.op);
    // A view of a captured value (a bias broadcast to the rows) read by the region stays in it:
    // the capture is the value itself, not a materialized copy of its view. (Work over views
    // that does not depend on the arguments is still captured, i.e. hoisted out of the loop.)
    if (c == ir::OpClass::kMovement && n.inputs.size() == 1) {
      const State in = state_.at(n.inputs[0].get());
      if (in == kCaptured || in == kView) return kView;
    }
    const bool cheap = (c == ir::OpClass::kSource && n.op != ir::Op::kInput) || ir::is_elementwise(n.op) ||
                       c == ir::OpClass::kMovement;
    return cheap && constant ? kConstant : kCaptured;
  }

  std::vector<NodePtr> args_, captures_;
  uint32_t own_ = 0;
  std::unordered_map<const LazyNode*, State> state_;
  std::unordered_map<const LazyNode*, int> position_;
};

// A bool of one element as the bool[] the IR tests.
Tensor as_flag(const std::string& label, const std::string& what, const Tensor& t) {
  if (!t.defined()) detail::fail(label, absl::StrCat(what, " is an undefined tensor"));
  if (t.dtype() != DType::kBool || t.numel() != 1)
    detail::fail(label, absl::StrCat(what, " must be a bool of one element, it is ", dtype_name(t.dtype()), shape_str(t.shape())));
  return t.shape().empty() ? t : t.reshape({});
}

void check_values(const std::string& label, const std::string& what, const Values& got, const Values& like,
                  const std::string& like_what) {
  if (got.size() != like.size())
    detail::fail(label, absl::StrCat(what, " returns ", got.size(), got.size() == 1 ? " value" : " values", " for ", like.size(),
                                     " ", like_what, like.size() == 1 ? "" : "s"));
  for (size_t k = 0; k < got.size(); ++k) {
    if (!got[k].defined()) detail::fail(label, absl::StrCat(what, " value ", k, " is an undefined tensor"));
    if (got[k].dtype() != like[k].dtype() || got[k].shape() != like[k].shape())
      detail::fail(label, absl::StrCat(what, " value ", k, " is ", dtype_name(got[k].dtype()), shape_str(got[k].shape()), ", its ",
                                       like_what, " is ", dtype_name(like[k].dtype()), shape_str(like[k].shape())));
  }
}

std::vector<NodePtr> nodes_of(const Values& v) {
  std::vector<NodePtr> r;
  for (const Tensor& t : v) r.push_back(detail::node_of(t));
  return r;
}

Values placeholders(const Values& like, runtime::Device* device, std::vector<NodePtr>* nodes) {
  Values r;
  for (const Tensor& t : like) {
    nodes->push_back(placeholder(t, device));
    r.push_back(detail::Access::tensor(nodes->back()));
  }
  return r;
}

// The control node over `operands` (then the captures) and one result node per value.
Values control_node(const std::string& label, ir::Op op, std::vector<int64_t> ints, ir::Regions regions,
                    const std::vector<NodePtr>& operands, const Tracer& tracer, const Values& like,
                    runtime::Device* device) {
  for (const NodePtr& c : tracer.captures())
    if (c->device != device)
      detail::fail(label, absl::StrCat("the functions read a tensor on ", c->device ? c->device->name() : "no device",
                                       ", the loop runs on ", device->name(), "; use .to(device) first"));
  NodePtr node = new_node(op, DType::kBool, {}, device);
  node->ints = std::move(ints);
  node->regions = std::make_shared<const ir::Regions>(std::move(regions));
  for (const NodePtr& o : operands) node->inputs.push_back(o);
  for (const NodePtr& c : tracer.captures()) node->inputs.push_back(c);
  Values out;
  for (size_t k = 0; k < like.size(); ++k) {
    NodePtr r = new_node(ir::Op::kResult, like[k].dtype(), like[k].shape(), device);
    r->ints = {int64_t(k)};
    r->inputs.push_back(node);
    out.push_back(detail::Access::tensor(std::move(r)));
  }
  return out;
}

}  // namespace

Values while_loop(const std::function<Tensor(const Values&)>& cond, const std::function<Values(const Values&)>& body,
                  const Values& init, WhileOptions options, const std::string& name) {
  const std::string label = name.empty() ? "while_loop" : absl::StrCat("while_loop '", name, "'");
  if (init.empty()) detail::fail(label, "needs at least one carried value");
  if (options.max_trips < 0) detail::fail(label, absl::StrCat("max_trips must be >= 0 (0: no limit), got ", options.max_trips));
  runtime::Device* device = detail::common_device(label, init);
  std::vector<NodePtr> args;
  const Values vars = placeholders(init, device, &args);
  const Tensor flag = as_flag(label, "the condition", cond(vars));
  const Values next = body(vars);
  check_values(label, "the body", next, init, "carried value");
  Tracer tracer(args);
  std::vector<NodePtr> roots = nodes_of(next);
  roots.push_back(detail::node_of(flag));
  ir::Regions regions;
  detail::under_realize_lock([&] {
    tracer.scan(roots);
    regions = {tracer.build({detail::node_of(flag)}), tracer.build(nodes_of(next))};
  });
  return control_node(label, ir::Op::kWhile, {int64_t(init.size()), options.max_trips}, std::move(regions), nodes_of(init),
                      tracer, init, device);
}

Values cond(const Tensor& pred, const std::function<Values(const Values&)>& then_fn,
            const std::function<Values(const Values&)>& else_fn, const Values& operands, const std::string& name) {
  const std::string label = name.empty() ? "cond" : absl::StrCat("cond '", name, "'");
  const Tensor p = as_flag(label, "the predicate", pred);
  Values all = operands;
  all.push_back(p);
  runtime::Device* device = detail::common_device(label, all);
  std::vector<NodePtr> args;
  const Values vars = placeholders(operands, device, &args);
  Values a, b;
  uint32_t own = 0;
  {
    BranchTrace trace;
    own = trace.id();
    a = then_fn(vars);
    b = else_fn(vars);
  }
  if (a.empty()) detail::fail(label, "the branches must return at least one value");
  for (size_t k = 0; k < a.size(); ++k)
    if (!a[k].defined()) detail::fail(label, absl::StrCat("the then branch's value ", k, " is an undefined tensor"));
  check_values(label, "the else branch", b, a, "then branch's value");
  Tracer tracer(args, own);
  std::vector<NodePtr> roots = nodes_of(a);
  for (const NodePtr& n : nodes_of(b)) roots.push_back(n);
  ir::Regions regions;
  detail::under_realize_lock([&] {
    tracer.scan(roots);
    regions = {tracer.build(nodes_of(a)), tracer.build(nodes_of(b))};
  });
  std::vector<NodePtr> ops{detail::node_of(p)};
  for (const NodePtr& n : nodes_of(operands)) ops.push_back(n);
  return control_node(label, ir::Op::kIf, {int64_t(a.size())}, std::move(regions), ops, tracer, a, device);
}

}  // namespace kiln

// Recording nodes: every op goes through record(), which checks it with the IR's rules.
#include <limits>

#include "absl/strings/str_cat.h"
#include "frontend/fast_tls.h"
#include "frontend/lazy.h"
#include "frontend/node_pool.h"
#include "ir/graph.h"
#include "runtime/device.h"

namespace kiln::detail {

void fail(const std::string& label, const std::string& message) {
  throw Error(absl::InvalidArgumentError(absl::StrCat(label, ": ", message)));
}

int64_t normalize_axis(const std::string& label, int64_t axis, int64_t rank) {
  int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank)
    fail(label, absl::StrCat("axis ", axis, " out of range for a tensor of rank ", rank));
  return a;
}

LazyNode::~LazyNode() {
  if (inputs.empty()) return;
  // Inputs only this node holds would die inside this destructor, theirs inside theirs, and so
  // on down a chain. Instead they move to a worklist and each is emptied before it dies. A
  // count above one means another holder (or another thread dropping it right now) destroys it.
  absl::InlinedVector<std::shared_ptr<LazyNode>, 8> work;
  for (auto& in : inputs)
    if (in.use_count() == 1) work.push_back(std::move(in));
  inputs.clear();
  while (!work.empty()) {
    std::shared_ptr<LazyNode> n = std::move(work.back());
    work.pop_back();
    if (n.use_count() != 1) continue;
    for (auto& in : n->inputs)
      if (in.use_count() == 1) work.push_back(std::move(in));
    n->inputs.clear();
  }
}

runtime::Device* common_device(const std::string& label, absl::Span<const Tensor> ts) {
  runtime::Device* d = nullptr;
  for (const Tensor& t : ts) {
    if (!t.defined()) fail(label, "undefined tensor");
    runtime::Device* td = detail::node_of(t)->device;
    if (d && td != d)
      fail(label, absl::StrCat("tensors are on different devices (", d->name(), " and ", td->name(),
                               "); use .to(device) first"));
    d = td;
  }
  return d;
}

Tensor record_operands(const std::string& label, ir::Op op, DType dtype, Shape shape,
                       absl::Span<const Tensor* const> inputs, std::vector<int64_t> ints, Scalar scalar,
                       runtime::Device* device) {
  runtime::Device* dev = device;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (!inputs[i]->defined()) fail(label, "undefined tensor");
    runtime::Device* d = detail::node_of(*inputs[i])->device;
    if (i > 0 && d != dev) {
      std::vector<Tensor> all;
      for (const Tensor* t : inputs) all.push_back(*t);
      common_device(label, all);  // throws, naming both devices
    }
    dev = d;
  }
  if (!dev) dev = detail::impl_of(Device());
  // A shape equal to an operand's was checked when that operand was recorded.
  if (inputs.empty() || shape != detail::node_of(*inputs[0])->shape) {
    int64_t numel = shape_numel(shape);
    if (numel < 0 || (numel > 0 && numel > std::numeric_limits<int64_t>::max() / 8))
      fail(label, absl::StrCat("shape ", shape_str(shape), " has too many elements"));
    for (int64_t d : shape)
      if (d < 0) fail(label, absl::StrCat("negative dimension in shape ", shape_str(shape)));
  }
  // Check with the IR's rules, on the operands as they are (no scratch graph). The node and the
  // operand list are this thread's scratch, so a check allocates nothing once they have grown.
  static KILN_FAST_TLS ir::Node n;
  static KILN_FAST_TLS std::vector<ir::OperandInfo> operands;
  n.op = op;
  n.dtype = dtype;
  n.shape = std::move(shape);
  n.ints = std::move(ints);
  n.scalar = scalar;
  n.inputs.clear();
  operands.clear();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const LazyNode& in = *detail::node_of(*inputs[i]);
    operands.push_back(ir::OperandInfo{in.dtype, &in.shape});
    n.inputs.push_back(ir::NodeId(i));
  }
  if (absl::Status s = ir::check_node(n, operands); !s.ok()) {
    n.shape.clear();
    n.ints.clear();
    fail(label, std::string(s.message()));
  }
  auto node = std::allocate_shared<LazyNode>(NodeAllocator<LazyNode>());
  node->op = op;
  node->dtype = dtype;
  node->shape = std::move(n.shape);
  node->ints = std::move(n.ints);
  node->scalar = scalar;
  node->device = dev;
  node->trace = current_trace();
  node->inputs.reserve(inputs.size());
  for (const Tensor* t : inputs) node->inputs.push_back(detail::node_of(*t));
  return Access::tensor(std::move(node));
}

uint32_t& current_trace() {
  static KILN_FAST_TLS uint32_t t = 0;
  return t;
}

Tensor record(const std::string& label, ir::Op op, DType dtype, Shape shape, absl::Span<const Tensor> inputs,
              std::vector<int64_t> ints, Scalar scalar, runtime::Device* device) {
  absl::InlinedVector<const Tensor*, 4> ptrs;
  for (const Tensor& t : inputs) ptrs.push_back(&t);
  return record_operands(label, op, dtype, std::move(shape), ptrs, std::move(ints), scalar, device);
}

Tensor from_buffer(std::shared_ptr<runtime::Buffer> buffer, DType dtype, Shape shape) {
  auto node = std::allocate_shared<LazyNode>(NodeAllocator<LazyNode>());
  node->op = ir::Op::kInput;
  node->dtype = dtype;
  node->shape = std::move(shape);
  node->device = buffer->device();
  node->buffer = std::move(buffer);
  return Access::tensor(std::move(node));
}

}  // namespace kiln::detail

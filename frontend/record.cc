// Recording nodes: every op goes through record(), which checks it with the IR's rules.
#include <limits>

#include "absl/strings/str_cat.h"
#include "frontend/lazy.h"
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

runtime::Device* common_device(const std::string& label, const std::vector<Tensor>& ts) {
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

Tensor record(const std::string& label, ir::Op op, DType dtype, Shape shape, std::vector<Tensor> inputs,
              std::vector<int64_t> ints, Scalar scalar, runtime::Device* device) {
  runtime::Device* dev = inputs.empty() ? device : common_device(label, inputs);
  if (!dev) dev = detail::impl_of(Device());
  int64_t numel = shape_numel(shape);
  if (numel < 0 || (numel > 0 && numel > std::numeric_limits<int64_t>::max() / 8))
    fail(label, absl::StrCat("shape ", shape_str(shape), " has too many elements"));
  for (int64_t d : shape)
    if (d < 0) fail(label, absl::StrCat("negative dimension in shape ", shape_str(shape)));
  // Check with the IR's rules, on the operands as they are (no scratch graph). The node and the
  // operand list are this thread's scratch, so a check allocates nothing once they have grown.
  thread_local ir::Node n;
  thread_local std::vector<ir::OperandInfo> operands;
  n.op = op;
  n.dtype = dtype;
  n.shape = std::move(shape);
  n.ints = std::move(ints);
  n.scalar = scalar;
  n.inputs.clear();
  operands.clear();
  for (size_t i = 0; i < inputs.size(); ++i) {
    const LazyNode& in = *detail::node_of(inputs[i]);
    operands.push_back(ir::OperandInfo{in.dtype, &in.shape});
    n.inputs.push_back(ir::NodeId(i));
  }
  if (absl::Status s = ir::check_node(n, operands); !s.ok()) {
    n.shape.clear();
    n.ints.clear();
    fail(label, std::string(s.message()));
  }
  auto node = std::make_shared<LazyNode>();
  node->op = op;
  node->dtype = dtype;
  node->shape = std::move(n.shape);
  node->ints = std::move(n.ints);
  node->scalar = scalar;
  node->device = dev;
  node->inputs.reserve(inputs.size());
  for (Tensor& t : inputs) node->inputs.push_back(detail::node_of(t));
  return Access::tensor(std::move(node));
}

Tensor from_buffer(std::shared_ptr<runtime::Buffer> buffer, DType dtype, Shape shape) {
  auto node = std::make_shared<LazyNode>();
  node->op = ir::Op::kInput;
  node->dtype = dtype;
  node->shape = std::move(shape);
  node->device = buffer->device();
  node->buffer = std::move(buffer);
  return Access::tensor(std::move(node));
}

}  // namespace kiln::detail

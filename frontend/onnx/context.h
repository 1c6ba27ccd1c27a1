// What an op handler sees while the graph is built: its node's inputs as Values (a device
// tensor, and the value itself when it is known at import), its attributes with ONNX's defaults,
// and the two ways to fail. Every failure names the node (node_label) and is an ImportError the
// builder turns into kiln::Error: Unimplemented for what kiln cannot do yet (an op, an attribute
// value, a dtype, a shape operand computed at run time), InvalidArgument for a malformed model.
#pragma once

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "frontend/onnx/graph.h"
#include "frontend/onnx/host_tensor.h"
#include "kiln/tensor.h"

namespace kiln::onnx {

// A value of the graph while it is built. `host` is set when the value is known at import
// (initializers, constants, shapes and what is folded from them); `tensor` is the device value,
// made from `host` on first use when the value started on the host.
struct Value {
  DType dtype = DType::kFloat32;
  Shape shape;
  Tensor tensor;
  std::shared_ptr<const HostTensor> host;
};

// Thrown by handlers (through NodeContext) with the node already named in the status.
struct ImportError {
  absl::Status status;
};

// Values above this many elements are not folded on the host (they stay device computations).
inline constexpr int64_t kFoldLimit = 1 << 16;

class NodeContext {
 public:
  NodeContext(const Node& node, int64_t opset, Device device, std::vector<Value*> inputs, std::vector<Value>* outputs)
      : node_(node), opset_(opset), device_(std::move(device)), inputs_(std::move(inputs)), outputs_(outputs) {}

  const Node& node() const { return node_; }
  int64_t opset() const { return opset_; }
  const Device& device() const { return device_; }
  std::string label() const { return node_label(node_); }

  // --- inputs ---------------------------------------------------------------------------
  size_t num_inputs() const { return inputs_.size(); }
  bool has_input(size_t i) const { return i < inputs_.size() && inputs_[i] != nullptr; }
  // The value of input i; a missing required input is an InvalidArgument error.
  const Value& value(size_t i) const;
  DType dtype(size_t i) const { return value(i).dtype; }
  const Shape& shape(size_t i) const { return value(i).shape; }
  int64_t rank(size_t i) const { return int64_t(value(i).shape.size()); }
  // The device tensor of input i (made from the host value on first use).
  Tensor in(size_t i);
  // Input i's value at import; Unimplemented naming `what` when it is computed at run time.
  const HostTensor& host(size_t i, const std::string& what) const;
  std::vector<int64_t> host_ints(size_t i, const std::string& what) const { return host(i, what).to_ints(); }
  bool is_host(size_t i) const { return has_input(i) && value(i).host != nullptr; }

  // --- attributes (ONNX's defaults when absent) ------------------------------------------
  bool has_attr(const std::string& name) const { return node_.attributes.count(name) > 0; }
  int64_t attr_int(const std::string& name, int64_t fallback) const;
  double attr_float(const std::string& name, double fallback) const;
  std::string attr_string(const std::string& name, const std::string& fallback) const;
  std::vector<int64_t> attr_ints(const std::string& name, std::vector<int64_t> fallback = {}) const;
  std::vector<double> attr_floats(const std::string& name, std::vector<double> fallback = {}) const;
  const HostTensor& attr_tensor(const std::string& name) const;

  // --- outputs ----------------------------------------------------------------------------
  size_t num_outputs() const { return node_.outputs.size(); }
  bool wants_output(size_t i) const { return i < node_.outputs.size() && !node_.outputs[i].empty(); }
  void set(size_t i, Tensor t);
  void set_host(size_t i, HostTensor h);
  void set_value(size_t i, Value v);

  // --- subgraphs (If, Loop) ------------------------------------------------------------------
  // The subgraph attribute `name` (InvalidArgument when absent).
  const Graph& attr_graph(const std::string& name) const;
  // Builds the subgraph's nodes in this graph's scope, its inputs bound to `inputs`; returns its
  // outputs.
  std::vector<Value> run_subgraph(const Graph& g, const std::vector<Value>& inputs) const;
  using SubgraphRunner = std::function<std::vector<Value>(const Graph&, const std::vector<Value>&)>;
  void set_subgraph_runner(SubgraphRunner f) { runner_ = std::move(f); }

  // --- failing ----------------------------------------------------------------------------
  [[noreturn]] void unsupported(const std::string& message) const;
  [[noreturn]] void invalid(const std::string& message) const;
  // Normalizes an axis attribute or operand against `rank` (InvalidArgument when out of range).
  int64_t axis(int64_t a, int64_t rank, const std::string& what = "axis") const;
  // Fails with Unimplemented unless input i's dtype is one of `allowed`.
  void require_dtype(size_t i, std::initializer_list<DType> allowed) const;
  // An ints operand that moved from attribute `attr` to input i in opset `since` (Squeeze's and
  // Unsqueeze's axes, ReduceSum's axes, Split's split: 13): nullopt when absent.
  std::optional<std::vector<int64_t>> moved_operand(size_t i, const std::string& attr, int64_t since = 13) const;

 private:
  const Attribute* find(const std::string& name, Attribute::Kind kind) const;
  const Node& node_;
  int64_t opset_;
  Device device_;
  std::vector<Value*> inputs_;
  std::vector<Value>* outputs_;
  SubgraphRunner runner_;
};

// The device tensor of a host value.
Tensor to_tensor(const HostTensor& h, const Device& device);

}  // namespace kiln::onnx

// The recorded (lazy) graph behind kiln::Tensor.
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/types/span.h"
#include "ir/graph.h"
#include "ir/op.h"
#include "kiln/model.h"
#include "kiln/tensor.h"

namespace kiln::runtime {
class Buffer;
class Device;
}  // namespace kiln::runtime

namespace kiln::detail {

// One recorded op. When `buffer` is set the node is realized: its value lives in device memory,
// and its inputs have been dropped so that the history it came from can be freed.
struct LazyNode {
  LazyNode() {}  // user-provided: allocate_shared then skips zero-filling the node first
  // Releases the inputs without recursing once per node: dropping a long unrealized chain
  // (a loop of a million recorded ops) must not overflow the stack (record.cc).
  ~LazyNode();
  LazyNode(const LazyNode&) = delete;
  LazyNode& operator=(const LazyNode&) = delete;
  ir::Op op = ir::Op::kConst;
  DType dtype = DType::kFloat32;
  Shape shape;
  absl::InlinedVector<std::shared_ptr<LazyNode>, 2> inputs;  // most ops have one or two
  std::vector<int64_t> ints;
  Scalar scalar;
  std::shared_ptr<const ir::Regions> regions;  // while, if (frontend/control.cc)
  runtime::Device* device = nullptr;
  std::shared_ptr<runtime::Buffer> buffer;  // guarded by realize_mutex()
  // Collecting a graph (realize.cc, under realize_mutex()): the node's id in the graph being
  // built, valid when `collected` equals that collection's number.
  uint64_t collected = 0;
  int32_t collected_id = -1;
  // The cond branch being traced when the node was recorded (0: none); see current_trace().
  uint32_t trace = 0;
};

using NodePtr = std::shared_ptr<LazyNode>;

// What the public classes keep private (their node and device), for the frontend and tests.
struct Access {
  static Tensor tensor(NodePtr node) { return Tensor(std::move(node)); }
  static const NodePtr& node(const Tensor& t) { return t.node_; }
  static kiln::Device device(runtime::Device* d) { return kiln::Device(d); }
  static runtime::Device* impl(const kiln::Device& d) { return d.impl_; }
  static Model model(std::shared_ptr<const Model::Impl> impl) { return Model(std::move(impl)); }
};
inline const NodePtr& node_of(const Tensor& t) { return Access::node(t); }
inline runtime::Device* impl_of(const kiln::Device& d) { return Access::impl(d); }

// Records a node after checking it with the IR's rules; throws kiln::Error naming `label`
// (the user-facing op name) on a shape or dtype error.
Tensor record(const std::string& label, ir::Op op, DType dtype, Shape shape, absl::Span<const Tensor> inputs,
              std::vector<int64_t> ints = {}, Scalar scalar = {}, runtime::Device* device = nullptr);
// The same with the operands by address: the hot elementwise path records without touching
// the operands' reference counts more than the new node's inputs need.
Tensor record_operands(const std::string& label, ir::Op op, DType dtype, Shape shape,
                       absl::Span<const Tensor* const> inputs, std::vector<int64_t> ints = {},
                       Scalar scalar = {}, runtime::Device* device = nullptr);

// The cond branch this thread is tracing (0: none): nodes recorded meanwhile carry it, so the
// branch runs only what it recorded (frontend/control.cc).
uint32_t& current_trace();

// Runs `f` holding the lock realizes take while they walk lazy nodes and replace a realized
// node's inputs by its buffer: code that walks a history another thread may be realizing (the
// tracer of while_loop / cond) walks it inside. `f` must not realize anything.
void under_realize_lock(const std::function<void()>& f);

// A realized node holding `buffer`.
Tensor from_buffer(std::shared_ptr<runtime::Buffer> buffer, DType dtype, Shape shape);

// Throws kiln::Error(InvalidArgument) with "label: message".
[[noreturn]] void fail(const std::string& label, const std::string& message);

// Normalizes an axis against `rank` (negative counts from the end); throws when out of range.
int64_t normalize_axis(const std::string& label, int64_t axis, int64_t rank);

// Common device of `ts`; throws when they differ.
runtime::Device* common_device(const std::string& label, absl::Span<const Tensor> ts);

// Starts the whole-run profile KILN_PROFILE names, once (frontend/profile.cc).
void start_env_profile();

// Elementwise helpers used across the op files.
Tensor cast_to(const Tensor& t, DType dtype);
Tensor broadcast_to_shape(const std::string& label, const Tensor& t, const Shape& shape);
Tensor constant(double value, DType dtype, const Shape& shape, runtime::Device* device);

}  // namespace kiln::detail

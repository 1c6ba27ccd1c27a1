// Realization: turn the lazy nodes behind some tensors into one ir::Graph and run it.
#include <mutex>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "frontend/capture.h"
#include "frontend/lazy.h"
#include "ir/graph.h"
#include "replay/compile_or_replay.h"
#include "support/trace.h"

namespace kiln::detail {
namespace {

std::mutex& realize_mutex() {
  static std::mutex m;
  return m;
}

struct Collected {
  ir::Graph graph;
  std::vector<std::shared_ptr<runtime::Buffer>> inputs;
  std::vector<NodePtr> outputs;  // lazy node of each graph output
  runtime::Device* device = nullptr;
};

// Builds the graph of the unrealized history of `roots` (caller holds realize_mutex()).
Collected collect(const std::vector<NodePtr>& roots) {
  Collected c;
  // Each collection marks the nodes it has added with its own number (no map from node to id).
  static uint64_t collection = 0;
  const uint64_t mark = ++collection;
  auto seen = [&](const LazyNode* n) { return n->collected == mark; };
  std::unordered_map<const runtime::Buffer*, int64_t> input_pos;
  // Iterative post-order DFS (graphs can be long chains).
  std::vector<std::pair<LazyNode*, size_t>> stack;
  auto visit = [&](LazyNode* root) {
    if (seen(root)) return;
    stack.push_back({root, 0});
    while (!stack.empty()) {
      auto& [n, next] = stack.back();
      if (!n->buffer && next < n->inputs.size()) {
        LazyNode* in = n->inputs[next++].get();
        if (!seen(in)) stack.push_back({in, 0});
        continue;
      }
      ir::Node node;
      node.dtype = n->dtype;
      node.shape = n->shape;
      if (n->buffer) {
        auto it = input_pos.find(n->buffer.get());
        int64_t pos;
        if (it == input_pos.end()) {
          pos = int64_t(c.inputs.size());
          input_pos[n->buffer.get()] = pos;
          c.inputs.push_back(n->buffer);
        } else {
          pos = it->second;
        }
        node.op = ir::Op::kInput;
        node.ints = {pos};
      } else {
        node.op = n->op;
        node.ints = n->ints;
        node.scalar = n->scalar;
        node.inputs.reserve(n->inputs.size());
        for (auto& in : n->inputs) node.inputs.push_back(in->collected_id);
      }
      n->collected_id = c.graph.add(std::move(node));
      n->collected = mark;
      stack.pop_back();
    }
  };
  for (const NodePtr& r : roots) {
    visit(r.get());
    c.graph.add_output(r->collected_id);
    c.outputs.push_back(r);
  }
  return c;
}

}  // namespace

void realize_nodes(const std::vector<NodePtr>& nodes) {
  start_env_profile();
  support::TraceSpan span("realize");
  Collected c;
  {
    support::TraceSpan capture("record: collect the graph");
    std::lock_guard<std::mutex> lock(realize_mutex());
    std::vector<NodePtr> todo;
    for (const NodePtr& n : nodes) {
      if (n->buffer) continue;
      bool dup = false;
      for (const NodePtr& t : todo) dup = dup || t == n;
      if (!dup) todo.push_back(n);
    }
    if (todo.empty()) return;
    c = collect(todo);
    c.device = todo[0]->device;
  }
  auto outs = replay::run_graph(c.device, c.graph, c.inputs);
  if (!outs.ok()) throw Error(outs.status());
  std::lock_guard<std::mutex> lock(realize_mutex());
  for (size_t i = 0; i < c.outputs.size(); ++i) {
    LazyNode* n = c.outputs[i].get();
    if (n->buffer) continue;  // another thread realized it meanwhile; keep one value
    n->buffer = (*outs)[i];
    n->op = ir::Op::kInput;
    n->inputs.clear();
    n->ints.clear();
  }
}

ir::Graph capture(const std::vector<Tensor>& tensors, std::vector<std::shared_ptr<runtime::Buffer>>* inputs) {
  std::vector<NodePtr> nodes;
  for (const Tensor& t : tensors) nodes.push_back(detail::node_of(t));
  std::lock_guard<std::mutex> lock(realize_mutex());
  Collected c = collect(nodes);
  if (inputs) *inputs = c.inputs;
  return c.graph;
}

// Another thread may be realizing the node right now: its buffer is written under the lock.
bool node_is_realized(const NodePtr& node) {
  std::lock_guard<std::mutex> lock(realize_mutex());
  return node->buffer != nullptr;
}

std::string graph_text_of(const std::vector<NodePtr>& nodes) {
  std::lock_guard<std::mutex> lock(realize_mutex());
  return ir::print(collect(nodes).graph);
}

}  // namespace kiln::detail

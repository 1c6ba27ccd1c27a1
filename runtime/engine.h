// Compile-or-replay: how the frontend runs graphs on a device.
#pragma once

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "runtime/device.h"

namespace kiln::runtime {

// A compiled graph: the cached executable and what its outputs look like.
struct CompiledGraph {
  Device* device = nullptr;
  ir::Graph graph;  // compared in full on lookup: a hash collision never runs the wrong code
  std::shared_ptr<Executable> exe;
  std::vector<ir::BufferDesc> buffers;
  std::vector<int> outputs;  // buffer of each graph output
};

// The executable for `graph` on `device`: from the in-memory cache when a structurally equal
// graph was compiled before (counted as a cache hit), else compiled now.
absl::StatusOr<std::shared_ptr<const CompiledGraph>> compile_graph(Device* device, const ir::Graph& graph);

// Runs a compiled graph with `inputs` bound to its input positions, returning one freshly
// allocated buffer per graph output (never storage a caller already holds; an output that is
// an input unchanged is that input's buffer).
absl::StatusOr<std::vector<std::shared_ptr<Buffer>>> run_compiled(const CompiledGraph& g,
                                                                  const std::vector<std::shared_ptr<Buffer>>& inputs);

// compile_graph + run_compiled.
absl::StatusOr<std::vector<std::shared_ptr<Buffer>>> run_graph(
    Device* device, const ir::Graph& graph, const std::vector<std::shared_ptr<Buffer>>& inputs);

// Drops every cached executable (tests use it to force recompiles).
void clear_executable_cache();

}  // namespace kiln::runtime

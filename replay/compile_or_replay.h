// Compile or replay: how the frontend runs a graph on a device. A graph seen before (same
// structure, device and pass options) replays its cached executable; a new one goes through
// the passes (passes/pipeline.h), the device's Compiler and the device's load
// (runtime/device.h), and is cached (replay/executable_cache.h).
#pragma once

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "replay/executable_cache.h"
#include "runtime/device.h"

namespace kiln::replay {

// The executable for `graph` on `device`: from the cache (counted as a cache hit) or compiled
// and loaded now (executables_built).
absl::StatusOr<std::shared_ptr<const CompiledGraph>> compile_graph(runtime::Device* device, const ir::Graph& graph);

// Runs a compiled graph with `inputs` bound to its input positions and `params` as the values of
// its param slots (ir/params.h; the graph the caller recorded holds them: ir::param_values),
// returning one freshly allocated buffer per graph output (never storage a caller already holds;
// an output that is an input unchanged is that input's buffer).
absl::StatusOr<std::vector<std::shared_ptr<runtime::Buffer>>> run_compiled(
    const CompiledGraph& g, const std::vector<std::shared_ptr<runtime::Buffer>>& inputs,
    const std::vector<Scalar>& params = {});

// compile_graph + run_compiled with the graph's own param values.
absl::StatusOr<std::vector<std::shared_ptr<runtime::Buffer>>> run_graph(
    runtime::Device* device, const ir::Graph& graph, const std::vector<std::shared_ptr<runtime::Buffer>>& inputs);

// Drops every cached executable (tests use it to force recompiles).
inline void clear_executable_cache() { cache_clear(); }

}  // namespace kiln::replay

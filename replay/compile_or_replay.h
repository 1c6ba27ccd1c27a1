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

// Symbolic dimensions (passes/symbolic.h). The code of a graph family: how its kernels scale
// with its symbols, derived from the graph planned at probe sizes: `base` with symbol s at
// base_values[s], probes[s] with symbol s at probe_values[s] and the others as in base.
// FailedPrecondition (saying why) when no code can be shared.
struct SymbolicCode;
absl::StatusOr<std::shared_ptr<const SymbolicCode>> derive_symbolic(runtime::Device* device, const ir::Graph& base,
                                                                    const std::vector<int64_t>& base_values,
                                                                    const std::vector<ir::Graph>& probes,
                                                                    const std::vector<int64_t>& probe_values);
// `graph`, a member of the family planned with its symbols at `values`, compiled with its
// kernels marked: its executable takes one param per symbol after the graph's own (the symbol's
// size), and is cached apart from the same graph compiled without marks.
absl::StatusOr<std::shared_ptr<const CompiledGraph>> compile_graph(runtime::Device* device, const ir::Graph& graph,
                                                                   const SymbolicCode& code, const std::vector<int64_t>& values);
// The same compiled but not loaded: makes a size's code ready (in memory) for the sizes that will
// share it (the base probe size's, while the first call's own size compiles beside it).
absl::Status precompile(runtime::Device* device, const ir::Graph& graph, const SymbolicCode& code,
                        const std::vector<int64_t>& values);

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

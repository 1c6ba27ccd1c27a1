// Compile-or-replay: the one entry point the frontend uses to run a graph on a device.
#pragma once

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "runtime/device.h"

namespace kiln::runtime {

// Runs `graph` on `device` with `inputs` bound to the graph's input positions, returning one
// freshly allocated buffer per graph output (never storage a caller already holds). The
// executable comes from the in-memory cache when a structurally equal graph ran before.
absl::StatusOr<std::vector<std::shared_ptr<Buffer>>> run_graph(
    Device* device, const ir::Graph& graph, const std::vector<std::shared_ptr<Buffer>>& inputs);

// Drops every cached executable (tests use it to force recompiles).
void clear_executable_cache();

}  // namespace kiln::runtime

// Ahead-of-time compilation: an exported graph -> an Artifact with one section per target. The
// same passes as the JIT (passes::compile_graph) plan the graph for each target's TargetInfo,
// then that backend's device-free Compiler (runtime::make_compiler) makes the binaries, so a
// section is exactly what the JIT would have built for that target.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "artifact/artifact.h"
#include "artifact/targets.h"

namespace kiln::artifact {

struct CompileOptions {
  bool fusion = true;  // KILN_FUSION's meaning
};

absl::StatusOr<Artifact> compile(const ir::ExportedGraph& graph, const std::vector<TargetSpec>& targets,
                                 const CompileOptions& options = {});

}  // namespace kiln::artifact

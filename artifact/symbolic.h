// Symbolic dimensions in artifacts: a graph with symbols (ir/symbolic_graph.h) is compiled once
// for every size. kilnc plans the graph at two probe sizes per symbol, learns how each kernel
// axis scales (passes::derive_template, as kiln::Jit does) and compiles the marked code, whose
// binaries go into the section by their source (runtime::PortableBinaries), with those of size 1
// (which plans other code: its dims vanish from the views). Loading a size other
// than the base writes the graph at that size, plans it with the section's target and compiles it
// through those binaries: every kernel whose text is the template's or size 1's (all of them,
// unless the size plans other kernels or a kernel reduces over a symbolic dim) is found, not
// compiled.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/signature.h"
#include "runtime/compiled_program.h"
#include "runtime/device.h"

namespace kiln::artifact {

// The sizes kilnc plans the template at: each symbol's base size times the smallest factor that
// reaches 256 (the kernels large sizes plan), and one more base size for each symbol's probe.
std::vector<int64_t> probe_base(const std::vector<int64_t>& base);

// How the kernels of `g` scale, planned with `c`'s target. A graph whose kernels do not scale
// (no axis follows a symbol) gets an empty template: every size then compiles its own code.
absl::StatusOr<ir::SymbolicTemplate> derive_code(const ir::ExportedGraph& g, const runtime::Compiler& c, bool fusion);

// `graph`, a graph written at `values` (ir::instantiate), planned (no splits: the sizes share their
// plans) and marked by `code`, compiled by `c` (through the kernel cache and any
// runtime::ProvideBinaries scope).
absl::StatusOr<runtime::CompiledProgram> compile_at(const ir::Graph& graph, const std::vector<int64_t>& values,
                                                    const runtime::Compiler& c, const ir::SymbolicTemplate& code, bool fusion);
// The same for `g` written at `values` first.
absl::StatusOr<runtime::CompiledProgram> compile_at(const ir::ExportedGraph& g, const std::vector<int64_t>& values,
                                                    const runtime::Compiler& c, const ir::SymbolicTemplate& code, bool fusion);

}  // namespace kiln::artifact

// compile.h: passes -> Compiler per target.
#include "artifact/compile.h"

#include "absl/strings/str_cat.h"
#include "passes/pipeline.h"
#include "runtime/registry.h"

namespace kiln::artifact {

absl::StatusOr<Artifact> compile(const ir::ExportedGraph& graph, const std::vector<TargetSpec>& targets,
                                 const CompileOptions& options) {
  if (absl::Status s = ir::check(graph); !s.ok()) return s;
  if (targets.empty()) return absl::InvalidArgumentError("no targets to compile for");
  Artifact a;
  a.kiln_version = kiln_version();
  a.graph = graph;
  passes::Options popts;
  popts.fusion = options.fusion;
  for (const TargetSpec& t : targets) {
    auto fail = [&](const absl::Status& s) { return absl::Status(s.code(), absl::StrCat(t.label(), ": ", s.message())); };
    auto info = resolve(t);
    if (!info.ok()) return fail(info.status());
    auto compiler = runtime::make_compiler(t.backend, *info);
    if (!compiler.ok()) return fail(compiler.status());
    auto planned = passes::compile_graph(graph.graph, (*compiler)->target(), popts);
    if (!planned.ok()) return fail(planned.status());
    auto compiled = (*compiler)->compile(planned->program);
    if (!compiled.ok()) return fail(compiled.status());
    TargetSection s;
    s.backend = t.backend;
    s.profile = t.profile;
    s.target_key = compiled->target_key;  // the program's own (cuda: sm_90a where it uses wgmma)
    s.program = *std::move(compiled);
    a.targets.push_back(std::move(s));
  }
  return a;
}

}  // namespace kiln::artifact

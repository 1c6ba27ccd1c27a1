// compile.h: passes -> Compiler per target.
#include "artifact/compile.h"

#include "absl/strings/str_cat.h"
#include "artifact/symbolic.h"
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
    TargetSection s;
    absl::StatusOr<runtime::CompiledProgram> compiled;
    if (graph.symbols.empty()) {
      auto planned = passes::compile_graph(graph.graph, (*compiler)->target(), popts);
      if (!planned.ok()) return fail(planned.status());
      compiled = (*compiler)->compile(planned->program);
    } else {
      // The template's code (planned at the probe sizes) and the base sizes' program; the binaries
      // of both go into the section by their source.
      auto code = derive_code(graph, **compiler, options.fusion);
      if (!code.ok()) return fail(code.status());
      runtime::RememberBinaries remember;
      runtime::RecordBinaries record(&s.binaries);
      const std::vector<int64_t> probe = probe_base(graph.symbols.base);
      if (auto p = compile_at(graph, probe, **compiler, *code, options.fusion); !p.ok()) return fail(p.status());
      // Size 1 plans other code (its dims vanish from the views): its binaries go in too, for each
      // set of symbols at 1. A graph that does not hold at such sizes is refused there at run time.
      for (size_t ones = 1; ones < (size_t(1) << probe.size()); ++ones) {
        std::vector<int64_t> v = probe;
        for (size_t s = 0; s < v.size(); ++s)
          if (ones >> s & 1) v[s] = 1;
        auto p = compile_at(graph, v, **compiler, *code, options.fusion);
        if (!p.ok() && !absl::IsInvalidArgument(p.status())) return fail(p.status());
      }
      compiled = compile_at(graph, graph.symbols.base, **compiler, *code, options.fusion);
      s.code = *std::move(code);
      s.fusion = options.fusion;
    }
    if (!compiled.ok()) return fail(compiled.status());
    s.backend = t.backend;
    s.profile = t.profile;
    s.target_key = compiled->target_key;  // the program's own (cuda: sm_90a where it uses wgmma)
    s.program = *std::move(compiled);
    a.targets.push_back(std::move(s));
  }
  return a;
}

}  // namespace kiln::artifact

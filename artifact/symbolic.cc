// symbolic.h: planning and compiling an exported graph's sizes.
#include "artifact/symbolic.h"

#include "absl/strings/str_cat.h"
#include "passes/pipeline.h"
#include "passes/symbolic.h"

namespace kiln::artifact {
namespace {

passes::Options plan_options(bool fusion) {
  passes::Options o;
  o.fusion = fusion;
  o.split = false;  // a split is chosen by size: a small size would plan other kernels
  return o;
}

absl::StatusOr<ir::Program> plan(const ir::Graph& graph, const runtime::Compiler& c, bool fusion) {
  auto planned = passes::compile_graph(graph, c.target(), plan_options(fusion));
  if (!planned.ok()) return planned.status();
  return std::move(planned->program);
}

absl::StatusOr<ir::Program> plan_at(const ir::ExportedGraph& g, const std::vector<int64_t>& values, const runtime::Compiler& c,
                                    bool fusion) {
  auto at = ir::instantiate(g, values);
  if (!at.ok()) return at.status();
  return plan(at->graph, c, fusion);
}

}  // namespace

std::vector<int64_t> probe_base(const std::vector<int64_t>& base) {
  std::vector<int64_t> p;
  for (int64_t v : base) p.push_back(v <= 0 ? 256 : v * ((256 + v - 1) / v));
  return p;
}

absl::StatusOr<ir::SymbolicTemplate> derive_code(const ir::ExportedGraph& g, const runtime::Compiler& c, bool fusion) {
  const std::vector<int64_t> base = probe_base(g.symbols.base);
  auto p0 = plan_at(g, base, c, fusion);
  if (!p0.ok()) return p0.status();
  std::vector<ir::Program> probes;
  std::vector<int64_t> probe_values;
  for (size_t s = 0; s < base.size(); ++s) {
    std::vector<int64_t> v = base;
    v[s] += g.symbols.base[s] > 0 ? g.symbols.base[s] : 256;
    auto p = plan_at(g, v, c, fusion);
    if (!p.ok()) return p.status();
    probes.push_back(*std::move(p));
    probe_values.push_back(v[s]);
  }
  auto t = passes::derive_template(*p0, base, probes, probe_values);
  if (t.ok() || !absl::IsFailedPrecondition(t.status())) return t;
  ir::SymbolicTemplate none;  // no shared code: each size compiles its own
  none.symbols = int(base.size());
  return none;
}

absl::StatusOr<runtime::CompiledProgram> compile_at(const ir::Graph& graph, const std::vector<int64_t>& values,
                                                    const runtime::Compiler& c, const ir::SymbolicTemplate& code, bool fusion) {
  auto p = plan(graph, c, fusion);
  if (!p.ok()) return p.status();
  passes::apply_template(code, values, &*p);
  return c.compile(*p);
}

absl::StatusOr<runtime::CompiledProgram> compile_at(const ir::ExportedGraph& g, const std::vector<int64_t>& values,
                                                    const runtime::Compiler& c, const ir::SymbolicTemplate& code, bool fusion) {
  auto at = ir::instantiate(g, values);
  if (!at.ok()) return at.status();
  return compile_at(at->graph, values, c, code, fusion);
}

}  // namespace kiln::artifact

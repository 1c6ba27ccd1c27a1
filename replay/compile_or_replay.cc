#include "replay/compile_or_replay.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "ir/params.h"
#include "passes/pipeline.h"
#include "passes/symbolic.h"
#include "replay/autotune.h"
#include "replay/shared_sizes.h"
#include "runtime/compile_cache.h"
#include "runtime/registry.h"
#include "runtime/stats.h"
#include "support/dump.h"
#include "support/options.h"
#include "support/trace.h"

namespace kiln::replay {
namespace {

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

void dump_sources(const runtime::CompiledProgram& c, const std::string& prefix, int debug, const std::string& device) {
  std::vector<std::string> listings = c.listings();
  if (!prefix.empty())
    for (size_t i = 0; i < listings.size(); ++i)
      support::write_dump(absl::StrCat(prefix, "kernel", i, ".", device, ".txt"), listings[i]);
  if (debug >= 4)
    for (const std::string& s : listings) std::fprintf(stderr, "kiln: --- source ---\n%s\n", s.c_str());
}

// Registers a freshly compiled executable with the profile: its kernels, and a picture
// of its graph with each kernel coloured by its share of the device time.
void trace_compiled(const CompiledGraph& e, passes::Compiled planned, double compile_us) {
  std::vector<std::string> names;
  for (const ir::Kernel& k : planned.program.kernels) names.push_back(k.name);
  const size_t nodes = planned.graph.size();
  auto shared = std::make_shared<const passes::Compiled>(std::move(planned));
  support::trace_executable(e.id, names, compile_us, nodes, [shared](const std::vector<double>& us) {
    double total = 0;
    for (double u : us) total += u;
    std::vector<passes::KernelStyle> styles(shared->program.kernels.size());
    for (size_t k = 0; k < styles.size() && k < us.size(); ++k) {
      const double share = total > 0 ? us[k] / total : 0;
      // White (no time) to red (all of it).
      const int gb = int(255 - 200 * share);
      styles[k].fill = absl::StrFormat("#ff%02x%02x", gb, gb);
      styles[k].note = absl::StrFormat("%.0f%% of device time, %.1f us", 100 * share, us[k]);
    }
    return passes::to_dot(shared->graph, shared->program, styles);
  });
}

}  // namespace

struct SymbolicCode {
  passes::SymbolicTemplate tmpl;
  std::string variant;  // names the template in the executable cache's key
  mutable SharedSizes sizes;  // the sizes' executables: one, resized per size, where the backend can
};

namespace {

// `sym` (with the symbols' `values`) marks the Program for symbolic dimensions; without `load`
// the code is compiled (into the compile caches) and nothing is loaded.
absl::StatusOr<std::shared_ptr<const CompiledGraph>> compile_graph_as(runtime::Device* device, const ir::Graph& graph,
                                                                      const SymbolicCode* sym,
                                                                      const std::vector<int64_t>& values, bool load) {
  if (!device) return absl::FailedPreconditionError("no device");
  auto t0 = std::chrono::steady_clock::now();
  const std::string variant = sym ? sym->variant : "";
  // A hit reads only KILN_FUSION (the one option in the cache key): a replay stays cheap.
  if (load) {
    support::TraceSpan span("hash + executable cache lookup");
    if (auto e = cache_lookup(device, graph, support::fusion_enabled(), variant)) {
      runtime::counters().executable_cache_hits++;
      return e;
    }
  }
  // The sizes of a symbolic dimension share their binaries in memory (runtime/compile_cache.h).
  std::optional<runtime::RememberBinaries> remember;
  if (sym) remember.emplace();
  const support::Options env = support::options();
  passes::Options opts = passes::Options::from(env);
  opts.split = sym == nullptr;
  auto compiler = runtime::compiler_for(device);
  if (!compiler.ok()) return compiler.status();
  absl::StatusOr<passes::Compiled> planned;
  {
    support::TraceSpan span("passes", "compile");
    planned = passes::compile_graph(graph, (*compiler)->target(), opts);
  }
  if (!planned.ok()) return planned.status();
  if (sym) passes::apply_template(sym->tmpl, values, &planned->program);
  if (env.autotune) {
    support::TraceSpan span("autotune", "compile");
    autotune(&planned->program, **compiler, device);
  }
  absl::StatusOr<runtime::CompiledProgram> compiled;
  {
    support::TraceSpan span("codegen + compiler", "compile");
    compiled = (*compiler)->compile(planned->program);
  }
  if (!compiled.ok()) return compiled.status();
  dump_sources(*compiled, planned->dump_prefix, opts.debug, device->name());
  if (!load) return std::shared_ptr<const CompiledGraph>();
  absl::StatusOr<std::unique_ptr<runtime::Executable>> exe;
  {
    support::TraceSpan span("load", "compile");
    exe = sym ? sym->sizes.load(device, *compiled) : device->load(*compiled);
  }
  if (!exe.ok()) return exe.status();
  auto e = std::make_shared<CompiledGraph>();
  e->device = device;
  e->graph = graph;
  e->fusion = opts.fusion;
  e->variant = variant;
  e->exe = std::move(*exe);
  e->buffers = compiled->buffers;
  e->outputs = compiled->outputs;
  e->params = compiled->params;
  e->bytes = std::max<int64_t>(compiled->arena_bytes, kMinEntryBytes);
  runtime::counters().executables_built++;
  if (support::tracing()) trace_compiled(*e, *std::move(planned), ms_since(t0) * 1000);
  if (opts.debug >= 1)
    std::fprintf(stderr, "kiln: compiled %d kernel(s) for %s in %.3f ms\n", e->exe->kernels_per_run(),
                 device->name().c_str(), ms_since(t0));
  return cache_insert(std::move(e));
}

}  // namespace

absl::StatusOr<std::shared_ptr<const CompiledGraph>> compile_graph(runtime::Device* device, const ir::Graph& graph) {
  return compile_graph_as(device, graph, nullptr, {}, true);
}

absl::StatusOr<std::shared_ptr<const CompiledGraph>> compile_graph(runtime::Device* device, const ir::Graph& graph,
                                                                   const SymbolicCode& code, const std::vector<int64_t>& values) {
  return compile_graph_as(device, graph, &code, values, true);
}

namespace {

// The passes alone (no code): a probe's Program.
absl::StatusOr<ir::Program> plan_graph(runtime::Device* device, const ir::Graph& graph) {
  auto compiler = runtime::compiler_for(device);
  if (!compiler.ok()) return compiler.status();
  passes::Options opts = passes::Options::from(support::options());
  opts.dump_dir.clear();  // probes are not the user's graphs
  opts.split = false;     // as the marked sizes are planned
  auto planned = passes::compile_graph(graph, (*compiler)->target(), opts);
  if (!planned.ok()) return planned.status();
  return std::move(planned->program);
}

}  // namespace

absl::StatusOr<std::shared_ptr<const SymbolicCode>> derive_symbolic(runtime::Device* device, const ir::Graph& base,
                                                                    const std::vector<int64_t>& base_values,
                                                                    const std::vector<ir::Graph>& probes,
                                                                    const std::vector<int64_t>& probe_values) {
  if (!device) return absl::FailedPreconditionError("no device");
  auto p0 = plan_graph(device, base);
  if (!p0.ok()) return p0.status();
  std::vector<ir::Program> planned;
  for (const ir::Graph& g : probes) {
    auto p = plan_graph(device, g);
    if (!p.ok()) return p.status();
    planned.push_back(*std::move(p));
  }
  auto t = passes::derive_template(*p0, base_values, planned, probe_values);
  if (!t.ok()) return t.status();
  auto code = std::make_shared<SymbolicCode>();
  code->tmpl = *std::move(t);
  code->variant = "sym";
  for (size_t k = 0; k < code->tmpl.axes.size(); ++k)
    for (size_t a = 0; a < code->tmpl.axes[k].size(); ++a)
      if (code->tmpl.axes[k][a].first >= 0)
        absl::StrAppend(&code->variant, " ", k, ".", a, "=", code->tmpl.axes[k][a].second, "*s", code->tmpl.axes[k][a].first);
  return std::shared_ptr<const SymbolicCode>(std::move(code));
}

absl::Status precompile(runtime::Device* device, const ir::Graph& graph, const SymbolicCode& code,
                        const std::vector<int64_t>& values) {
  return compile_graph_as(device, graph, &code, values, false).status();
}

absl::StatusOr<std::vector<std::shared_ptr<runtime::Buffer>>> run_compiled(
    const CompiledGraph& g, const std::vector<std::shared_ptr<runtime::Buffer>>& inputs, const std::vector<Scalar>& params) {
  auto t1 = std::chrono::steady_clock::now();
  if (params.size() != g.params.size())
    return absl::InvalidArgumentError(
        absl::StrCat("the executable takes ", g.params.size(), " param values; the run passes ", params.size()));
  runtime::ParamValues values(params.size());
  for (size_t i = 0; i < params.size(); ++i) values[i] = ir::encode_param(g.params[i], params[i]);
  // Fresh output storage on every run: results a caller holds are never overwritten.
  std::vector<std::shared_ptr<runtime::Buffer>> out_bufs;
  std::vector<runtime::Buffer*> out_raw, in_raw;
  {
    support::TraceSpan span("allocate outputs");
    for (const ir::BufferDesc& b : g.buffers) {
      if (b.kind != ir::BufferKind::kOutput) continue;
      auto buf = g.device->alloc(b.bytes());
      if (!buf.ok()) return buf.status();
      out_raw.push_back(buf->get());
      out_bufs.push_back(*std::move(buf));
    }
  }
  in_raw.reserve(inputs.size());
  for (const auto& b : inputs) in_raw.push_back(b.get());
  {
    support::TraceSpan span("run (bind + launch)");
    support::TraceRun run(g.id, g.device->name(), g.exe->kernels_per_run());
    if (absl::Status s = g.exe->run(in_raw, out_raw, values); !s.ok()) return s;
  }
  runtime::counters().graphs_realized++;
  runtime::counters().kernels_launched += g.exe->kernels_per_run();
  if (support::debug_level() >= 1)
    std::fprintf(stderr, "kiln: realize on %s: %d kernel(s), run %.3f ms\n", g.device->name().c_str(),
                 g.exe->kernels_per_run(), ms_since(t1));
  std::vector<std::shared_ptr<runtime::Buffer>> result;
  result.reserve(g.outputs.size());
  for (int b : g.outputs) {
    const ir::BufferDesc& d = g.buffers[b];
    result.push_back(d.kind == ir::BufferKind::kInput ? inputs[d.index] : out_bufs[d.index]);
  }
  return result;
}

absl::StatusOr<std::vector<std::shared_ptr<runtime::Buffer>>> run_graph(
    runtime::Device* device, const ir::Graph& graph, const std::vector<std::shared_ptr<runtime::Buffer>>& inputs) {
  auto g = compile_graph(device, graph);
  if (!g.ok()) return g.status();
  return run_compiled(**g, inputs, ir::param_values(graph));
}

}  // namespace kiln::replay

#include "passes/pipeline.h"

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "ir/params.h"
#include "ir/verify_program.h"
#include "passes/attention.h"
#include "support/options.h"
#include "passes/control.h"
#include "passes/fuse.h"
#include "passes/insert_barriers.h"
#include "passes/plan_memory.h"
#include "passes/schedule.h"
#include "passes/simplify.h"
#include "passes/chain_reduce.h"
#include "passes/split_reduce.h"
#include "support/dump.h"
#include "support/trace.h"

namespace kiln::passes {

std::string to_dot(const ir::Graph& g, const ir::Program& p, const std::vector<KernelStyle>& styles) {
  std::string r = "digraph kiln {\n  rankdir=TB;\n  node [shape=box, fontname=monospace, fontsize=10];\n";
  std::vector<int> owner(g.size(), -1);
  for (size_t k = 0; k < p.kernels.size(); ++k)
    for (int32_t n : p.kernels[k].sources)
      if (n >= 0 && size_t(n) < g.size() && owner[size_t(n)] < 0) owner[size_t(n)] = int(k);
  auto label = [&](size_t i) {
    const ir::Node& n = g.node(ir::NodeId(i));
    return absl::StrCat("%", i, " ", ir::op_name(n.op), "\\n", dtype_name(n.dtype), shape_str(n.shape));
  };
  for (size_t k = 0; k < p.kernels.size(); ++k) {
    const KernelStyle style = k < styles.size() ? styles[k] : KernelStyle{};
    absl::StrAppend(&r, "  subgraph cluster_k", k, " {\n    label=\"", p.kernels[k].name,
                    style.note.empty() ? "" : "\\n", style.note, "\"; style=filled; fillcolor=\"", style.fill,
                    "\"; color=grey40;\n");
    for (size_t i = 0; i < g.size(); ++i)
      if (owner[i] == int(k)) absl::StrAppend(&r, "    n", i, " [label=\"", label(i), "\", style=filled, fillcolor=white];\n");
    r += "  }\n";
  }
  for (size_t i = 0; i < g.size(); ++i) {
    if (owner[i] < 0) {
      const char* shape = g.node(ir::NodeId(i)).op == ir::Op::kInput ? "ellipse" : "box";
      absl::StrAppend(&r, "  n", i, " [label=\"", label(i), "\", shape=", shape, "];\n");
    }
    for (ir::NodeId x : g.node(ir::NodeId(i)).inputs) absl::StrAppend(&r, "  n", x, " -> n", i, ";\n");
  }
  for (ir::NodeId o : g.outputs()) absl::StrAppend(&r, "  n", o, " -> out", o, ";\n  out", o, " [shape=plaintext, label=\"output\"];\n");
  return r + "}\n";
}

absl::StatusOr<Compiled> compile_graph(const ir::Graph& input, const ir::TargetInfo& target, const Options& opts) {
  static std::atomic<int> counter{0};
  Compiled out;
  bool dump = !opts.dump_dir.empty();
  if (dump) {
    support::make_dump_dir(opts.dump_dir);
    out.dump_prefix = absl::StrFormat("%s/g%03d_", opts.dump_dir, counter.fetch_add(1));
  }
  int stage = 0;
  int64_t stage_start = support::tracing() ? support::trace_now_us() : 0;
  // Each stage's span runs from the end of the one before (the graph passes print cheaply).
  auto traced = [&](const char* pass) {
    if (!support::tracing()) return;
    const int64_t now = support::trace_now_us();
    support::trace_event(pass, "pass", stage_start, now - stage_start);
    stage_start = now;
  };
  auto after = [&](const std::string& pass, const std::string& text) {
    traced(pass.c_str());
    if (opts.debug >= 3) std::fprintf(stderr, "kiln: --- after %s ---\n%s", pass.c_str(), text.c_str());
    if (dump) support::write_dump(absl::StrFormat("%s%02d_%s.txt", out.dump_prefix, stage, pass), text);
    if (opts.on_stage) opts.on_stage(pass, text);
    ++stage;
  };
  if (absl::Status s = ir::verify(input); !s.ok()) return s;
  if (has_control(input)) return compile_structured(input, target, opts);
  after("input", ir::print(input));
  ir::Graph g = simplify(input);
  after("simplify", ir::print(g));
  std::vector<std::string> attention_decisions;
  g = place_attention(g, target, &attention_decisions);
  if (!attention_decisions.empty()) {
    g = simplify(g);
    after("place_attention", ir::print(g));
  }
  SplitPolicy split;
  if (target.is_gpu) {
    split.min_row_outputs = int64_t(target.parallelism) * 2;        // workgroups per multiprocessor
    // Column reductions run as workgroups of 32 outputs each (codegen/c_family/columns.cc), split
    // until there are 128 outputs per multiprocessor (four tiles each; their partials folded in
    // the same launch: H200, W4b best at 128 among 32 to 256, bench/results/h100-2026-11-27-chain).
    // KILN_GPU_COLUMN_TILES=0 (a thread per output) splits as before: below a wave of threads.
    const int per_mp = support::options().column_split_outputs > 0 ? support::options().column_split_outputs : 128;
    split.min_column_outputs = int64_t(target.parallelism) * (support::options().gpu_column_tiles ? per_mp : 2048);
    split.min_reduce = 8192;
    split.min_chunk = 256;
    split.min_dot_tiles = int64_t(target.parallelism);  // split-K below one tile per multiprocessor
    split.half_waves = target.coop_m > 0 ? 4 : 1;
    if (const int chunk = support::options().split_k_chunk; chunk > 0) split.min_dot_chunk = chunk;
  } else {
    split.min_row_outputs = split.min_column_outputs = int64_t(target.parallelism) * 4;
  }
  // A graph compiled for symbolic dims plans no splits: whether to split depends on the size, and
  // its sizes must plan one code (passes/symbolic.h).
  if (opts.split) {
    g = split_reduce(g, split);
    g = simplify(g);
  }
  after("split_reduce", ir::print(g));
  if (absl::Status s = ir::verify(g); !s.ok()) return absl::InternalError(absl::StrCat("passes broke the graph: ", s.message()));
  FusionPlan plan = fuse(g, target, opts.fusion);
  traced("fuse");
  if (!plan.status.ok()) return plan.status;
  plan.decisions.insert(plan.decisions.begin(), attention_decisions.begin(), attention_decisions.end());
  std::string decisions;
  for (const std::string& d : plan.decisions) absl::StrAppend(&decisions, d, "\n");
  if (opts.debug >= 2 && !decisions.empty()) std::fprintf(stderr, "kiln: fusion decisions:\n%s", decisions.c_str());
  if (opts.on_stage) opts.on_stage("fusion", decisions);
  if (dump) support::write_dump(absl::StrFormat("%s%02d_fusion.txt", out.dump_prefix, stage++), decisions);
  auto p = schedule(g, plan);
  traced("schedule (lowering)");
  if (!p.ok()) return p.status();
  p->params = ir::param_descs(input);  // every slot of the input, used or not
  if (dump)
    support::write_graph(absl::StrFormat("%s%02d_graph.dot", out.dump_prefix, stage++), to_dot(g, *p), g.size(), opts.debug >= 1);
  // Split reductions fold their partials in the same launch on every GPU API's target (the
  // C-family renderers; Vulkan on a CPU, lavapipe, too), never on the CPU's (LLVM) nor on
  // Metal's (MSL 3.0 has no device-scope fence; codegen/c_family/dialect_msl.cc); not for
  // symbolic dims (nothing was split).
  if (target.name != "cpu" && target.name != "metal" && opts.split && support::options().chain_reduce) {
    chain_reduce(&*p);
    traced("chain_reduce");
  }
  plan_memory(&*p);
  traced("plan_memory");
  insert_barriers(&*p);
  traced("insert_barriers");
  // Backends rely on a well-formed Program and do not check it again.
  if (absl::Status s = ir::verify(*p); !s.ok()) return absl::InternalError(absl::StrCat("passes produced a bad program: ", s.message()));
  traced("verify");
  after("program", p->to_string());
  out.program = *std::move(p);
  out.graph = std::move(g);
  return out;
}

}  // namespace kiln::passes

// kilnc emit: one stage of the pipeline for one target, as text. The graph stages come from the
// passes' own stage hook (passes::Options::on_stage), the source stages from the CompiledProgram
// (listings(), kept because KILN_DEBUG=4 is set for this process), so the text is what
// KILN_DUMP_DIR would have written. SPIR-V is disassembled with SPIRV-Tools where the Vulkan
// backend is built.
#include <cstdio>
#include <cstdlib>
#include <map>

#include "absl/strings/str_cat.h"
#include "artifact/targets.h"
#include "passes/pipeline.h"
#include "runtime/registry.h"
#include "tools/kilnc/commands.h"
#ifdef KILNC_HAVE_SPIRV_TOOLS
#include "spirv-tools/libspirv.h"
#endif

namespace kiln::kilnc {
namespace {

const std::map<std::string, std::string> kGraphStages = {
    {"graph", "input"}, {"simplified", "simplify"}, {"fused", "fusion"}, {"program", "program"}};

absl::StatusOr<std::string> disassemble(const std::string& spirv) {
#ifdef KILNC_HAVE_SPIRV_TOOLS
  spv_context ctx = spvContextCreate(SPV_ENV_VULKAN_1_3);
  spv_text text = nullptr;
  spv_diagnostic diag = nullptr;
  spv_result_t r = spvBinaryToText(ctx, reinterpret_cast<const uint32_t*>(spirv.data()), spirv.size() / 4,
                                   SPV_BINARY_TO_TEXT_OPTION_FRIENDLY_NAMES | SPV_BINARY_TO_TEXT_OPTION_INDENT, &text, &diag);
  std::string out = r == SPV_SUCCESS ? std::string(text->str, text->length) : "";
  std::string err = diag ? diag->error : "";
  spvTextDestroy(text);
  spvDiagnosticDestroy(diag);
  spvContextDestroy(ctx);
  if (r != SPV_SUCCESS) return absl::InternalError(absl::StrCat("SPIR-V disassembly failed: ", err));
  return out;
#else
  (void)spirv;
  return absl::UnimplementedError("spirv-asm needs SPIRV-Tools, which this kilnc was built without (no Vulkan backend)");
#endif
}

}  // namespace

int emit_command(const Args& a) {
  const std::string stage = a.get("stage");
  bool graph_stage = kGraphStages.count(stage) > 0;
  if (!graph_stage && stage != "source" && stage != "ptx" && stage != "spirv-asm")
    return fail("emit", absl::InvalidArgumentError(absl::StrCat("--stage '", stage, "': one of graph, simplified, fused, program, source, ptx, spirv-asm")));
  if (a.positional.size() != 1) return fail("emit", absl::InvalidArgumentError("expects one IR file"));
  std::string target = a.get("target", stage == "ptx" ? "cuda:sm_90" : stage == "spirv-asm" ? "vulkan:lavapipe" : "cpu");
  auto specs = artifact::parse_targets(target);
  if (!specs.ok()) return fail("emit", specs.status());
  if (specs->size() != 1) return fail("emit", absl::InvalidArgumentError("--target: emit takes one target"));
  const artifact::TargetSpec& t = specs->front();
  if (stage == "ptx" && t.backend != "cuda") return fail("emit", absl::InvalidArgumentError("ptx needs a cuda target"));
  if (stage == "spirv-asm" && t.backend != "vulkan") return fail("emit", absl::InvalidArgumentError("spirv-asm needs a vulkan target"));
  auto graph = read_graph_file(a.positional[0], a.all("input-shape"));
  if (!graph.ok()) return fail("emit", graph.status());
  auto info = artifact::resolve(t);
  if (!info.ok()) return fail("emit", info.status());
  auto compiler = runtime::make_compiler(t.backend, *info);
  if (!compiler.ok()) return fail("emit", compiler.status());
  std::map<std::string, std::string> texts;
  passes::Options opts;
  opts.on_stage = [&](const std::string& s, const std::string& text) { texts[s] = text; };
  auto planned = passes::compile_graph(graph->graph, (*compiler)->target(), opts);
  if (!planned.ok()) return fail("emit", planned.status());
  if (graph_stage) {
    std::fputs(texts[kGraphStages.at(stage)].c_str(), stdout);
    return 0;
  }
  setenv("KILN_DEBUG", "4", 1);  // compilers keep sources and PTX (support::Options::keep_sources)
  auto compiled = (*compiler)->compile(planned->program);
  if (!compiled.ok()) return fail("emit", compiled.status());
  std::string out;
  if (stage == "source") {
    for (const std::string& l : compiled->listings()) absl::StrAppend(&out, l, "\n");
  } else if (stage == "ptx") {
    size_t at = compiled->module_source.find("// ---- PTX ----\n");
    if (at == std::string::npos) return fail("emit", absl::InternalError("the CUDA compiler kept no PTX"));
    out = compiled->module_source.substr(at + 17);
  } else {
    for (const runtime::CompiledKernel& k : compiled->kernels) {
      auto text = disassemble(k.binary);
      if (!text.ok()) return fail("emit", text.status());
      absl::StrAppend(&out, "; ---- kernel ", k.name, " ----\n", *text);
    }
  }
  std::fputs(out.c_str(), stdout);
  return 0;
}

}  // namespace kiln::kilnc

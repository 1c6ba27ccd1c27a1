// kilnc emit: one stage of the pipeline for one target, as text. The graph stages come from the
// passes' own stage hook (passes::Options::on_stage), the source stages from the CompiledProgram
// (listings(), kept because KILN_DEBUG=4 is set for this process), so the text is what
// KILN_DUMP_DIR would have written. SPIR-V is disassembled with SPIRV-Tools where the Vulkan
// backend is built; a HIP code object with LLVM's llvm-objdump (llvm-16, which kiln's build
// needs anyway), run as a separate process.
#include <unistd.h>

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

// The AMDGPU disassembly of a HIP code object for processor `gfx`, by llvm-objdump.
absl::StatusOr<std::string> disassemble_hsaco(const std::string& object, const std::string& gfx) {
  char path[] = "/tmp/kilnc_hsaco_XXXXXX";
  const int fd = ::mkstemp(path);
  if (fd < 0) return absl::InternalError("hsaco-asm: cannot make a temporary file");
  const bool written = ::write(fd, object.data(), object.size()) == ssize_t(object.size());
  ::close(fd);
  std::string out;
  int status = -1;
  if (written) {
    const std::string cmd = absl::StrCat(KILNC_LLVM_OBJDUMP, " --triple=amdgcn-amd-amdhsa --mcpu=", gfx, " -d ", path, " 2>&1");
    if (FILE* p = ::popen(cmd.c_str(), "r")) {
      char buf[4096];
      size_t n;
      while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
      status = ::pclose(p);
    }
  }
  ::unlink(path);
  if (!written) return absl::InternalError("hsaco-asm: cannot write a temporary file");
  if (status != 0)
    return absl::UnavailableError(absl::StrCat("hsaco-asm needs ", KILNC_LLVM_OBJDUMP, " (Debian's llvm-16): ", out.substr(0, 500)));
  return out;
}

}  // namespace

int emit_command(const Args& a) {
  const std::string stage = a.get("stage");
  bool graph_stage = kGraphStages.count(stage) > 0;
  // Source stages that need one backend, and the target they take by default.
  const std::map<std::string, std::pair<std::string, std::string>> kBackendStages = {
      {"ptx", {"cuda", "cuda:sm_90"}},
      {"spirv-asm", {"vulkan", "vulkan:lavapipe"}},
      {"hsaco-asm", {"hip", "hip:gfx90a"}},
      {"msl", {"metal", "metal:m1"}}};
  const auto needs = kBackendStages.find(stage);
  if (!graph_stage && stage != "source" && needs == kBackendStages.end())
    return fail("emit", absl::InvalidArgumentError(absl::StrCat(
                            "--stage '", stage, "': one of graph, simplified, fused, program, source, ptx, spirv-asm, hsaco-asm, msl")));
  if (a.positional.size() != 1) return fail("emit", absl::InvalidArgumentError("expects one IR file"));
  std::string target = a.get("target", needs != kBackendStages.end() ? needs->second.second : "cpu");
  auto specs = artifact::parse_targets(target);
  if (!specs.ok()) return fail("emit", specs.status());
  if (specs->size() != 1) return fail("emit", absl::InvalidArgumentError("--target: emit takes one target"));
  const artifact::TargetSpec& t = specs->front();
  if (needs != kBackendStages.end() && t.backend != needs->second.first)
    return fail("emit", absl::InvalidArgumentError(absl::StrCat(stage, " needs a ", needs->second.first, " target")));
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
  } else if (stage == "msl") {
    out = compiled->module;  // the MSL module, as the device compiles it at load
  } else if (stage == "hsaco-asm") {
    auto text = disassemble_hsaco(compiled->module, compiled->target_key);
    if (!text.ok()) return fail("emit", text.status());
    out = *text;
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

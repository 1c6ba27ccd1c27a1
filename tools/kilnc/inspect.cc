// kilnc inspect: what a .kiln artifact holds, without loading anything.
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "artifact/artifact.h"
#include "tools/kilnc/commands.h"

namespace kiln::kilnc {

int inspect_command(const Args& a) {
  if (a.positional.size() != 1) return fail("inspect", absl::InvalidArgumentError("expects one .kiln file"));
  auto art = artifact::read_file(a.positional[0]);
  if (!art.ok()) return fail("inspect", art.status());
  std::string out = absl::StrCat(a.positional[0], ": kiln artifact format ", art->format_version, ", written by kiln ",
                                 art->kiln_version, "\nsignature (", art->signature_bytes, " bytes with the graph):\n");
  const ir::ExportedGraph& g = art->graph;
  for (size_t s = 0; s < g.symbols.names.size(); ++s)
    absl::StrAppend(&out, "  symbol ", g.symbols.names[s], " (any size; the sections below are planned at ", g.symbols.base[s], ")\n");
  for (size_t i = 0; i < g.signature.inputs.size(); ++i)
    absl::StrAppend(&out, "  input  ", g.signature.inputs[i].name, " : ", ir::sym_type_str(g, true, int(i)),
                    g.signature.inputs[i].used ? "" : " (unused)", "\n");
  for (size_t i = 0; i < g.signature.outputs.size(); ++i)
    absl::StrAppend(&out, "  output ", g.signature.outputs[i].name, " : ", ir::sym_type_str(g, false, int(i)), "\n");
  absl::StrAppend(&out, "constants: ", art->graph.constants.size(), " (", art->constants_bytes, " bytes, ",
                  art->weights_file.empty() ? "stored in the artifact" : "in the weights file " + art->weights_file + " beside it",
                  ")\n");
  for (const ir::ConstantData& c : art->graph.constants) absl::StrAppend(&out, "  ", ir::type_str(c.dtype, c.shape), "\n");
  absl::StrAppend(&out, "graph: ", art->graph.graph.size(), " nodes\ntargets: ", art->targets.size(), "\n");
  for (const artifact::TargetSection& t : art->targets) {
    const runtime::CompiledProgram& p = t.program;
    int64_t io = 0;
    for (const ir::BufferDesc& b : p.buffers)
      if (b.kind != ir::BufferKind::kIntermediate) io += b.bytes();
    absl::StrAppend(&out, "  ", t.label(), "\n    key: ", t.target_key, "\n    section: ", t.bytes, " bytes; binaries: ",
                    p.module.empty() ? "one per kernel" : absl::StrCat(p.module.size(), " bytes in one module"),
                    p.portable_module.empty() ? "" : absl::StrCat(" + ", p.portable_module.size(), " bytes of PTX for newer GPUs"),
                    "\n",
                    g.symbols.empty() ? ""
                                      : absl::StrCat("    symbolic: ", t.code.marked(), " kernel axes follow the symbols; ",
                                                     t.binaries.size(), " binaries shared by every size\n"),
                    "    memory plan: peak ", p.arena_bytes, " bytes of intermediates (one arena), ", io, " bytes of inputs and outputs\n",
                    "    kernels: ", p.kernels.size(), " (", p.steps.size(), " steps");
    int loops = 0, branches = 0;
    for (const ir::Step& st : p.steps) {
      loops += st.kind == ir::StepKind::kWhile;
      branches += st.kind == ir::StepKind::kIf;
    }
    if (loops + branches > 0)
      absl::StrAppend(&out, "; ", loops, loops == 1 ? " loop" : " loops", " and ", branches, branches == 1 ? " branch" : " branches",
                      " run on the device");
    int functions = 0;
    for (const runtime::CompiledKernel& k : p.kernels) functions += k.twin < 0;
    if (functions < int(p.kernels.size()))
      absl::StrAppend(&out, "; ", functions, functions == 1 ? " function" : " functions", ": the others are twins, calling a family's function");
    out += ")\n";
    for (size_t i = 0; i < p.kernels.size(); ++i) {
      const runtime::CompiledKernel& k = p.kernels[i];
      absl::StrAppend(&out, "      ", k.name, ":");
      if (k.twin >= 0) absl::StrAppend(&out, " calls ", p.entry(i), ";");
      if (t.backend != "cpu")  // the CPU runs tiles, not a grid
        absl::StrAppend(&out, absl::StrFormat(" grid %dx%dx%d block %dx%dx%d", k.grid[0], k.grid[1], k.grid[2], k.block[0], k.block[1], k.block[2]));
      if (k.shared_bytes) absl::StrAppend(&out, ", ", k.shared_bytes, " bytes shared");
      if (k.tiles) absl::StrAppend(&out, t.backend == "cpu" ? " " : ", ", k.tiles, " tiles");
      if (!k.binary.empty()) absl::StrAppend(&out, ", ", k.binary.size(), " bytes SPIR-V");
      if (!k.strategy.empty()) absl::StrAppend(&out, "; ", k.strategy);
      out += "\n";
    }
  }
  std::fputs(out.c_str(), stdout);
  return 0;
}

}  // namespace kiln::kilnc

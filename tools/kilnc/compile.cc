// kilnc compile: IR text or an ONNX model -> .kiln artifact (artifact/compile.h does the work).
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "artifact/compile.h"
#include "tools/kilnc/commands.h"

namespace kiln::kilnc {

int compile_command(const Args& a) {
  if (a.positional.size() != 1) return fail("compile", absl::InvalidArgumentError("expects one input file (kilnc compile in.ir|model.onnx -o model.kiln --target cpu)"));
  if (a.get("output").empty()) return fail("compile", absl::InvalidArgumentError("no output file (-o model.kiln)"));
  if (a.get("target").empty()) return fail("compile", absl::InvalidArgumentError("no --target (e.g. --target cpu,vulkan:lavapipe,cuda:sm_90)"));
  auto graph = read_graph_file(a.positional[0], a.all("input-shape"));
  if (!graph.ok()) return fail("compile", graph.status());
  auto targets = artifact::parse_targets(a.get("target"));
  if (!targets.ok()) return fail("compile", targets.status());
  auto art = artifact::compile(*graph, *targets, {.fusion = !a.has("no-fusion")});
  if (!art.ok()) return fail("compile", art.status());
  art->weights_file = a.get("weights");
  if (absl::Status s = artifact::write_file(a.get("output"), *art); !s.ok()) return fail("compile", s);
  std::string sections;
  for (const artifact::TargetSection& t : art->targets)
    absl::StrAppend(&sections, sections.empty() ? "" : ", ", t.label(), " (", t.program.kernels.size(), " kernels, ", t.bytes, " bytes)");
  std::printf("wrote %s: %s\n", a.get("output").c_str(), sections.c_str());
  if (!art->weights_file.empty())
    std::printf("constants: %zu bytes in %s beside it\n", art->constants_bytes, art->weights_file.c_str());
  return 0;
}

}  // namespace kiln::kilnc

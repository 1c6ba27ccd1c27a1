// kilnc: kiln's ahead-of-time compiler. Subcommands compile (IR text or ONNX -> a .kiln artifact with
// one section per target), inspect (what an artifact holds), emit (one stage of the pipeline as
// text, the same text KILN_DUMP_DIR writes) and run (an artifact or IR text on .npy inputs).
#include <cstdio>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "tools/kilnc/commands.h"

namespace kiln::kilnc {
namespace {

constexpr const char* kHelp = R"(kilnc: kiln's ahead-of-time compiler

usage:
  kilnc compile in.ir|model.onnx -o model.kiln --target TARGETS [--no-fusion] [--weights NAME]
                [--input-shape NAME=d0,d1,...]
      Runs the JIT's passes and each target's compiler; writes one .kiln artifact holding the
      signature, the constants and one section per target. Needs no GPU. With --weights NAME the
      constants go to the file NAME beside the artifact instead (left untouched when it already
      holds the same weights, so recompiling code does not rewrite them). A .onnx model goes
      through kiln::onnx::load (its initializers become constants); --input-shape gives an
      input's dims: a number fixes one, a name (batch, or batch:16 to trace at 16; default 8)
      keeps it symbolic: the artifact then serves every size of it (ir/symbolic_graph.h). An
      .ir file exported with symbolic dims (kiln::export_graph's dims) is symbolic too.
      TARGETS: comma-separated; a backend alone is this machine's device of that backend, a
      backend:profile is a named target (several profiles of one backend with |):
        cpu[:x86-64|x86-64-v2|x86-64-v3|x86-64-v4]
        cuda:sm_75|sm_80|sm_86|sm_89|sm_90|sm_100|sm_120 (cubin + PTX for newer GPUs)
        vulkan[:lavapipe|nvidia-sm90]
        hip:gfx90a|gfx908 (code objects from comgr; no AMD GPU needed; gfx942 and gfx1100
          are known profiles this build's comgr cannot target yet)
        metal:m1|m1-max|m2|m2-max|m3|m3-max|m4|m4-max (MSL 3.0, compiled by the device at load)
      e.g. --target cpu:x86-64-v3,cuda:sm_80|sm_90,vulkan:lavapipe
  kilnc inspect model.kiln
      Versions, signature, constants, targets with their keys, kernels with launch shapes,
      the memory plan's peak bytes and section sizes.
  kilnc emit --stage STAGE in.ir|model.onnx [--target TARGET]
      One stage as text: graph, simplified, fused (fusion decisions), program (kernel IR),
      source (each kernel's source, default target cpu), ptx (default cuda:sm_90),
      spirv-asm (SPIR-V disassembly, default vulkan:lavapipe), hsaco-asm (the HIP code object
      disassembled by llvm-objdump, default hip:gfx90a), msl (the MSL module, default metal:m1).
  kilnc run model.kiln|in.ir|model.onnx --input NAME=file.npy ... [--output-dir DIR] [--device NAME]
      Loads the artifact's section for the device (an .ir or .onnx file is compiled for it first),
      runs it on the .npy inputs and writes each output as DIR/<name>.npy (default: .).
      Prints the outputs and kiln's counters (kernels_compiled=0 for an artifact).

IR text is what kiln::export_graph writes (a signature block and a graph) or a bare graph
(inputs named input0.., outputs output0..). `kilnc <command> --help` prints this text.
)";

Args parse_args(int argc, char** argv, int first) {
  Args a;
  for (int i = first; i < argc; ++i) {
    std::string s = argv[i];
    if (s == "-o") s = "--output";
    if (s.rfind("--", 0) == 0) {
      std::string name = s.substr(2), value;
      size_t eq = name.find('=');
      if (eq != std::string::npos) {
        value = name.substr(eq + 1);
        name = name.substr(0, eq);
      } else if (name != "help" && name != "no-fusion" && i + 1 < argc) {
        value = argv[++i];
      }
      a.flags.emplace(name, value);
    } else {
      a.positional.push_back(s);
    }
  }
  return a;
}

}  // namespace

std::string Args::get(const std::string& flag, const std::string& fallback) const {
  auto it = flags.find(flag);
  return it == flags.end() ? fallback : it->second;
}

std::vector<std::string> Args::all(const std::string& flag) const {
  std::vector<std::string> r;
  for (auto [it, end] = flags.equal_range(flag); it != end; ++it) r.push_back(it->second);
  return r;
}

int fail(const std::string& cmd, const absl::Status& s) {
  std::fprintf(stderr, "kilnc %s: %s\n", cmd.c_str(), std::string(s.message()).c_str());
  return 1;
}

#ifndef KILNC_HAVE_ONNX
absl::StatusOr<ir::ExportedGraph> read_onnx_file(const std::string& path, const std::vector<std::string>&) {
  return absl::UnimplementedError(absl::StrCat(path, ": this kilnc was built without the ONNX importer (KILN_WITH_ONNX=OFF)"));
}
#endif

absl::StatusOr<ir::ExportedGraph> read_graph_file(const std::string& path, const std::vector<std::string>& input_shapes) {
  if (path.size() >= 5 && path.compare(path.size() - 5, 5, ".onnx") == 0) return read_onnx_file(path, input_shapes);
  if (!input_shapes.empty()) return absl::InvalidArgumentError("--input-shape is for .onnx models");
  std::ifstream f(path, std::ios::binary);
  if (!f) return absl::NotFoundError(absl::StrCat(path, ": cannot open"));
  std::stringstream ss;
  ss << f.rdbuf();
  std::string text = ss.str();
  if (text.compare(0, 5, "\x89KILN") == 0)
    return absl::InvalidArgumentError(absl::StrCat(path, ": this is a .kiln artifact, not IR text"));
  auto g = ir::parse_exported(text);
  if (!g.ok()) return absl::InvalidArgumentError(absl::StrCat(path, ":", g.status().message()));
  return g;
}

}  // namespace kiln::kilnc

int main(int argc, char** argv) {
  using namespace kiln::kilnc;
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "help")) {
    std::fputs(kHelp, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  std::string cmd = argv[1];
  Args a = parse_args(argc, argv, 2);
  if (a.has("help")) {
    std::fputs(kHelp, stdout);
    return 0;
  }
  if (cmd == "compile") return compile_command(a);
  if (cmd == "inspect") return inspect_command(a);
  if (cmd == "emit") return emit_command(a);
  if (cmd == "run") return run_command(a);
  std::fprintf(stderr, "kilnc: unknown command '%s' (compile, inspect, emit, run; kilnc --help)\n", cmd.c_str());
  return 2;
}

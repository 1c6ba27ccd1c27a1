// kilnc's .onnx input: the model is imported with kiln::onnx::load (the same importer as the
// library), traced on zero inputs of its declared shapes (--input-shape NAME=2,3 fixes a
// symbolic dimension; NAME=batch,3 or batch:16,3 keeps dim 0 symbolic, traced at 8 or 16) and
// exported as the IR text kiln::export_graph writes, so compile, emit and run treat it like any
// exported graph. Initializers become the artifact's constants.
#include <cctype>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "kiln/kiln.h"
#include "kiln/onnx.h"
#include "tools/kilnc/commands.h"

namespace kiln::kilnc {

absl::StatusOr<ir::ExportedGraph> read_onnx_file(const std::string& path, const std::vector<std::string>& input_shapes) {
  try {
    // Traced on the CPU where there is one: tracing runs nothing but the zero inputs.
    auto cpu = Device::get("cpu");
    Device device = cpu.ok() ? *cpu : default_device();
    onnx::Model m = onnx::load(path, device);
    std::map<std::string, Shape> given;
    std::map<std::string, std::vector<Dim>> declared;  // inputs with symbolic dims
    for (const std::string& spec : input_shapes) {
      std::vector<std::string> parts = absl::StrSplit(spec, '=');
      Shape s;
      std::vector<Dim> dims;
      bool ok = parts.size() == 2, symbolic = false;
      if (ok && !parts[1].empty())
        for (absl::string_view d : absl::StrSplit(parts[1], ',')) {
          int64_t v = 0;
          if (!d.empty() && (std::isalpha((unsigned char)d[0]) || d[0] == '_')) {  // a symbol, traced at 8 or :N
            std::vector<std::string> ns = absl::StrSplit(d, ':');
            v = 8;
            ok = ok && ns.size() <= 2 && (ns.size() == 1 || (absl::SimpleAtoi(ns[1], &v) && v >= 1));
            dims.push_back(Dim(ns[0]));
            symbolic = true;
          } else {
            ok = ok && absl::SimpleAtoi(d, &v) && v >= 0;
            dims.push_back(Dim(v));
          }
          s.push_back(v);
        }
      if (!ok) return absl::InvalidArgumentError(absl::StrCat("--input-shape ", spec, ": expected NAME=d0,d1,... (a dim is a size, or a symbol: batch or batch:16)"));
      given[parts[0]] = s;
      if (symbolic) declared[parts[0]] = dims;
    }
    std::vector<Tensor> examples;
    ExportNames names;
    InputDims dims;
    for (const onnx::ValueSpec& in : m.inputs()) {
      Shape s = in.shape;
      if (auto it = given.find(in.name); it != given.end()) {
        bool fits = it->second.size() == s.size();
        for (size_t d = 0; fits && d < s.size(); ++d) fits = s[d] < 0 || s[d] == it->second[d];
        if (auto sym = declared.find(in.name); !fits && sym != declared.end() && it->second.size() == s.size())
          for (size_t d = 0; d < s.size(); ++d)
            if (sym->second[d].symbolic() && s[d] >= 0)
              return absl::InvalidArgumentError(absl::StrCat(path, ": --input-shape names dim ", d, " of '", in.name, "' ",
                                                             sym->second[d].name(), ", but the model fixes it at ", s[d],
                                                             " (the model declares ", in.name, " as ", shape_str(s),
                                                             "; only its symbolic dims, -1 there, can stay symbolic)"));
        if (!fits)
          return absl::InvalidArgumentError(absl::StrCat(path, ": --input-shape ", in.name, "=", shape_str(it->second),
                                                         " does not fit the model's ", shape_str(s)));
        s = it->second;
        given.erase(it);
        if (auto d = declared.find(in.name); d != declared.end()) {
          dims.resize(examples.size() + 1);
          dims.back() = d->second;
        }
      }
      for (int64_t d : s)
        if (d < 0)
          return absl::InvalidArgumentError(absl::StrCat(path, ": input '", in.name, "' has the symbolic shape ", shape_str(in.shape),
                                                         "; give it with --input-shape ", in.name,
                                                         "=d0,d1,... (a size, or a name for a dim that stays symbolic)"));
      examples.push_back(zeros(s, in.dtype, device));
      names.inputs.push_back(in.name);
    }
    if (!given.empty()) return absl::InvalidArgumentError(absl::StrCat(path, ": --input-shape names no input '", given.begin()->first, "'"));
    for (const onnx::ValueSpec& out : m.outputs()) names.outputs.push_back(out.name);
    std::string text = export_graph(m.function(), examples, names, dims);
    auto g = ir::parse_exported(text);
    if (!g.ok()) return absl::InternalError(absl::StrCat(path, ": the exported graph does not parse back: ", g.status().message()));
    return g;
  } catch (const Error& e) {
    return e.status();
  }
}

}  // namespace kiln::kilnc

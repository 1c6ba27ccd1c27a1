// libFuzzer target for the ONNX model parser (kiln::onnx::parse_model: protobuf bytes -> the
// importer's checked Graph), built by the `fuzz` CMake preset with clang's
// -fsanitize=fuzzer,address,undefined from the parser's sources alone.
//
// Properties checked on every input, beyond "no crash, no leak, no undefined behavior":
//  - a rejected model gets InvalidArgument or Unimplemented, with a message that starts with
//    the origin ("fuzz: ");
//  - an accepted model has its nodes in an order where every input is a graph input, an
//    initializer or the output of an earlier node, and every graph output is defined.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <set>
#include <string>

#include "frontend/onnx/parse.h"

namespace {

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "kiln_onnx_fuzzer: %s\n%s\n", what, detail.c_str());
  std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string bytes(reinterpret_cast<const char*>(data), size);
  auto g = kiln::onnx::parse_model(bytes, "fuzz");
  if (!g.ok()) {
    std::string m(g.status().message());
    if (g.status().code() != absl::StatusCode::kInvalidArgument && g.status().code() != absl::StatusCode::kUnimplemented)
      fail("unexpected status code", g.status().ToString());
    if (m.rfind("fuzz: ", 0) != 0) fail("message without the origin", m);
    return 0;
  }
  std::set<std::string> defined;
  for (const auto& v : g->inputs) defined.insert(v.name);
  for (const auto& [name, t] : g->initializers) {
    defined.insert(name);
    if (int64_t(t.bytes.size()) != t.numel() * kiln::dtype_size(t.dtype)) fail("initializer size mismatch", name);
  }
  for (const auto& n : g->nodes) {
    for (const std::string& in : n.inputs)
      if (!in.empty() && !defined.count(in)) fail("node input used before it is defined", in);
    for (const std::string& out : n.outputs)
      if (!out.empty()) defined.insert(out);
  }
  for (const auto& o : g->outputs)
    if (!defined.count(o.name)) fail("graph output not defined", o.name);
  return 0;
}

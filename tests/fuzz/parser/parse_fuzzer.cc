// libFuzzer target for the IR text parser (ir::parse), built by the `fuzz` CMake preset with
// clang's -fsanitize=fuzzer,address,undefined from the IR sources alone.
//
// Properties checked on every input, beyond "no crash, no leak, no undefined behavior":
//  - a rejected text gets an InvalidArgument status whose message starts with "line:col: " or
//    "invalid graph: ";
//  - an accepted text is a verified graph that prints to text which parses back to a graph
//    that prints identically (print -> parse -> print is byte-identical).
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <cstdio>
#include <string>

#include "ir/graph.h"

namespace {

[[noreturn]] void fail(const char* what, const std::string& detail) {
  std::fprintf(stderr, "kiln_parse_fuzzer: %s\n%s\n", what, detail.c_str());
  std::abort();
}

bool has_position(const std::string& m) {
  size_t i = 0;
  auto digits = [&] {
    size_t b = i;
    while (i < m.size() && std::isdigit(static_cast<unsigned char>(m[i]))) ++i;
    return i > b;
  };
  if (!digits() || i >= m.size() || m[i++] != ':') return false;
  if (!digits() || i + 1 >= m.size() || m[i] != ':' || m[i + 1] != ' ') return false;
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  auto g = kiln::ir::parse(text);
  if (!g.ok()) {
    std::string m(g.status().message());
    if (g.status().code() != absl::StatusCode::kInvalidArgument) fail("error is not InvalidArgument", m);
    if (!has_position(m) && m.rfind("invalid graph: ", 0) != 0) fail("error without line:column", m);
    return 0;
  }
  if (absl::Status v = kiln::ir::verify(*g); !v.ok()) fail("parsed graph does not verify", std::string(v.message()));
  std::string printed = kiln::ir::print(*g);
  auto again = kiln::ir::parse(printed);
  if (!again.ok()) fail("printed graph does not parse", std::string(again.status().message()) + "\n" + printed);
  if (kiln::ir::print(*again) != printed) fail("print -> parse -> print is not identical", printed);
  return 0;
}

// kilnc's subcommands (kilnc.cc parses the command line and calls one). Each returns the
// process exit status and prints errors itself; none compiles anything it does not say it does.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/signature.h"

namespace kiln::kilnc {

// The command line after the subcommand name: flags (--name value, --name=value, or repeated
// --input a --input b) and positional arguments.
struct Args {
  std::multimap<std::string, std::string> flags;
  std::vector<std::string> positional;
  std::string get(const std::string& flag, const std::string& fallback = "") const;
  std::vector<std::string> all(const std::string& flag) const;
  bool has(const std::string& flag) const { return flags.count(flag) > 0; }
};

// Reads IR text (with or without a signature), or imports a .onnx model (read_onnx_file).
// `input_shapes` ("NAME=2,3", --input-shape) fix an ONNX model's symbolic dimensions.
absl::StatusOr<ir::ExportedGraph> read_graph_file(const std::string& path, const std::vector<std::string>& input_shapes = {});
absl::StatusOr<ir::ExportedGraph> read_onnx_file(const std::string& path, const std::vector<std::string>& input_shapes);

int compile_command(const Args& a);
int inspect_command(const Args& a);
int emit_command(const Args& a);
int run_command(const Args& a);

// Prints "kilnc <cmd>: <message>" on stderr and returns 1.
int fail(const std::string& cmd, const absl::Status& s);

}  // namespace kiln::kilnc

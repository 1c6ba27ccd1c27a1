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

// Reads IR text (with or without a signature); a .onnx file is an error naming issue 12.
absl::StatusOr<ir::ExportedGraph> read_graph_file(const std::string& path);

int compile_command(const Args& a);
int inspect_command(const Args& a);
int emit_command(const Args& a);
int run_command(const Args& a);

// Prints "kilnc <cmd>: <message>" on stderr and returns 1.
int fail(const std::string& cmd, const absl::Status& s);

}  // namespace kiln::kilnc

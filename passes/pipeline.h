// The pass manager: Graph -> Program, with the debug dumps of KILN_DEBUG and KILN_DUMP_DIR.
#pragma once

#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "ir/program.h"
#include "ir/target_info.h"
#include "support/options.h"

namespace kiln::passes {

struct Options {
  bool fusion = true;    // KILN_FUSION=0 turns it off (one kernel per primitive)
  int debug = 0;         // KILN_DEBUG level
  std::string dump_dir;  // KILN_DUMP_DIR
  // Called with each stage's text as it is made: the same texts KILN_DUMP_DIR writes ("input",
  // "simplify", "split_reduce", "fusion", "program"); kilnc emit prints them.
  std::function<void(const std::string& stage, const std::string& text)> on_stage;
  // split_reduce (split-K, split reductions of few outputs): off for symbolic dims, whose sizes
  // must plan the same kernels.
  bool split = true;
  static Options from(const support::Options& env) { return Options{env.fusion, env.debug, env.dump_dir, {}, true}; }
};

struct Compiled {
  ir::Program program;
  ir::Graph graph;          // the graph the program computes (after simplification): Kernel::sources index it
  std::string dump_prefix;  // "<dump_dir>/gNNN_" when dumping, for the backend's source files
};

absl::StatusOr<Compiled> compile_graph(const ir::Graph& g, const ir::TargetInfo& target, const Options& opts);

// Graphviz text of the graph `p` was compiled from, each kernel drawn as a cluster of the nodes
// it computes (Kernel::sources), labelled with its name. `styles`, when given, has one entry per
// kernel: extra Graphviz attributes and label lines for its cluster (a profile colours kernels by
// their share of the time: `fillcolor="#ff8080"`, "label" gets `style_labels[k]` appended).
struct KernelStyle {
  std::string fill = "lightgrey";  // a Graphviz color
  std::string note;                // a second label line, e.g. "41% of device time"
};
std::string to_dot(const ir::Graph& g, const ir::Program& p, const std::vector<KernelStyle>& styles = {});


}  // namespace kiln::passes

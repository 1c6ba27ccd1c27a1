// A graph with a signature: what kiln::export_graph writes and kilnc compiles. The graph IR
// (text.cc) numbers its inputs and outputs; a signature names them, so a caller of a compiled
// model can pass `x` and read `probs` without knowing positions. Tensors the exported function
// captured from outside (weights) travel with the graph as constants.
//
//   signature {
//     input x : f32[256,512]
//     input unused_mask : bool[4] unused     # an argument the outputs do not depend on
//     constant : f32[512,10] base64=AAAAAA...
//     output probs : f32[256,10]
//   }
//   graph { ... }
//
// Graph input positions: the used inputs in order take 0..k-1, the constants k..n-1. Plain
// graph text (no signature block, e.g. a KILN_DUMP_DIR file) parses too: its inputs are named
// input0, input1, ..., its outputs output0, ... Constants print without data when the caller
// keeps their bytes elsewhere (the .kiln artifact): `constant : f32[512,10]`.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"
#include "ir/symbolic_graph.h"

namespace kiln::ir {

struct TensorSpec {
  std::string name;
  DType dtype = DType::kFloat32;
  Shape shape;
  bool used = true;  // inputs only: false when the graph does not read it
};

struct ConstantData {
  DType dtype = DType::kFloat32;
  Shape shape;
  std::string bytes;  // little-endian storage, C order (dtype_size * numel bytes)
};

struct Signature {
  std::vector<TensorSpec> inputs, outputs;
};

struct ExportedGraph {
  Signature signature;
  std::vector<ConstantData> constants;
  Graph graph;
  // Symbolic dimensions (ir/symbolic_graph.h): empty for a graph of fixed sizes; otherwise the
  // signature's and the graph's sizes are those at symbols.base.
  SymbolicDims symbols;

  // Graph input position of each signature input (-1 when unused), then of each constant.
  std::vector<int> input_positions() const;
  std::vector<int> constant_positions() const;
};

// "f32[2,3]".
std::string type_str(DType dtype, const Shape& shape);
// One line per tensor, "input x : f32[2,3]" (for messages and kilnc inspect).
std::string print_signature(const Signature& s);

// The text above; `with_data` false leaves the constants' bytes out.
std::string print(const ExportedGraph& e, bool with_data = true);
// Parse errors are "line:col: ..." like the graph IR's; then check() runs. `need_data` false
// accepts constants without bytes (their `bytes` stay empty).
absl::StatusOr<ExportedGraph> parse_exported(const std::string& text, bool need_data = true);

// The signature agrees with the graph: names are unique identifiers, input and constant
// positions cover the graph's inputs with the same dtypes and shapes, outputs match, constants
// hold dtype_size * numel bytes (when `need_data`).
absl::Status check(const ExportedGraph& e, bool need_data = true);

}  // namespace kiln::ir

// Exporting a tensor function for ahead-of-time compilation: kiln::export_graph traces `fn` once
// on example inputs (like kiln::jit's first call) and returns the graph as IR text with a
// signature (the inputs' and outputs' names, dtypes and shapes). `kilnc compile` turns that text
// into a .kiln artifact; kiln::load (kiln/model.h) runs the artifact.
//
//   std::string ir = kiln::export_graph(mlp, {x, w}, {{"x", "w"}, {"probs"}});
//   // write ir to mlp.ir, then: kilnc compile mlp.ir -o mlp.kiln --target cpu,vulkan
//
// Tensors `fn` captures from outside (weights not passed as arguments) become constants whose
// values are written into the text (and later into the artifact). Arguments `fn` does not read
// stay in the signature, marked unused. Each argument must be a distinct tensor.
#pragma once

#include <string>
#include <vector>

#include "kiln/jit.h"
#include "kiln/tensor.h"

namespace kiln {

struct ExportNames {
  std::vector<std::string> inputs;   // one per example input; empty: input0, input1, ...
  std::vector<std::string> outputs;  // one per output of fn; empty: output0, output1, ...
};

// Throws kiln::Error for a bad name or count, aliased arguments, or an fn that fails to trace.
//
// Symbolic dimensions: with `dims` (kiln::Jit's declaration: kiln::Dim("batch") for a dim whose
// size may change), the text serves every size of them (ir/symbolic_graph.h): `fn` is traced at
// the examples' sizes (at least 2), twice those and three times those, and each integer of the
// graph that changes between them is written as a polynomial in the symbols (2*batch+4, the
// 1/batch of a mean). kiln::Error names the node when `fn` records another graph at another size
// or a size that is no such polynomial (a dim of batch/2, a branch on the size); at most 3 symbols.
std::string export_graph(const Jit::Fn& fn, const std::vector<Tensor>& example_inputs, const ExportNames& names = {},
                         const InputDims& dims = {});
// The function of a kiln::Jit, traced on `example_inputs`, with the Jit's declared dims.
std::string export_graph(const Jit& jit, const std::vector<Tensor>& example_inputs, const ExportNames& names = {});

}  // namespace kiln

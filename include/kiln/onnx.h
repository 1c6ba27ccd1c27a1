// ONNX import: kiln::onnx::load reads a .onnx file (opsets 13 to 17) and returns a callable
// model whose calls build the model's graph through kiln's own op builders (so the fuser sees
// through every op) and run it like a kiln::jit function: the first call with given input
// shapes traces and compiles, later ones replay.
//
//   kiln::onnx::Model m = kiln::onnx::load("mlp.onnx");       // or load(path, kiln::Device("cpu"))
//   std::vector<kiln::Tensor> y = m({x});                        // by position
//   auto logits = m({{"input", x}})[0];                          // by name
//
// Initializers become constants uploaded once at load. Shape subgraphs (Shape, Gather on
// shapes, Concat, ConstantOfShape, Range, arithmetic on known integers, ...) fold at import.
// kiln's shapes are static: an input whose *values* decide a shape (Reshape's shape, Slice's
// starts, ...) is a "value input" (TensorInfo::value_input): its values are read on the host at
// each call and the graph is specialized on them (one compiled graph per distinct value).
//
// Errors throw kiln::Error carrying an absl::Status, like kiln::load: a file that is not a
// model, an undefined name or a cycle (InvalidArgument), an op, attribute or dtype kiln does not
// support (Unimplemented); each names the node ("node 'd1' (Det): Det is not supported yet
// (kiln has no linear-algebra decompositions)"). Models whose input shapes are all static are
// built once at load, so every error a call could raise for them is raised by load.
#pragma once

#include <initializer_list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "kiln/device.h"
#include "kiln/jit.h"
#include "kiln/model.h"
#include "kiln/tensor.h"

namespace kiln::onnx {

// An input or output: name, dtype, shape (-1 for a symbolic or unknown dimension).
struct ValueSpec {
  std::string name;
  DType dtype = DType::kFloat32;
  Shape shape;
  bool value_input = false;  // inputs only: its values decide shapes (see above)
};

class Model {
 public:
  Model() = default;  // not loaded: calling it throws
  // Outputs in the model's order. Inputs are checked against the declared dtypes and static
  // dimensions, and must be on the model's device.
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs) const;
  std::vector<Tensor> operator()(const std::map<std::string, Tensor>& inputs) const;
  // m({x, y}): a braced list of tensors is positional (it would otherwise also match the map).
  std::vector<Tensor> operator()(std::initializer_list<Tensor> inputs) const { return (*this)(std::vector<Tensor>(inputs)); }

  const std::vector<ValueSpec>& inputs() const;
  const std::vector<ValueSpec>& outputs() const;
  int64_t opset() const;
  Device device() const;
  // The model as a tensor function of its inputs (what calls trace; kilnc exports it).
  Jit::Fn function() const;

  struct Impl;

 private:
  friend Model load_bytes(const std::string& bytes, const Device& device, const std::string& origin);
  friend Model load(const std::string& path, const Device& device);
  explicit Model(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

// Initializers stored as external data are read from files beside the model.
Model load(const std::string& path, const Device& device);
Model load(const std::string& path);  // on default_device()
// From the bytes of a .onnx file; `origin` names it in errors. External data is an error here
// (there is no folder to find it in).
Model load_bytes(const std::string& bytes, const Device& device, const std::string& origin = "<bytes>");

// The ONNX op types kiln imports, sorted.
std::vector<std::string> supported_ops();

}  // namespace kiln::onnx

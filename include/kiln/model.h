// A compiled model loaded from a .kiln artifact (made by `kilnc compile`). Loading compiles
// nothing: it picks the first section of the artifact made for the device (by target key) and
// loads its binaries; calling the model replays them like a kiln::jit executable (inputs bound,
// fresh output tensors every call).
//
//   kiln::Model m = kiln::load("mlp.kiln");          // the default device; or load(path, Device("cpu"))
//   std::vector<kiln::Tensor> y = m({x, w});          // by position
//   auto probs = m({{"x", x}, {"w", w}})[0];           // by name
//
// Inputs are checked against the signature (count, names, dtypes, shapes, device); a mismatch
// throws kiln::Error naming the input.
//
// Symbolic dimensions (exported with kiln::export_graph's dims, or kilnc --input-shape x=batch,784):
// the model takes any size of them, read from its inputs (one symbol bound to two sizes is an
// error naming both inputs). The first call at a size other than the exported one plans the graph
// at that size and loads an executable for it (kept for the 16 most recent sizes); its code comes
// from the artifact, found by its source, so nothing compiles unless that size plans other kernels
// than the template (KILN_DEBUG=1 says so; stats().kernels_compiled counts them). A corrupted, truncated or other-version artifact, or one
// without a section for the device, throws kiln::Error saying so.
#pragma once

#include <map>
#include <memory>
#include <string>
#include <initializer_list>
#include <vector>

#include "kiln/device.h"
#include "kiln/tensor.h"

namespace kiln {

struct TensorInfo {
  std::string name;
  DType dtype = DType::kFloat32;
  Shape shape;  // a symbolic dim holds its size at the sizes the model was exported at
  // Symbolic dimensions: per dim, its expression ("batch", "2*batch+4") or "" for a fixed dim;
  // empty when every dim is fixed.
  std::vector<std::string> dims;
};

class Model {
 public:
  Model() = default;  // not loaded: calling it throws
  // Outputs in signature order.
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs) const;
  std::vector<Tensor> operator()(const std::map<std::string, Tensor>& inputs) const;
  // m({x, w}): a braced list of tensors is positional (it would be ambiguous between the two).
  std::vector<Tensor> operator()(std::initializer_list<Tensor> inputs) const {
    return (*this)(std::vector<Tensor>(inputs));
  }

  const std::vector<TensorInfo>& inputs() const;
  const std::vector<TensorInfo>& outputs() const;
  // The section that was loaded ("cpu:x86-64-v3", "vulkan").
  std::string target() const;
  Device device() const;

  struct Impl;

 private:
  friend struct detail::Access;
  explicit Model(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

Model load(const std::string& path, const Device& device);
Model load(const std::string& path);  // on default_device()

}  // namespace kiln

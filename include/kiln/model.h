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
// throws kiln::Error naming the input. A corrupted, truncated or other-version artifact, or one
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
  Shape shape;
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

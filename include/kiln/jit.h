// kiln::jit: trace a tensor function once, replay it with no host-side graph work.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "kiln/tensor.h"

namespace kiln {

// A traced function. The first call with a given input signature (device, dtypes, shapes)
// runs `fn` on the inputs to record its graph and compiles it; every later call with that
// signature skips recording, hashing and graph building and replays the compiled executable on
// the new inputs (the path for launch-bound work).
//
// `fn` must compute its outputs from its inputs with kiln ops. Tensors it captures from
// outside are constants of the trace (their values at trace time are used on every replay),
// and it must not read results to the host (to_vector/item) while tracing.
class Jit {
 public:
  using Fn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
  explicit Jit(Fn fn);
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs) const;
  // Number of distinct input signatures traced so far.
  int traces() const;
  // The traced function (kiln::export_graph traces it too).
  const Fn& function() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

inline Jit jit(Jit::Fn fn) { return Jit(std::move(fn)); }

}  // namespace kiln

// kiln::jit: trace a tensor function once, replay it with no host-side graph work.
#pragma once

#include <functional>
#include <memory>
#include <string>
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
// One dimension of a declared input shape: a fixed size, or a symbolic one named by a string
// (`kiln::Dim("batch")`) whose size may change from call to call without compiling anything new.
class Dim {
 public:
  Dim(int64_t size) : size_(size) {}  // NOLINT: fixed sizes are written as plain integers
  Dim(int size) : size_(size) {}      // NOLINT
  explicit Dim(std::string name) : name_(std::move(name)) {}
  explicit Dim(const char* name) : name_(name) {}
  bool symbolic() const { return !name_.empty(); }
  const std::string& name() const { return name_; }
  int64_t size() const { return size_; }  // fixed dims only

 private:
  std::string name_;
  int64_t size_ = -1;
};

// Declared input shapes of a kiln::Jit, by input position ({} leaves an input as traced).
using InputDims = std::vector<std::vector<Dim>>;

// Symbolic dimensions: with `dims`, the calls of a Jit whose inputs differ only in the sizes of
// symbolic dims share one compiled code. The first call plans the function at two sizes of its
// own choosing to learn how each kernel scales with each symbol, and compiles code that reads the
// sizes at run time; a later call with new sizes traces `fn` again and plans it (cheap) but
// compiles nothing (stats().kernels_compiled stays; stats().kernels_reused counts the kernels
// whose code an earlier size made). Every call checks its inputs against `dims`: a wrong rank, a
// fixed dim of another size, or one symbol bound to two sizes in one call throws kiln::Error
// (InvalidArgument) naming the input and dim. Where a size plans other kernels than the probes
// (size 1 does), or a kernel reduces over a symbolic dim or steps through memory by it, that size
// compiles what differs (KILN_DEBUG=1 says so); results are always exact. On the CPU and CUDA
// the sizes run through one executable, resized when the size changes (CUDA: the instantiated
// graph's nodes updated in place, no new instantiation; stats().executables_resized). Each size's
// entry (its launch shapes and memory plan) lives in the bounded executable cache
// (set_executable_cache_budget): a size it evicted is planned again on its next call, compiling
// nothing.
class Jit {
 public:
  using Fn = std::function<std::vector<Tensor>(const std::vector<Tensor>&)>;
  explicit Jit(Fn fn);
  Jit(Fn fn, InputDims dims);
  std::vector<Tensor> operator()(const std::vector<Tensor>& inputs) const;
  // Number of distinct input signatures traced so far.
  int traces() const;
  // The traced function (kiln::export_graph traces it too) and its declared dims.
  const Fn& function() const;
  const InputDims& dims() const;

 private:
  struct Impl;
  std::shared_ptr<Impl> impl_;
};

inline Jit jit(Jit::Fn fn) { return Jit(std::move(fn)); }

}  // namespace kiln

// One executable for every size of a symbolic dimension, where the backend can resize one
// (runtime::Executable::resize; CUDA updates the instantiated graph's kernel nodes in place).
//
// The sizes of a symbolic family share their code (passes/symbolic.h) but plan their own launch
// shapes and memory; without this each size would load an executable of its own (on CUDA: a
// graph instantiated per size). SharedSizes loads the first size's executable and hands each size
// a view of it: a run through a view whose size is not the one the executable holds resizes it
// first (a few node updates, no instantiation), then runs. A size the executable refuses (other
// code, as size 1 has, or another set of launching kernels) loads an executable of its own, which
// the sizes after it share; on backends that cannot resize every size loads its own. An
// executable lives as long as any view of it.
#pragma once

#include <memory>
#include <mutex>

#include "absl/status/statusor.h"
#include "runtime/compiled_program.h"
#include "runtime/device.h"

namespace kiln::replay {

class SharedSizes {
 public:
  // The executable for `c`, one size of the family, on `device` (the same device every call).
  absl::StatusOr<std::unique_ptr<runtime::Executable>> load(runtime::Device* device, const runtime::CompiledProgram& c);

  struct Shared;

 private:
  std::mutex mu_;
  std::weak_ptr<Shared> shared_;
};

}  // namespace kiln::replay

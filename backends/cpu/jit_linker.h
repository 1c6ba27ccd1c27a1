// Loads the CPU compiler's relocatable object files (codegen/llvm/compile.h) into this process
// with LLVM's ORC JIT linker. One process-wide LLJIT; each object is linked into a JITDylib of its
// own (two loads of one object, or two objects with the same symbol names, never clash), which
// sees the process's symbols (the C library's math functions the kernels call). Destroying the
// LinkedObject unlinks the code and releases its memory.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace llvm::orc {
class JITDylib;
}

namespace kiln::runtime::cpu {

// codegen/llvm/emit_kernel.h: the kernel's j-th binding is args[index[j]].
using KernelFn = void (*)(char** args, const int32_t* index, int64_t tile_begin, int64_t tile_end);

class LinkedObject {
 public:
  LinkedObject(llvm::orc::JITDylib* lib, std::vector<KernelFn> functions) : lib_(lib), functions_(std::move(functions)) {}
  LinkedObject(const LinkedObject&) = delete;
  LinkedObject& operator=(const LinkedObject&) = delete;
  ~LinkedObject();
  // The address of each symbol asked for, in order.
  const std::vector<KernelFn>& functions() const { return functions_; }

 private:
  llvm::orc::JITDylib* lib_;
  std::vector<KernelFn> functions_;
};

// Links `object` and looks up `symbols` in it. InvalidArgument when the bytes are not an object
// file or a symbol is missing or unresolved; Unavailable when LLVM's JIT cannot start here.
absl::StatusOr<std::unique_ptr<LinkedObject>> link_object(std::string_view object, const std::vector<std::string>& symbols);

}  // namespace kiln::runtime::cpu

// Vectorizable float32 math for the CPU kernels (exp, log, tanh, sigmoid, erf): straight-line
// arithmetic and selects that LLVM's loop vectorizer turns into SIMD. float64 and the rarer
// functions call the C library through LLVM intrinsics.
#pragma once

#include "llvm/IR/IRBuilder.h"

namespace kiln::codegen::cpu {

llvm::Value* emit_exp(llvm::IRBuilder<>& b, llvm::Value* x);
llvm::Value* emit_log(llvm::IRBuilder<>& b, llvm::Value* x);
llvm::Value* emit_tanh(llvm::IRBuilder<>& b, llvm::Value* x);
llvm::Value* emit_sigmoid(llvm::IRBuilder<>& b, llvm::Value* x);
llvm::Value* emit_erf(llvm::IRBuilder<>& b, llvm::Value* x);

}  // namespace kiln::codegen::cpu

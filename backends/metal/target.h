// What an Apple GPU is to the passes, the renderer and the compiler (ir::TargetInfo), and the key
// that ties a CompiledProgram to the GPUs that can load it. kiln's Metal kernels are MSL 3.0
// source (codegen/c_family/dialect_msl.cc) compiled by the device when it loads them, so a
// program loads on any Metal 3 GPU whose SIMD-groups are as wide as the ones it was written for:
// the key is the language version and that width. What differs from CUDA (see the dialect's
// table): SIMD-groups of 32, 32 KiB of threadgroup memory, no float64, f32 subnormals flushed.
#pragma once

#include <string>

#include "ir/target_info.h"

namespace kiln::runtime::metal {

// An Apple GPU named `chip` ("m3-max", or a device's own name) with `cores` GPU cores.
ir::TargetInfo metal_target_info(const std::string& chip, int cores);

// "msl3.0-simd32": what a CompiledProgram's MSL needs of the device that loads it.
std::string target_key(const ir::TargetInfo& t);

}  // namespace kiln::runtime::metal

// What a CUDA GPU is to the passes, the renderer and the compiler (ir::TargetInfo), and the key
// that ties a CompiledProgram to the GPUs that can load it.
//
// The Compiler (compiler.h) is made from a TargetInfo alone and stamps its CompiledPrograms with
// target_key(target); the Device (device.h) reads the same numbers off the hardware
// and accepts only CompiledPrograms with its own key. Both call the one function here, so the
// two halves cannot disagree on what "the same target" means.
#pragma once

#include <cstdint>
#include <string>

#include "ir/target_info.h"
#include "support/trace.h"

namespace kiln::runtime::cuda {

// A CUDA GPU with `sm_count` multiprocessors and `shared_optin` bytes of shared memory per block
// (the opt-in maximum). Every architecture NVRTC 13 targets (sm_75 and newer) has the rest.
// Tests without a GPU use an H100's numbers (132, 232448) to build the Programs it would run.
ir::TargetInfo cuda_target_info(int sm_count, int64_t shared_optin, int compute_capability = 90);

// A GPU's peaks for profiles' rooflines, from its attributes: memory bandwidth = 2 (double data
// rate) x the memory clock x the bus width; f32 = SMs x FP32 lanes per SM (64 on sm_70-sm_80,
// 128 from sm_86) x 2 (FMA) x the SM clock; 16-bit matrix math = SMs x dense tensor-core
// FLOP per SM per clock (1024 on sm_70/75, 2048 on sm_80, 512 on sm_86/89, 4096 on sm_90,
// 8192 on sm_100/103, from NVIDIA's architecture documents; the vector peak elsewhere) x the
// SM clock. Clocks in kHz as the driver reports them; a zero clock leaves that peak unknown.
support::Peaks cuda_peaks(int cc, int sms, double clock_khz, double memory_clock_khz, int bus_bits);

// "sm_<cc>" of t.compute_capability (10 * major + minor, 90 for an H100): a cubin runs on GPUs
// of exactly this architecture. The SM count and shared memory only tune launch shapes; a device
// checks the shared memory a kernel needs against its own when it loads it (executable.cc).
std::string target_key(const ir::TargetInfo& t);

// Whether a device of `t` loads a CompiledProgram stamped `key`: its own "sm_<cc>", or
// "sm_<cc>a" (arch-specific code: wgmma, setmaxnreg) where the architecture has such a variant
// (sm_90a on compute capability 9.0 exactly).
bool accepts_key(const ir::TargetInfo& t, const std::string& key);

// Whether a device of `t` can run the PTX of a program stamped `key` through the driver's JIT:
// PTX made for "sm_<cc>" runs on that architecture and every later one; arch-specific keys
// ("sm_90a") have no portable PTX.
bool runs_ptx_of(const ir::TargetInfo& t, const std::string& key);

}  // namespace kiln::runtime::cuda

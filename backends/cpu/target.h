// The CPU target: the ir::TargetInfo the passes plan for on this machine (read off the hardware:
// the thread count, and the CPU and its features as LLVM detects them), and the target_key a
// CompiledProgram for the CPU carries. The compiler and the device both name a target through
// target_key, so an object compiled here loads only where that CPU's code runs (an object using
// AVX-512 never loads on a CPU without it).
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "ir/target_info.h"
#include "support/trace.h"

namespace kiln::runtime::cpu {

// This machine, for a thread pool of `threads` threads. Unavailable when LLVM has no code
// generator for the host.
absl::StatusOr<ir::TargetInfo> host_target(int threads);

// "<triple> <cpu> <features>" of the CPU `t` names (the host's when t.cpu_name is empty).
absl::StatusOr<std::string> target_key(const ir::TargetInfo& t);

// Whether an object compiled for key `compiled` runs on a CPU of key `here`: the same triple, and
// every feature the object was compiled with ("+avx2") present here (a key without a feature
// list must match exactly: its CPU name implies features). The CPU name then only tunes
// scheduling, so an object for a named level (profiles.h: x86-64-v3) loads on any CPU with its
// features, and one made for this very CPU (the JIT) matches itself.
bool key_compatible(const std::string& compiled, const std::string& here);

// How the target keys `compiled` and `here` differ, for a load's error message: "compiled for
// x86_64-pc-linux-gnu skylake-avx512, this CPU is ... znver3; features only there: +avx512f, ...".
std::string describe_difference(const std::string& compiled, const std::string& here);

// This machine's peaks for profiles' rooflines, measured or estimated once per process: memory
// bandwidth from a timed copy of 64 MiB spread over `threads` threads (a copy reads and writes
// every byte), f32 arithmetic as threads x `vector_width` lanes x 2 (fused multiply-add) x 2
// (two FMA pipes per core) x the clock /proc/cpuinfo reports. KILN_PEAK_* replace either.
support::Peaks host_peaks(int threads, int vector_width);

}  // namespace kiln::runtime::cpu

// Autotuning (KILN_AUTOTUNE=1): before a Program is compiled for a device, each kernel whose
// compiler offers code variants (runtime::Compiler::tuning_candidates: on CUDA the Hopper
// contraction's tile width, schedule and cluster, and the Hopper attention kernel's schedule and
// cluster) gets the fastest of them as measured on that device. Round r compiles the Program with
// every tuned kernel on its r-th candidate (its last once it has no more), loads it, runs it over
// scratch inputs (floats spread over [-1, 1), integers zero) and times each kernel
// (Executable::kernel_times, the best of a few runs); each kernel keeps its fastest variant. The
// winner is stored on disk per device and shape class (DiskCache "autotune"; and in memory for the
// process), so a later process pays one disk read per kernel and a replay nothing: the executable
// cache keeps the tuned executable.
//
// Tuning never makes a compile fail: a round that does not compile, load or run is skipped, and
// without KILN_AUTOTUNE, on a device that cannot time kernels one by one, or for kernels with
// nothing to choose, the compiler's heuristic stands. KILN_DEBUG=1 prints each kernel's times and
// choice.
#pragma once

#include "absl/status/status.h"
#include "ir/program.h"
#include "runtime/device.h"

namespace kiln::replay {

// Sets Kernel::config of every kernel of `p` that `compiler` offers variants for, from the
// stores or by timing on `device` (the device `compiler` was made for). Counts
// runtime::counters().kernels_autotuned and autotune_cache_hits.
void autotune(ir::Program* p, const runtime::Compiler& compiler, runtime::Device* device);

}  // namespace kiln::replay

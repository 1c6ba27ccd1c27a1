// Profiling: a Chrome trace / Perfetto JSON of what kiln does, for chrome://tracing or
// ui.perfetto.dev. Host spans (recording the graph, hashing and the executable cache lookup,
// each pass, code generation and the compiler, loading, binding and launching, waiting for a
// download) go on a track per host thread; kernels go on the device's track: the CPU's from
// timers, Vulkan's from timestamp queries (executables built before the profile started have
// none), CUDA's from timing events (a profiled CUDA run launches its kernels one by one instead
// of as one graph, and a profiled GPU run waits for the GPU). Each kernel span carries its bytes
// moved and flops (estimates from the kernel IR), achieved GB/s and GFLOP/s, the device's peaks,
// its roofline class (launch-, memory- or compute-bound) and the graph nodes it computes.
// Beside the trace (path "dir/t.json"): "dir/t.report.txt", the launch-overhead report (per
// graph: runs, kernels per run, host time per run, device busy and idle time, each kernel's
// share; then recommendations; printed too at KILN_DEBUG=1), and "dir/t.graph<N>.dot" (.svg with
// Graphviz) for each graph compiled during the profile, kernels coloured by their share of time.
#pragma once

#include <functional>
#include <string>

namespace kiln {

// Runs `fn` and writes the trace of everything kiln did meanwhile to `path`. Throws kiln::Error
// when a profile is already being taken (one at a time per process) or the file cannot be
// written. KILN_PROFILE=path profiles the whole run instead and writes at exit.
void profile(const std::string& path, const std::function<void()>& fn);

}  // namespace kiln

// Profiling: a Chrome trace / Perfetto JSON of what kiln does, for chrome://tracing or
// ui.perfetto.dev. Host spans (recording the graph, hashing and the executable cache lookup,
// each pass, code generation and the compiler, loading, binding and launching, waiting for a
// download) go on a track per host thread; kernels go on the device's track: the CPU backend's
// with their tiles and element operations, Vulkan's from timestamp queries (a profiled run then
// waits for the GPU; executables built before the profile started have no timestamps). CUDA
// kernel spans are not recorded yet.
#pragma once

#include <functional>
#include <string>

namespace kiln {

// Runs `fn` and writes the trace of everything kiln did meanwhile to `path`. Throws kiln::Error
// when a profile is already being taken (one at a time per process) or the file cannot be
// written. KILN_PROFILE=path profiles the whole run instead and writes at exit.
void profile(const std::string& path, const std::function<void()>& fn);

}  // namespace kiln

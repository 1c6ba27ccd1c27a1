// Profiling: a Chrome trace / Perfetto JSON of what kiln does, for chrome://tracing or
// ui.perfetto.dev. Host spans (recording the graph, hashing and the executable cache lookup,
// each pass, code generation and the compiler, loading, binding and launching, waiting for a
// download) go on a track per host thread; kernels run by the CPU backend go on the device's
// track, with their tiles and element operations. (GPU kernel spans from CUDA events and Vulkan
// timestamp queries are not recorded yet.)
#pragma once

#include <functional>
#include <string>

namespace kiln {

// Runs `fn` and writes the trace of everything kiln did meanwhile to `path`. Throws kiln::Error
// when a profile is already being taken (one at a time per process) or the file cannot be
// written. KILN_PROFILE=path profiles the whole run instead and writes at exit.
void profile(const std::string& path, const std::function<void()>& fn);

}  // namespace kiln

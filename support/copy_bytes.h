// copy_bytes: memcpy for the large host copies of uploads and downloads (the GPU backends fill and
// drain pinned staging memory with them). One thread copies pageable memory at a fraction of what
// the memory system and the PCIe link carry (an H100 machine: a 64 MiB upload-compute-download
// pipeline bound by the host copies, bench/results/h100-2026-11-27-vk-batch), so a copy of 4 MiB
// or more is split into pieces that up to KILN_COPY_THREADS threads copy at once (default: half
// the hardware threads, at most 8; 1: one thread), the calling thread among them. The helpers are
// started at the first large copy and kept; a copy that finds them busy with another caller's
// copies on its own rather than waiting.
#pragma once

#include <cstddef>

namespace kiln::support {

void copy_bytes(void* dst, const void* src, size_t n);

// The threads a large copy uses (KILN_COPY_THREADS, or the default above).
int copy_threads();

}  // namespace kiln::support

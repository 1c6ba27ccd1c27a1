// Process-wide counters that tests and benchmarks read.
#pragma once

#include <cstdint>
#include <string>

namespace kiln {

struct Stats {
  int64_t graphs_realized = 0;        // realize() calls that ran a graph
  int64_t executables_built = 0;      // graphs compiled into an executable (cache misses)
  int64_t executable_cache_hits = 0;  // graphs served from the in-memory executable cache
  int64_t kernels_compiled = 0;       // kernels turned into device code by a compiler
  int64_t kernel_disk_cache_hits = 0; // kernels loaded from the on-disk binary cache
  int64_t kernels_reused = 0;         // kernels whose binary an earlier size of a symbolic dimension made (kiln::Dim)
  int64_t kernels_launched = 0;       // kernel launches (dispatches) executed
  int64_t bytes_allocated = 0;        // device bytes allocated (buffers and arenas)
  int64_t executables_evicted = 0;    // executables dropped from the cache to stay in its budget
  int64_t executable_cache_bytes = 0; // device bytes the cached executables hold now (not reset)
  int64_t kernels_autotuned = 0;      // kernels whose code variants were timed on the device (KILN_AUTOTUNE)
  int64_t autotune_cache_hits = 0;    // kernels given a variant an earlier tuning kept on disk
  // A symbolic dimension's new size taken by the executable of an earlier size, resized in place
  // (CUDA: the instantiated graph's kernel nodes updated; kiln::Dim).
  int64_t executables_resized = 0;
  // Device memory blocks buffers are placed in (Vulkan: one VkDeviceMemory holds many buffers),
  // now (not reset): how many, their bytes, and the bytes buffers use in them (the rest is free
  // space or alignment: 1 - used / bytes is the fragmentation).
  int64_t memory_blocks = 0;
  int64_t memory_block_bytes = 0;
  int64_t memory_block_used_bytes = 0;
  // Device communicators (NCCL) alive now (not reset): one per process group and GPU that ran
  // collectives, released once the group's last handle and executables are gone.
  int64_t device_communicators = 0;
  std::string to_string() const;
};

Stats stats();
void reset_stats();

// The in-memory executable cache keeps compiled graphs for replay. It holds at most `bytes` of
// device memory (each executable's intermediate arena, at least 64 KiB each); beyond it the least
// recently used executables are dropped and, once nothing else holds them, free their memory. An
// executable larger than the whole budget runs without being cached (KILN_DEBUG=1 says so).
// Default: $KILN_CACHE_BYTES (suffixes K, M, G), else 4 GiB. Lowering it evicts at once.
void set_executable_cache_budget(int64_t bytes);
int64_t executable_cache_budget();

}  // namespace kiln

// Process-wide counters behind kiln::stats().
#pragma once

#include <atomic>
#include <cstdint>

namespace kiln::runtime {

struct Counters {
  std::atomic<int64_t> graphs_realized{0};
  std::atomic<int64_t> executables_built{0};
  std::atomic<int64_t> executable_cache_hits{0};
  std::atomic<int64_t> kernels_compiled{0};
  std::atomic<int64_t> kernel_disk_cache_hits{0};
  std::atomic<int64_t> kernels_reused{0};
  std::atomic<int64_t> kernels_launched{0};
  std::atomic<int64_t> bytes_allocated{0};
  std::atomic<int64_t> executables_evicted{0};
  std::atomic<int64_t> kernels_autotuned{0};
  std::atomic<int64_t> autotune_cache_hits{0};
  std::atomic<int64_t> executables_resized{0};
  // Gauges (not reset): device memory blocks that sub-allocating backends hold (Vulkan), their
  // bytes, and the bytes of the buffers placed in them.
  std::atomic<int64_t> memory_blocks{0};
  std::atomic<int64_t> memory_block_bytes{0};
  std::atomic<int64_t> memory_block_used_bytes{0};
  // Device communicators (NCCL) alive: one per process group and GPU, released with the group.
  std::atomic<int64_t> device_communicators{0};
};

Counters& counters();

}  // namespace kiln::runtime

// Device memory for one CUDA stream: cuMemAlloc'd blocks, recycled in stream order.
//
// Every use of device memory (kernels, uploads) goes to the device's one stream, so a block
// released here can be handed out again at once: any later use is queued behind the earlier
// ones. Recycling keeps cuMemAlloc/cuMemFree (which may synchronize the device) out of the
// per-run path, where the engine allocates fresh output buffers on every run.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <map>
#include <mutex>

#include "absl/status/statusor.h"

namespace kiln::runtime::cuda {

class MemoryPool {
 public:
  explicit MemoryPool(CUstream stream) : stream_(stream) {}
  MemoryPool(const MemoryPool&) = delete;
  MemoryPool& operator=(const MemoryPool&) = delete;

  // A block of at least `bytes` (> 0); *size receives the size to pass back to release().
  // Out of device memory: the cached blocks are freed and the allocation tried once more, then
  // ResourceExhausted.
  absl::StatusOr<CUdeviceptr> allocate(int64_t bytes, int64_t* size);
  void release(CUdeviceptr p, int64_t size);
  // Waits for the stream, then frees every cached block.
  void trim();

  int64_t cached_bytes() const;
  // The size class of a request: powers of two up to 1 MiB, then multiples of 2 MiB.
  static int64_t size_class(int64_t bytes);

 private:
  void trim_locked();

  CUstream stream_;
  mutable std::mutex mu_;
  std::multimap<int64_t, CUdeviceptr> free_;  // size class -> block
  int64_t cached_ = 0;
};

}  // namespace kiln::runtime::cuda

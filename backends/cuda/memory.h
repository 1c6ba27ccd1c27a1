// Device memory of the CUDA backend: the stream-ordered pool every allocation comes from, and the
// Buffer (runtime/device.h) that holds one block of it.
//
// Every use of device memory (kernels, uploads) goes to the device's one stream, so a block
// released to the pool can be handed out again at once: any later use is queued behind the
// earlier ones. Recycling keeps cuMemAlloc/cuMemFree (which may synchronize the device) out of
// the per-run path, where the JIT allocates fresh output buffers on every run.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "absl/status/statusor.h"
#include "runtime/device.h"

namespace kiln::runtime::cuda {

class Event;  // context.h

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

// One block of the pool, returned to it when the Buffer goes (a run still using it is queued
// before any later use of the block, on the same stream).
class CudaBuffer : public Buffer {
 public:
  CudaBuffer(Device* d, int64_t bytes, CUdeviceptr p, int64_t size, MemoryPool* pool)
      : Buffer(d, bytes), ptr_(p), size_(size), pool_(pool) {}
  ~CudaBuffer() override {
    if (ptr_) pool_->release(ptr_, size_);
  }
  CUdeviceptr ptr() const { return ptr_; }

  // The event recorded after the last work that wrote this buffer (an upload or a run); null
  // when nothing did. kiln writes a buffer once, before anyone else holds it, so this is set
  // before it is shared and only read afterwards (by download).
  std::shared_ptr<Event> writer;

 private:
  CUdeviceptr ptr_;
  int64_t size_;
  MemoryPool* pool_;
};

}  // namespace kiln::runtime::cuda

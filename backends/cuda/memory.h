// Device memory of the CUDA backend: the stream-ordered pool every allocation comes from, and the
// Buffer (runtime/device.h) that holds one block of it.
//
// Kernels run on the device's compute stream and uploads on its copy stream (context.h). A block
// released to the pool is handed out again at once, and stays safe: it remembers the compute
// submission that was last queued when it came back (its `seq`), so an upload into it on the copy
// stream first waits for that submission (Context::copy_waits_for_compute), and a buffer whose
// upload no run has waited for makes the compute stream wait for that upload before its block
// goes back. Recycling keeps cuMemAlloc/cuMemFree (which may synchronize the device) out of the
// per-run path, where the JIT allocates fresh output buffers on every run.
#pragma once

#include <cuda.h>

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>

#include "absl/status/statusor.h"
#include "backends/cuda/nccl.h"
#include "runtime/device.h"

namespace kiln::runtime::cuda {

class Event;  // context.h

class MemoryPool {
 public:
  // `compute_seq` counts the submissions on the compute stream (Context::tick).
  MemoryPool(CUstream compute, CUstream copy, const std::atomic<uint64_t>* compute_seq)
      : stream_(compute), copy_stream_(copy), compute_seq_(compute_seq) {}
  MemoryPool(const MemoryPool&) = delete;
  MemoryPool& operator=(const MemoryPool&) = delete;

  // A block of at least `bytes` (> 0); *size receives the size to pass back to release(), *seq
  // (when given) the compute submission its previous user may still be in (0: a fresh block).
  // Out of device memory: the cached blocks are freed and the allocation tried once more, then
  // ResourceExhausted.
  absl::StatusOr<CUdeviceptr> allocate(int64_t bytes, int64_t* size, uint64_t* seq = nullptr);
  void release(CUdeviceptr p, int64_t size);
  // Waits for both streams, then frees every cached block.
  void trim();

  int64_t cached_bytes() const;
  CUstream compute_stream() const { return stream_; }
  // The size class of a request: powers of two up to 1 MiB, then multiples of 2 MiB.
  static int64_t size_class(int64_t bytes);

 private:
  void trim_locked();

  struct Block {
    CUdeviceptr ptr;
    uint64_t seq;  // compute submissions queued when it was released
  };
  CUstream stream_, copy_stream_;
  const std::atomic<uint64_t>* compute_seq_;
  mutable std::mutex mu_;
  std::multimap<int64_t, Block> free_;  // size class -> block
  int64_t cached_ = 0;
};

// One block of the pool, returned to it when the Buffer goes (a run still using it is queued
// before any later use of the block, on the same stream).
class CudaBuffer : public Buffer {
 public:
  CudaBuffer(Device* d, int64_t bytes, CUdeviceptr p, int64_t size, MemoryPool* pool, uint64_t recycled_seq = 0)
      : Buffer(d, bytes), ptr_(p), size_(size), pool_(pool), recycled_seq_(recycled_seq) {}
  ~CudaBuffer() override;
  CUdeviceptr ptr() const { return ptr_; }
  // The compute submission the block's previous user may still be in (0: a fresh block).
  uint64_t recycled_seq() const { return recycled_seq_; }

  // The event recorded after the last work that wrote this buffer (an upload or a run); null
  // when nothing did. kiln writes a buffer once, before anyone else holds it, so this is set
  // before it is shared and only read afterwards (by download).
  std::shared_ptr<Event> writer;
  // Set by an upload (it ran on the copy stream): the compute stream waits for it once, at the
  // first run that reads the buffer (make_compute_wait), or when the buffer goes.
  std::shared_ptr<Event> upload;
  std::atomic<bool> compute_waited{false};
  // Set when the run that wrote this buffer had collectives (nccl.h): a download, or a run
  // reading it, reports its failure instead of using the lost values.
  std::shared_ptr<CollectiveOutcome> collectives;
  // Makes the compute stream wait for this buffer's upload, once.
  absl::Status make_compute_wait(CUstream compute);

 private:
  CUdeviceptr ptr_;
  int64_t size_;
  MemoryPool* pool_;
  uint64_t recycled_seq_;
};

}  // namespace kiln::runtime::cuda

// The per-device state the CUDA backend's pieces share: context, stream, memory, events, and the
// Buffer type.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "backends/cuda/memory_pool.h"
#include "runtime/device.h"

namespace kiln::runtime::cuda {

// A CUDA event (no timing). Re-recording is allowed: a wait then covers the latest record,
// which on the device's single stream also covers every earlier one.
class Event {
 public:
  static absl::StatusOr<std::shared_ptr<Event>> create();
  explicit Event(CUevent e) : e_(e) {}
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  absl::Status record(CUstream s) const;
  absl::Status wait() const;

 private:
  CUevent e_;
};

// One device: its primary context and the stream all of kiln's work for it goes to. Lives as
// long as the process (buffers and executables may outlive the Device object at exit).
struct Context {
  CUdevice device = 0;
  CUcontext ctx = nullptr;
  CUstream stream = nullptr;
  std::unique_ptr<MemoryPool> pool;
  std::shared_ptr<Event> upload_done;  // recorded after each upload
  int cc = 0;                          // compute capability, 10 * major + minor
  int64_t shared_optin = 0;            // opt-in shared memory per block
  int max_grid[3] = {0, 0, 0};
  // Binds the context to the calling thread (cheap; needed once per thread, done per call).
  absl::Status make_current() const;
};

// The Context of `d` when it is the CUDA device, else nullptr (tests build executables directly).
Context* context_of(Device* d);

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

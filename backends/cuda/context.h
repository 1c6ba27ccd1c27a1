// The per-GPU state the CUDA backend's pieces share: the primary context, the one stream all of
// kiln's work goes to, the memory pool, the device limits a load checks kernels against, and the
// event type that orders downloads after the work that wrote a buffer.
//
// The Device (device.h) creates one Context per GPU and never frees it: buffers and executables
// may be destroyed after the Device at process exit, and they still release into its pool.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <memory>

#include "absl/status/statusor.h"
#include "backends/cuda/memory.h"
#include "support/trace.h"

namespace kiln::runtime::cuda {

// A CUDA event (timing only when asked: profiles). Re-recording is allowed: a wait then covers the latest record,
// which on the device's single stream also covers every earlier one.
class Event {
 public:
  static absl::StatusOr<std::shared_ptr<Event>> create(bool timing = false);
  explicit Event(CUevent e) : e_(e) {}
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  absl::Status record(CUstream s) const;
  absl::Status wait() const;
  // Milliseconds from `start` to this event; both created with timing, recorded and complete.
  absl::StatusOr<double> elapsed_ms(const Event& start) const;

 private:
  CUevent e_;
};

// One device: its primary context and the stream all of kiln's work for it goes to. Lives as
// long as the process.
struct Context {
  CUdevice device = 0;
  CUcontext ctx = nullptr;
  CUstream stream = nullptr;
  std::unique_ptr<MemoryPool> pool;
  std::shared_ptr<Event> upload_done;  // recorded after each upload
  int cc = 0;                          // compute capability, 10 * major + minor
  int64_t shared_optin = 0;            // opt-in shared memory per block
  int max_grid[3] = {0, 0, 0};
  support::Peaks peaks;                // for profiles (target.h: cuda_peaks)
  // Binds the context to the calling thread (cheap; needed once per thread, done per call).
  absl::Status make_current() const;
};

}  // namespace kiln::runtime::cuda

// The per-GPU state the CUDA backend's pieces share: the primary context, the compute stream
// (kernels) and the copy stream (uploads, downloads) with the page-locked staging ring between
// the host and the copy stream, the numbered compute ticks that let the two streams share
// recycled memory safely (memory.h), the memory pool, the device limits a load checks kernels
// against, and the event type that orders work after the work that wrote a buffer.
//
// The Device (device.h) creates one Context per GPU and never frees it: buffers and executables
// may be destroyed after the Device at process exit, and they still release into its pool.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <atomic>
#include <memory>
#include <mutex>
#include <vector>

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
  // Whether the work before its latest record has completed (cuEventQuery; no waiting).
  bool complete() const;
  // Makes `stream` wait (on the device) for the latest record of this event.
  absl::Status make_wait(CUstream stream) const;
  // Milliseconds from `start` to this event; both created with timing, recorded and complete.
  absl::StatusOr<double> elapsed_ms(const Event& start) const;

 private:
  CUevent e_;
};

// Page-locked host buffers uploads are staged through, reused in turn: a chunk is copied into
// one on the host, then to the device on the copy stream; the host waits only when it comes back
// round to a buffer whose copy is still running.
class StagingRing {
 public:
  static constexpr int kBuffers = 4;
  static constexpr int64_t kBytes = int64_t(8) << 20;
  StagingRing() = default;
  StagingRing(const StagingRing&) = delete;
  StagingRing& operator=(const StagingRing&) = delete;
  ~StagingRing();
  // Copies `bytes` from `src` to `dst` on `stream` through the ring (the caller holds mu).
  absl::Status copy(CUdeviceptr dst, const void* src, int64_t bytes, CUstream stream);
  // The other way: chunks copied to the ring on `stream` while the host copies earlier ones out;
  // returns when every `dst` holds its bytes. Several pieces share a staging buffer where they
  // fit, so small downloads together cost one wait.
  struct Piece {
    void* dst;
    CUdeviceptr src;
    int64_t bytes;
  };
  absl::Status copy_back(const std::vector<Piece>& pieces, CUstream stream);
  std::mutex mu;

 private:
  struct Slot {
    void* host = nullptr;
    std::shared_ptr<Event> done;
  };
  absl::Status ensure(Slot& s);

  Slot slots_[kBuffers];
  int next_ = 0;
};

// One device: its primary context, the compute stream every kernel goes to and the copy stream
// uploads go to. Lives as long as the process.
struct Context {
  CUdevice device = 0;
  CUcontext ctx = nullptr;
  CUstream stream = nullptr;       // kernels (and the synchronous downloads wait on its events)
  CUstream copy_stream = nullptr;  // uploads: they overlap the kernels queued before them
  std::unique_ptr<MemoryPool> pool;
  StagingRing staging;
  int cc = 0;                          // compute capability, 10 * major + minor
  int sms = 0;                         // multiprocessors
  int64_t shared_optin = 0;            // opt-in shared memory per block
  int max_grid[3] = {0, 0, 0};
  support::Peaks peaks;                // for profiles (target.h: cuda_peaks)
  // Binds the context to the calling thread (cheap; needed once per thread, done per call).
  absl::Status make_current() const;

  // Submissions to the compute stream are numbered 1, 2, ...: each run ends with tick(), which
  // records the next event of a ring of kTicks on the stream and returns it (the run's outputs
  // are written when it completes). compute_seq is the number of the latest.
  static constexpr int kTicks = 64;
  std::atomic<uint64_t> compute_seq{0};
  absl::StatusOr<std::shared_ptr<Event>> tick();
  // The copy stream waits until compute submission `seq` (0: none) has completed. A ring event
  // re-recorded since stands for a later submission: waiting for it is waiting longer, never less.
  absl::Status copy_waits_for_compute(uint64_t seq);

 private:
  std::mutex tick_mu_;
  std::vector<std::shared_ptr<Event>> ticks_;
};

}  // namespace kiln::runtime::cuda

// HIP device memory and events. A buffer is one hipMalloc allocation; hipFree waits for the
// device, so a buffer dropped while a kernel still reads it is released safely (at the price of
// a wait: a pool like CUDA's is the next step once this runs on hardware).
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "backends/hip/hip_api.h"
#include "runtime/device.h"

namespace kiln::runtime::hip {

// A recorded point on the device's stream.
class Event {
 public:
  static absl::StatusOr<std::shared_ptr<Event>> record(const HipApi& api, hipStream_t stream);
  ~Event();
  Event(const Event&) = delete;
  Event& operator=(const Event&) = delete;
  absl::Status wait() const;  // host waits until the work before it is done

 private:
  Event(const HipApi& api, hipEvent_t e) : api_(api), e_(e) {}
  const HipApi& api_;
  hipEvent_t e_;
};

class HipBuffer : public Buffer {
 public:
  HipBuffer(Device* d, const HipApi& api, int64_t bytes, void* p) : Buffer(d, bytes), api_(api), ptr_(p) {}
  ~HipBuffer() override;
  void* ptr() const { return ptr_; }
  // The event after the last work that wrote this buffer (a run); null when an upload did (an
  // upload is complete when it returns). Set before the buffer is shared, read by download.
  std::shared_ptr<Event> writer;

 private:
  const HipApi& api_;
  void* ptr_;
};

}  // namespace kiln::runtime::hip

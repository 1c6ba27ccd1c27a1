// HIP buffers and events (memory.h).
#include "backends/hip/memory.h"

namespace kiln::runtime::hip {

absl::StatusOr<std::shared_ptr<Event>> Event::record(const HipApi& api, hipStream_t stream) {
  hipEvent_t e = nullptr;
  if (absl::Status s = hip_check(api, api.hipEventCreateWithFlags(&e, hipEventDisableTiming), "hipEventCreateWithFlags");
      !s.ok())
    return s;
  std::shared_ptr<Event> out(new Event(api, e));
  if (absl::Status s = hip_check(api, api.hipEventRecord(e, stream), "hipEventRecord"); !s.ok()) return s;
  return out;
}

Event::~Event() { (void)api_.hipEventDestroy(e_); }

absl::Status Event::wait() const { return hip_check(api_, api_.hipEventSynchronize(e_), "hipEventSynchronize"); }

HipBuffer::~HipBuffer() {
  if (ptr_) (void)api_.hipFree(ptr_);
}

}  // namespace kiln::runtime::hip

// Events and the context binding of context.h.
#include "backends/cuda/context.h"

#include "backends/cuda/driver_api.h"

namespace kiln::runtime::cuda {

absl::StatusOr<std::shared_ptr<Event>> Event::create(bool timing) {
  CUevent e = nullptr;
  if (absl::Status s = cu_check(api().cuEventCreate(&e, timing ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING), "cuEventCreate");
      !s.ok())
    return s;
  return std::make_shared<Event>(e);
}

Event::~Event() {
  if (!process_exiting()) api().cuEventDestroy(e_);
}

absl::Status Event::record(CUstream s) const { return cu_check(api().cuEventRecord(e_, s), "cuEventRecord"); }

absl::Status Event::wait() const {
  return cu_check(api().cuEventSynchronize(e_), "waiting for the GPU (cuEventSynchronize)");
}

absl::StatusOr<double> Event::elapsed_ms(const Event& start) const {
  float ms = 0;
  if (absl::Status s = cu_check(api().cuEventElapsedTime(&ms, start.e_, e_), "cuEventElapsedTime"); !s.ok()) return s;
  return double(ms);
}

absl::Status Context::make_current() const { return cu_check(api().cuCtxSetCurrent(ctx), "cuCtxSetCurrent"); }

}  // namespace kiln::runtime::cuda

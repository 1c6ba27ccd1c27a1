#include "bench/gpu/gpu_timer.h"

#ifdef KILN_HAVE_CUDA
#include "backends/cuda/device.h"
#include "backends/cuda/driver_api.h"
#include "frontend/lazy.h"
#endif

namespace kiln::bench {

#ifdef KILN_HAVE_CUDA
namespace {

class CudaTimer : public GpuTimer {
 public:
  explicit CudaTimer(runtime::cuda::Context* ctx) : ctx_(ctx) {
    const auto& a = runtime::cuda::api();
    a.cuEventCreate(&start_, CU_EVENT_DEFAULT);
    a.cuEventCreate(&stop_, CU_EVENT_DEFAULT);
  }
  ~CudaTimer() override {
    runtime::cuda::api().cuEventDestroy(start_);
    runtime::cuda::api().cuEventDestroy(stop_);
  }
  void start() override { runtime::cuda::api().cuEventRecord(start_, ctx_->stream); }
  double stop_ms() override {
    const auto& a = runtime::cuda::api();
    a.cuEventRecord(stop_, ctx_->stream);
    a.cuEventSynchronize(stop_);
    float ms = 0;
    if (a.cuEventElapsedTime(&ms, start_, stop_) != CUDA_SUCCESS) return -1;
    return ms;
  }

 private:
  runtime::cuda::Context* ctx_;
  CUevent start_ = nullptr, stop_ = nullptr;
};

}  // namespace

std::unique_ptr<GpuTimer> GpuTimer::create(const Device& d) {
  runtime::cuda::Context* ctx = runtime::cuda::context_of(detail::impl_of(d));
  if (!ctx) return nullptr;
  return std::make_unique<CudaTimer>(ctx);
}
#else
std::unique_ptr<GpuTimer> GpuTimer::create(const Device&) { return nullptr; }
#endif

}  // namespace kiln::bench

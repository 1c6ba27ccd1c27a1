// GPU time of a span of kiln work on the CUDA device: CUDA events recorded on kiln's stream
// around it (so host gaps count only when the GPU waits for the host).
#pragma once

#include <memory>

#include "kiln/device.h"

namespace kiln::bench {

class GpuTimer {
 public:
  // nullptr when `d` is not the CUDA device (the caller then reports wall time only).
  static std::unique_ptr<GpuTimer> create(const Device& d);
  virtual ~GpuTimer() = default;
  virtual void start() = 0;
  // Milliseconds since start(); waits for the work queued before this call.
  virtual double stop_ms() = 0;
};

}  // namespace kiln::bench

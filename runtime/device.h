// The device interface every backend implements (runtime/cpu, runtime/vulkan, runtime/cuda, ...).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/program.h"
#include "runtime/target_info.h"

namespace kiln::runtime {

class Device;

// Device memory. Immutable once a realize has written it: kiln never writes a buffer that a
// tensor already holds, so buffers can be shared freely between tensors.
class Buffer {
 public:
  Buffer(Device* device, int64_t bytes) : device_(device), bytes_(bytes) {}
  virtual ~Buffer() = default;
  Device* device() const { return device_; }
  int64_t bytes() const { return bytes_; }

 private:
  Device* device_;
  int64_t bytes_;
};

// A compiled Program, replayable with new bindings.
class Executable {
 public:
  virtual ~Executable() = default;
  // inputs/outputs follow the Program's input and output positions. Work may still be in
  // flight when this returns; Device::download waits for it.
  virtual absl::Status run(const std::vector<Buffer*>& inputs, const std::vector<Buffer*>& outputs) = 0;
  // Kernels launched by one run().
  virtual int kernels_per_run() const = 0;
  // Generated source of each kernel, for dumps (may be empty).
  virtual std::vector<std::string> sources() const { return {}; }
};

class Device {
 public:
  virtual ~Device() = default;
  virtual std::string name() const = 0;
  virtual std::string description() const = 0;
  virtual const TargetInfo& target() const = 0;
  virtual absl::StatusOr<std::shared_ptr<Buffer>> alloc(int64_t bytes) = 0;
  virtual absl::Status upload(Buffer* dst, const void* src, int64_t bytes) = 0;
  // Waits for work that writes `src`, then copies to the host.
  virtual absl::Status download(Buffer* src, void* dst, int64_t bytes) = 0;
  virtual absl::StatusOr<std::unique_ptr<Executable>> compile(const ir::Program& program) = 0;
  virtual absl::Status synchronize() { return absl::OkStatus(); }
};

// Backends kiln was built with.
std::vector<std::string> known_device_names();
// The device singleton of a backend, created on first use; an error names why it is unavailable.
absl::StatusOr<Device*> get_device(const std::string& name);
// The best available device: CUDA, then a Vulkan GPU (never lavapipe), then the CPU.
Device* best_device();

}  // namespace kiln::runtime

// Devices by name: "cpu", "vulkan", "cuda", "hip", "metal".
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"

namespace kiln {

namespace runtime {
class Device;
}
namespace detail {
struct Access;  // the frontend's way in (frontend/lazy.h)
}

class Device {
 public:
  // The default device (see default_device()).
  Device();
  // Throws kiln::Error when the device is unknown or not available on this machine.
  explicit Device(const std::string& name);

  // Looks up a device by name; an unavailable device is an error status naming the reason.
  static absl::StatusOr<Device> get(const std::string& name);

  // The canonical name ("cpu", "vulkan", "cuda", ...).
  std::string name() const;
  // A human-readable description (e.g. the GPU's name).
  std::string description() const;

  // Waits until all work submitted to this device has finished (for timing; reading a result
  // waits by itself).
  void synchronize() const;

  bool operator==(const Device& o) const { return impl_ == o.impl_; }
  bool operator!=(const Device& o) const { return impl_ != o.impl_; }

 private:
  friend struct detail::Access;
  explicit Device(runtime::Device* impl) : impl_(impl) {}
  runtime::Device* impl_;
};

// Backend names kiln was built with, available or not.
std::vector<std::string> known_devices();
// Names of devices usable on this machine right now.
std::vector<std::string> available_devices();

// The device new tensors are created on. Initially: $KILN_DEVICE when set (an unavailable
// device there is reported once and the CPU is used), else the best available device.
Device default_device();
// Sets the default device; an error status when it is not available.
absl::Status set_default_device(const std::string& name);

}  // namespace kiln

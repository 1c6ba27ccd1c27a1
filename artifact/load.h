// Choosing and loading an artifact's section on a device: the first section of the device's
// backend that the device accepts (Device::load checks the target key, runtime/device.h) is
// loaded, sections made for the device's own target key before others (a CUDA device also
// accepts an older architecture's section through its PTX), and nothing is compiled. When none fits, a FailedPrecondition lists every section the
// artifact has (label and target key) and what the device needs, with the device's own reason.
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "artifact/artifact.h"
#include "runtime/device.h"

namespace kiln::artifact {

struct Loaded {
  const TargetSection* section = nullptr;
  std::unique_ptr<runtime::Executable> executable;
};

absl::StatusOr<Loaded> load(const Artifact& a, runtime::Device* device);

}  // namespace kiln::artifact

// Registers the HIP backend (runtime/registry.h): the device-free Compiler (compiler.h), which
// compiles for AMD GPUs without one (tests, kilnc --target hip:gfx90a), and the Device
// (device.h), which loads the HIP runtime by dlopen. A build without the HIP headers
// (libamdhip64-dev) has the compiler only; asking for its device says so. Rank 20: an AMD GPU is
// the default device where there is no CUDA GPU.
#include "backends/hip/compiler.h"
#include "backends/hip/profiles.h"
#include "runtime/registry.h"
#ifdef KILN_HIP_RUNTIME
#include "backends/hip/device.h"
#endif

namespace kiln::runtime::hip {
namespace {

absl::StatusOr<std::unique_ptr<Device>> create_device() {
#ifdef KILN_HIP_RUNTIME
  return HipDevice::create();
#else
  return absl::UnavailableError(
      "hip: this kiln build compiles for AMD GPUs (kilnc --target hip:gfx90a) but was built without the HIP headers "
      "(libamdhip64-dev), so it has no HIP runtime to run them");
#endif
}

KILN_REGISTER_BACKEND(Backend{"hip", 20, &create_device, &HipCompiler::create, &target_profile});

}  // namespace
}  // namespace kiln::runtime::hip

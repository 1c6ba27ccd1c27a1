// Registers the HIP backend (runtime/registry.h): the device-free Compiler (compiler.h), which
// compiles for AMD GPUs without one (tests, kilnc --target hip:gfx90a). The HIP runtime half
// (loading code objects, HIP graphs) is not built yet: asking for the device says so.
#include "backends/hip/compiler.h"
#include "backends/hip/profiles.h"
#include "runtime/registry.h"

namespace kiln::runtime::hip {
namespace {

absl::StatusOr<std::unique_ptr<Device>> create_device() {
  return absl::UnavailableError(
      "hip: this kiln build compiles for AMD GPUs (kilnc --target hip:gfx90a) but has no HIP runtime to run them yet");
}

KILN_REGISTER_BACKEND(Backend{"hip", 20, &create_device, &HipCompiler::create, &target_profile});

}  // namespace
}  // namespace kiln::runtime::hip

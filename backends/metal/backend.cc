// Registers the Metal backend (runtime/registry.h): the device-free Compiler (compiler.h), which
// writes MSL for Apple GPUs on any machine (tests, kilnc --target metal:m3-max), and the Device
// (device.h), which reaches Metal through the Objective-C runtime opened by dlopen, so the same
// build says on Linux why there is no Metal device. Rank 20: an Apple GPU is the default device
// where it is present.
#include "backends/metal/compiler.h"
#include "backends/metal/device.h"
#include "backends/metal/profiles.h"
#include "runtime/registry.h"

namespace kiln::runtime::metal {
namespace {

absl::StatusOr<std::unique_ptr<Device>> create_device() { return MetalDevice::create(); }

KILN_REGISTER_BACKEND(Backend{"metal", 20, &create_device, &MetalCompiler::create, &target_profile});

}  // namespace
}  // namespace kiln::runtime::metal

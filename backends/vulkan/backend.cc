// Registers the Vulkan backend (runtime/registry.h): default rank 10, below CUDA and above the
// CPU; a Vulkan device on the CPU (lavapipe) is emulated and so never the default.
#include "backends/vulkan/compiler.h"
#include "backends/vulkan/device.h"
#include "backends/vulkan/profiles.h"
#include "runtime/registry.h"

namespace kiln::runtime::vk {
namespace {

absl::StatusOr<std::unique_ptr<Device>> create_device() {
  auto d = VulkanDevice::create();
  if (!d.ok()) return d.status();
  return std::unique_ptr<Device>(std::move(*d));
}

absl::StatusOr<std::unique_ptr<Compiler>> create_compiler(const ir::TargetInfo& target) {
  auto c = VulkanCompiler::create(target);
  if (!c.ok()) return c.status();
  return std::unique_ptr<Compiler>(std::move(*c));
}

KILN_REGISTER_BACKEND(Backend{"vulkan", 10, create_device, create_compiler, &target_profile});

}  // namespace
}  // namespace kiln::runtime::vk

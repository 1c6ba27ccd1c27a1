// The Vulkan backend's entry points: the device factory the registry calls, and hooks for tests
// and tools that need to look inside a Vulkan device.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "codegen/c_family/gpu_program.h"
#include "ir/program.h"
#include "runtime/device.h"

namespace kiln::runtime {

// A new Vulkan device (the registry keeps one as the "vulkan" singleton). Reads
// KILN_VULKAN_DEVICE (physical device index), KILN_VULKAN_VALIDATION=1 (Khronos validation layer
// with synchronization validation; messages are recorded), KILN_CACHE_DIR. Unavailable with the
// reason when there is no loader, driver or suitable device.
absl::StatusOr<std::unique_ptr<Device>> create_vulkan_device();
// Whether `d` is a Vulkan device on the CPU (lavapipe): never chosen as the default device.
bool vulkan_device_is_cpu(Device* d);

namespace vk {

// Validation-layer warnings and errors recorded so far (empty without KILN_VULKAN_VALIDATION=1).
std::vector<std::string> validation_messages(Device* d);
void clear_validation_messages(Device* d);
// Builds an executable from an already rendered program (tests use hand-written GLSL).
absl::StatusOr<std::unique_ptr<Executable>> compile_rendered(Device* d, const ir::Program& p,
                                                             const codegen::gpu::RenderedProgram& rendered);
// The disk cache file a kernel source compiles to ("" without a disk cache).
std::string kernel_cache_path(Device* d, const std::string& glsl);

}  // namespace vk
}  // namespace kiln::runtime

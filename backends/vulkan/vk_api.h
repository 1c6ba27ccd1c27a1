// The Vulkan entry points kiln uses, loaded at run time from the loader (libvulkan.so.1) with
// dlopen, so a machine without Vulkan gets an error status instead of a binary that will not
// start. Every function is a pointer in namespace kiln::runtime::vk with its Vulkan name.
#pragma once

#include <functional>
#include <mutex>

#ifndef VK_NO_PROTOTYPES
#define VK_NO_PROTOTYPES
#endif
#include <vulkan/vulkan.h>

#include "absl/status/status.h"

// Commands callable before an instance exists.
#define KILN_VK_GLOBAL_FUNCTIONS(X)         \
  X(vkCreateInstance)                       \
  X(vkEnumerateInstanceVersion)             \
  X(vkEnumerateInstanceLayerProperties)     \
  X(vkEnumerateInstanceExtensionProperties)

// Instance and device commands, resolved through vkGetInstanceProcAddr(instance): the loader
// returns trampolines that dispatch on the object, so they serve every instance and device.
#define KILN_VK_INSTANCE_FUNCTIONS(X)       \
  X(vkDestroyInstance)                      \
  X(vkEnumeratePhysicalDevices)             \
  X(vkGetPhysicalDeviceProperties)          \
  X(vkGetPhysicalDeviceProperties2)         \
  X(vkGetPhysicalDeviceFeatures2)           \
  X(vkGetPhysicalDeviceMemoryProperties)    \
  X(vkGetPhysicalDeviceQueueFamilyProperties) \
  X(vkEnumerateDeviceExtensionProperties)   \
  X(vkCreateDevice)                         \
  X(vkDestroyDevice)                        \
  X(vkGetDeviceQueue)                       \
  X(vkDeviceWaitIdle)                       \
  X(vkCreateBuffer)                         \
  X(vkDestroyBuffer)                        \
  X(vkGetBufferMemoryRequirements)          \
  X(vkAllocateMemory)                       \
  X(vkFreeMemory)                           \
  X(vkBindBufferMemory)                     \
  X(vkMapMemory)                            \
  X(vkUnmapMemory)                          \
  X(vkGetBufferDeviceAddress)               \
  X(vkCreateShaderModule)                   \
  X(vkDestroyShaderModule)                  \
  X(vkCreatePipelineLayout)                 \
  X(vkDestroyPipelineLayout)                \
  X(vkCreateComputePipelines)               \
  X(vkDestroyPipeline)                      \
  X(vkCreatePipelineCache)                  \
  X(vkDestroyPipelineCache)                 \
  X(vkGetPipelineCacheData)                 \
  X(vkCreateDescriptorSetLayout)            \
  X(vkDestroyDescriptorSetLayout)           \
  X(vkCreateDescriptorPool)                 \
  X(vkDestroyDescriptorPool)                \
  X(vkAllocateDescriptorSets)               \
  X(vkUpdateDescriptorSets)                 \
  X(vkCreateCommandPool)                    \
  X(vkDestroyCommandPool)                   \
  X(vkAllocateCommandBuffers)               \
  X(vkFreeCommandBuffers)                   \
  X(vkBeginCommandBuffer)                   \
  X(vkEndCommandBuffer)                     \
  X(vkCmdBindPipeline)                      \
  X(vkCmdBindDescriptorSets)                \
  X(vkCmdPushConstants)                     \
  X(vkCmdDispatch)                          \
  X(vkCmdPipelineBarrier)                   \
  X(vkCmdCopyBuffer)                        \
  X(vkCmdFillBuffer)                        \
  X(vkCmdWriteTimestamp)                    \
  X(vkCmdResetQueryPool)                    \
  X(vkCreateQueryPool)                      \
  X(vkDestroyQueryPool)                     \
  X(vkGetQueryPoolResults)                  \
  X(vkCreateSemaphore)                      \
  X(vkDestroySemaphore)                     \
  X(vkWaitSemaphores)                       \
  X(vkSignalSemaphore)                      \
  X(vkGetSemaphoreCounterValue)             \
  X(vkQueueSubmit)

namespace kiln::runtime::vk {

// A zeroed Vulkan info struct with its sType set.
template <class T>
T vk_struct(VkStructureType type) {
  T v{};
  v.sType = type;
  return v;
}

#define KILN_VK_DECLARE(name) extern PFN_##name name;
extern PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr;
KILN_VK_GLOBAL_FUNCTIONS(KILN_VK_DECLARE)
KILN_VK_INSTANCE_FUNCTIONS(KILN_VK_DECLARE)
#undef KILN_VK_DECLARE
// Optional (an extension's command): null where the loader or no driver provides it.
extern PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV vkGetPhysicalDeviceCooperativeMatrixPropertiesNV;
extern PFN_vkCmdBeginConditionalRenderingEXT vkCmdBeginConditionalRenderingEXT;
extern PFN_vkCmdEndConditionalRenderingEXT vkCmdEndConditionalRenderingEXT;

// Opens libvulkan.so.1 ($KILN_VULKAN_LOADER if set) and resolves the global commands, once per
// process. Unavailable "vulkan: no Vulkan loader (libvulkan.so.1): ..." when it cannot be opened.
absl::Status load_loader();
// Resolves the instance and device commands through `instance` (once per process).
absl::Status load_instance_functions(VkInstance instance);

// True once exit() has begun. Destructors then leave Vulkan objects to the OS: the layers and the
// driver were loaded after kiln's statics were built, so they are finalized first, and calling
// into them from a static destructor crashes (seen with the validation layer on NVIDIA).
bool process_exiting();
// Registers the hook that sets process_exiting(); call once the loader has loaded the driver.
// The hook also waits until every tracked device is idle: a driver may still be executing queued
// work on its own threads (lavapipe compiles shaders there), and the driver's finalizers, which
// run right after the hook, would pull its state from under them.
void watch_process_exit();
// Registers the hook again, so it runs before the finalizers of everything the driver built so
// far. A CPU driver (lavapipe) compiles a pipeline with LLVM on its queue thread at the first
// dispatch and builds LLVM's function-local statics there; a hook registered before them would
// drain the device after those statics were destroyed (hangs and crashes at exit).
void rearm_exit_hook();
// Devices the exit hook drains; `queue_mu` (and `copy_mu`, a second queue's, when not null) guard
// the device's queues and are held while waiting. `before` (when set) runs first, with no lock
// held: it stops the device's own threads.
void track_device(VkDevice device, std::mutex* queue_mu, std::mutex* copy_mu = nullptr, std::function<void()> before = {});
void untrack_device(VkDevice device);

}  // namespace kiln::runtime::vk

// What a Vulkan device is as a compile target: the ir::TargetInfo read off a physical device,
// and target_key(), the line a Compiler stamps on every CompiledProgram and a device compares
// with its own at load.
//
// Both halves use target_key, so it lives here, between them: it names everything that decides
// whether SPIR-V made for one device is valid on another (the SPIR-V version, scalar block layout,
// the float-controls execution modes, the f16/i8/f64/i64 features, the subgroup size the kernels
// are rendered for, the workgroup and shared-memory sizes they may use), and nothing that only
// tunes performance (multiprocessors, vector width), so two GPUs that agree on those share
// compiled programs and cached SPIR-V.
#pragma once

#include <string>

#include "backends/vulkan/select_device.h"
#include "backends/vulkan/vk_api.h"
#include "ir/target_info.h"

namespace kiln::runtime::vk {

// Everything read from one physical device.
struct Probe {
  VkPhysicalDeviceProperties props{};
  VkPhysicalDeviceVulkan11Properties p11 = vk_struct<VkPhysicalDeviceVulkan11Properties>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_PROPERTIES);
  VkPhysicalDeviceVulkan12Properties p12 = vk_struct<VkPhysicalDeviceVulkan12Properties>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_PROPERTIES);
  VkPhysicalDeviceVulkan13Properties p13 = vk_struct<VkPhysicalDeviceVulkan13Properties>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_PROPERTIES);
  VkPhysicalDeviceShaderSMBuiltinsPropertiesNV sm = vk_struct<VkPhysicalDeviceShaderSMBuiltinsPropertiesNV>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_SM_BUILTINS_PROPERTIES_NV);
  VkPhysicalDeviceShaderCorePropertiesAMD amd = vk_struct<VkPhysicalDeviceShaderCorePropertiesAMD>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_SHADER_CORE_PROPERTIES_AMD);
  VkPhysicalDeviceFeatures2 f = vk_struct<VkPhysicalDeviceFeatures2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2);
  VkPhysicalDeviceVulkan11Features f11 = vk_struct<VkPhysicalDeviceVulkan11Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES);
  VkPhysicalDeviceVulkan12Features f12 = vk_struct<VkPhysicalDeviceVulkan12Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES);
  VkPhysicalDeviceVulkan13Features f13 = vk_struct<VkPhysicalDeviceVulkan13Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES);
  VkPhysicalDeviceCooperativeMatrixFeaturesNV coop = vk_struct<VkPhysicalDeviceCooperativeMatrixFeaturesNV>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV);
  VkPhysicalDeviceConditionalRenderingFeaturesEXT cond = vk_struct<VkPhysicalDeviceConditionalRenderingFeaturesEXT>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_CONDITIONAL_RENDERING_FEATURES_EXT);
  // The cooperative-matrix shape read_target offers (f16 x f16 + f32 -> f32, subgroup scope;
  // {0, 0, 0} when the device has none): VK_NV_cooperative_matrix's list, 16x16x16 preferred.
  int coop_shape[3] = {0, 0, 0};
  bool v13 = false, nv_sm = false, amd_core = false, nv_coop = false;
  bool ext_cond = false;  // VK_EXT_conditional_rendering (its feature in `cond`)
  int compute_family = -1;
  int transfer_family = -1;  // a family of copy engines only (TRANSFER, no GRAPHICS/COMPUTE); -1: none
  uint32_t timestamp_bits = 0;
};

// Reads `pd`'s properties, features and queue families (the 1.1+ structures only from a Vulkan
// 1.2 device: older ones are rejected by the caller).
void probe(VkPhysicalDevice pd, Probe* p);

// Whether compute shaders have the subgroup operations kiln's reductions use (basic, arithmetic,
// shuffle); without them kernels are rendered for subgroup_size 1 (shared memory only).
bool has_subgroup_operations(const Probe& p);

// The target of the device `p` describes, opened with the optional features `f` enabled.
ir::TargetInfo read_target(const Probe& p, const OptionalFeatures& f);

// The compatibility key of a Vulkan target (see the top of this file): readable, so a mismatch
// at load can be reported as it is.
std::string target_key(const ir::TargetInfo& t);

}  // namespace kiln::runtime::vk

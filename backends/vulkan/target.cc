#include "backends/vulkan/target.h"

#include <algorithm>
#include <cstring>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"

namespace kiln::runtime::vk {
namespace {

bool has_extension(VkPhysicalDevice pd, const char* name) {
  uint32_t n = 0;
  vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> ext(n);
  vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, ext.data());
  for (const auto& e : ext)
    if (std::strcmp(e.extensionName, name) == 0) return true;
  return false;
}

// Multiprocessors where the driver says; otherwise an estimate by device type.
int multiprocessors(const Probe& p) {
  if (p.nv_sm && p.sm.shaderSMCount) return int(p.sm.shaderSMCount);
  if (p.amd_core && p.amd.computeUnitsPerShaderArray)
    return int(p.amd.shaderEngineCount * p.amd.shaderArraysPerEngineCount * p.amd.computeUnitsPerShaderArray);
  switch (p.props.deviceType) {
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return int(std::max(1u, std::thread::hardware_concurrency()));
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 64;
    default: return 16;
  }
}

// The f16 x f16 + f32 -> f32 subgroup-scope shape to use from the device's list (16x16x16 where
// offered: the fewest loads per multiply-add), into `shape`.
void read_coop_shapes(VkPhysicalDevice pd, int shape[3]) {
  if (!vkGetPhysicalDeviceCooperativeMatrixPropertiesNV) return;
  uint32_t n = 0;
  if (vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(pd, &n, nullptr) != VK_SUCCESS || n == 0) return;
  std::vector<VkCooperativeMatrixPropertiesNV> props(
      n, vk_struct<VkCooperativeMatrixPropertiesNV>(VK_STRUCTURE_TYPE_COOPERATIVE_MATRIX_PROPERTIES_NV));
  if (vkGetPhysicalDeviceCooperativeMatrixPropertiesNV(pd, &n, props.data()) != VK_SUCCESS) return;
  for (const auto& c : props) {
    if (c.scope != VK_SCOPE_SUBGROUP_NV || c.AType != VK_COMPONENT_TYPE_FLOAT16_NV ||
        c.BType != VK_COMPONENT_TYPE_FLOAT16_NV || c.CType != VK_COMPONENT_TYPE_FLOAT32_NV ||
        c.DType != VK_COMPONENT_TYPE_FLOAT32_NV)
      continue;
    // Shapes the kernel can tile: rows 16, columns 8 or 16, depth 16 (codegen contraction_coop).
    if (c.MSize != 16 || (c.NSize != 16 && c.NSize != 8) || c.KSize != 16) continue;
    if (shape[0] == 0 || c.NSize > uint32_t(shape[1])) {
      shape[0] = int(c.MSize);
      shape[1] = int(c.NSize);
      shape[2] = int(c.KSize);
    }
  }
}

}  // namespace

void probe(VkPhysicalDevice pd, Probe* p) {
  vkGetPhysicalDeviceProperties(pd, &p->props);
  if (p->props.apiVersion < VK_API_VERSION_1_2) return;
  p->v13 = p->props.apiVersion >= VK_API_VERSION_1_3;
  p->nv_sm = has_extension(pd, VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME);
  p->amd_core = has_extension(pd, VK_AMD_SHADER_CORE_PROPERTIES_EXTENSION_NAME);
  p->nv_coop = has_extension(pd, VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
  p->ext_cond = has_extension(pd, VK_EXT_CONDITIONAL_RENDERING_EXTENSION_NAME);
  VkPhysicalDeviceProperties2 props2 = vk_struct<VkPhysicalDeviceProperties2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_PROPERTIES_2);
  void** next = &props2.pNext;
  *next = &p->p11, next = &p->p11.pNext;
  *next = &p->p12, next = &p->p12.pNext;
  if (p->v13) *next = &p->p13, next = &p->p13.pNext;
  if (p->nv_sm) *next = &p->sm, next = &p->sm.pNext;
  if (p->amd_core) *next = &p->amd, next = &p->amd.pNext;
  vkGetPhysicalDeviceProperties2(pd, &props2);
  p->f.pNext = &p->f11;
  p->f11.pNext = &p->f12;
  if (p->v13) p->f12.pNext = &p->f13;
  void** fnext = p->v13 ? &p->f13.pNext : &p->f12.pNext;
  if (p->nv_coop) *fnext = &p->coop, fnext = &p->coop.pNext;
  if (p->ext_cond) *fnext = &p->cond, fnext = &p->cond.pNext;
  vkGetPhysicalDeviceFeatures2(pd, &p->f);
  if (p->nv_coop && p->coop.cooperativeMatrix) read_coop_shapes(pd, p->coop_shape);
  uint32_t nq = 0;
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, nullptr);
  std::vector<VkQueueFamilyProperties> q(nq);
  vkGetPhysicalDeviceQueueFamilyProperties(pd, &nq, q.data());
  // Prefer a compute-only family (asynchronous compute), else any family with compute.
  for (int pass = 0; pass < 2 && p->compute_family < 0; ++pass) {
    for (uint32_t i = 0; i < nq; ++i) {
      bool compute = q[i].queueFlags & VK_QUEUE_COMPUTE_BIT;
      bool graphics = q[i].queueFlags & VK_QUEUE_GRAPHICS_BIT;
      if (compute && (pass == 1 || !graphics)) {
        p->compute_family = int(i);
        p->timestamp_bits = q[i].timestampValidBits;
        break;
      }
    }
  }
  // A family of copy engines (NVIDIA has one): uploads run there, beside the compute queue.
  for (uint32_t i = 0; i < nq; ++i) {
    const VkQueueFlags f = q[i].queueFlags & ~VkQueueFlags(VK_QUEUE_SPARSE_BINDING_BIT | VK_QUEUE_PROTECTED_BIT);
    if (f == VK_QUEUE_TRANSFER_BIT && q[i].queueCount > 0 && int(i) != p->compute_family) {
      p->transfer_family = int(i);
      break;
    }
  }
}

bool has_subgroup_operations(const Probe& p) {
  const VkSubgroupFeatureFlags need =
      VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_ARITHMETIC_BIT | VK_SUBGROUP_FEATURE_SHUFFLE_BIT;
  return (p.p11.subgroupSupportedStages & VK_SHADER_STAGE_COMPUTE_BIT) && (p.p11.subgroupSupportedOperations & need) == need;
}

ir::TargetInfo read_target(const Probe& p, const OptionalFeatures& f) {
  ir::TargetInfo t;
  t.name = "vulkan";
  t.is_gpu = p.props.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU;
  t.parallelism = multiprocessors(p);
  const VkPhysicalDeviceLimits& l = p.props.limits;
  t.max_workgroup = int(std::min(l.maxComputeWorkGroupInvocations, l.maxComputeWorkGroupSize[0]));
  t.shared_memory = l.maxComputeSharedMemorySize;
  t.subgroup_size = has_subgroup_operations(p) ? int(p.p11.subgroupSize) : 1;
  t.vector_width = 4;
  t.max_fused_row = 8192;
  VkDeviceSize max_allocation = p.p11.maxMemoryAllocationSize;
  if (p.v13 && p.p13.maxBufferSize) max_allocation = std::min<VkDeviceSize>(max_allocation, p.p13.maxBufferSize);
  t.max_buffer_range = int64_t(max_allocation);
  t.has_f16 = f.float16 && f.storage16;
  t.has_i8 = f.int8 && f.storage8;
  t.has_f64 = f.float64;
  t.has_i64 = true;  // shaderInt64 is required
  t.spirv_1_6 = p.v13;
  t.scalar_layout = f.scalar_layout;
  t.preserve_inf_nan16 = p.p12.shaderSignedZeroInfNanPreserveFloat16;
  t.preserve_inf_nan32 = p.p12.shaderSignedZeroInfNanPreserveFloat32;
  t.preserve_inf_nan64 = p.p12.shaderSignedZeroInfNanPreserveFloat64;
  // DenormPreserve for f32 alone is allowed unless every width must share one behaviour.
  t.f32_denormals = p.p12.shaderDenormPreserveFloat32 &&
                    p.p12.denormBehaviorIndependence != VK_SHADER_FLOAT_CONTROLS_INDEPENDENCE_NONE;
  if (f.coop_matrix) {
    t.coop_m = p.coop_shape[0];
    t.coop_n = p.coop_shape[1];
    t.coop_k = p.coop_shape[2];
  }
  return t;
}

std::string target_key(const ir::TargetInfo& t) {
  std::string types;
  for (auto [has, name] : {std::pair{t.has_f16, " f16"}, {t.has_i8, " i8"}, {t.has_f64, " f64"}, {t.has_i64, " i64"}})
    if (has) types += name;
  std::string inf_nan;
  for (auto [has, name] : {std::pair{t.preserve_inf_nan16, " f16"}, {t.preserve_inf_nan32, " f32"}, {t.preserve_inf_nan64, " f64"}})
    if (has) inf_nan += name;
  return absl::StrCat("SPIR-V ", t.spirv_1_6 ? "1.6" : "1.5", ", subgroup ", t.subgroup_size, ", workgroup <= ", t.max_workgroup,
                      ", shared ", t.shared_memory, " bytes, ", t.scalar_layout ? "scalar" : "std430", " layout, types",
                      types.empty() ? " -" : types, ", inf/nan kept", inf_nan.empty() ? " -" : inf_nan, ", f32 denormals ",
                      t.f32_denormals ? "kept" : "flushed",
                      t.coop_m ? absl::StrCat(", f16 cooperative matrices ", t.coop_m, "x", t.coop_n, "x", t.coop_k) : "");
}

}  // namespace kiln::runtime::vk

#include "backends/vulkan/select_device.h"

#include <algorithm>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kiln::runtime::vk {
namespace {

int type_rank(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return 0;
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return 1;
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return 2;
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return 4;
    default: return 3;
  }
}

bool has_extension(VkPhysicalDevice pd, const char* name) {
  uint32_t n = 0;
  vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, nullptr);
  std::vector<VkExtensionProperties> ext(n);
  vkEnumerateDeviceExtensionProperties(pd, nullptr, &n, ext.data());
  for (const auto& e : ext)
    if (std::strcmp(e.extensionName, name) == 0) return true;
  return false;
}

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
  bool v13 = false, nv_sm = false, amd_core = false;
  int compute_family = -1;
  uint32_t timestamp_bits = 0;
};

void probe(VkPhysicalDevice pd, Probe* p) {
  vkGetPhysicalDeviceProperties(pd, &p->props);
  if (p->props.apiVersion < VK_API_VERSION_1_2) return;
  p->v13 = p->props.apiVersion >= VK_API_VERSION_1_3;
  p->nv_sm = has_extension(pd, VK_NV_SHADER_SM_BUILTINS_EXTENSION_NAME);
  p->amd_core = has_extension(pd, VK_AMD_SHADER_CORE_PROPERTIES_EXTENSION_NAME);
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
  vkGetPhysicalDeviceFeatures2(pd, &p->f);
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
}

// Why `p` cannot run kiln, or empty.
std::string missing_requirements(const Probe& p) {
  if (p.props.apiVersion < VK_API_VERSION_1_2)
    return absl::StrCat("Vulkan ", VK_API_VERSION_MAJOR(p.props.apiVersion), ".", VK_API_VERSION_MINOR(p.props.apiVersion),
                        " (1.2 needed)");
  std::vector<std::string> miss;
  if (!p.f12.bufferDeviceAddress) miss.push_back("bufferDeviceAddress");
  if (!p.f12.timelineSemaphore) miss.push_back("timelineSemaphore");
  if (!p.f.features.shaderInt64) miss.push_back("shaderInt64");
  if (p.compute_family < 0) miss.push_back("a compute queue");
  return miss.empty() ? "" : absl::StrCat("no ", absl::StrJoin(miss, ", no "));
}

DeviceChoice describe(VkPhysicalDevice pd, int index, const Probe& p) {
  DeviceChoice c;
  c.physical = pd;
  Caps& k = c.caps;
  k.index = index;
  k.name = p.props.deviceName;
  k.type = p.props.deviceType;
  k.api_version = p.props.apiVersion;
  k.vendor_id = p.props.vendorID;
  k.device_id = p.props.deviceID;
  k.driver_version = p.props.driverVersion;
  std::memcpy(k.pipeline_cache_uuid, p.props.pipelineCacheUUID, VK_UUID_SIZE);
  k.queue_family = uint32_t(p.compute_family);
  k.timestamp_valid_bits = p.timestamp_bits;  // 0: no timestamps on this queue
  k.timestamp_period_ns = p.props.limits.timestampPeriod;
  for (int i = 0; i < 3; ++i) k.max_group_count[i] = p.props.limits.maxComputeWorkGroupCount[i];
  k.max_allocation = p.p11.maxMemoryAllocationSize;
  k.storage_offset_alignment = std::max<VkDeviceSize>(1, p.props.limits.minStorageBufferOffsetAlignment);
  k.max_storage_range = p.props.limits.maxStorageBufferRange;
  if (p.v13 && p.p13.maxBufferSize) k.max_allocation = std::min<VkDeviceSize>(k.max_allocation, p.p13.maxBufferSize);
  k.vulkan13 = p.v13;
  k.float_controls.preserve_inf_nan16 = p.p12.shaderSignedZeroInfNanPreserveFloat16;
  k.float_controls.preserve_inf_nan32 = p.p12.shaderSignedZeroInfNanPreserveFloat32;
  k.float_controls.preserve_inf_nan64 = p.p12.shaderSignedZeroInfNanPreserveFloat64;
  // Setting f32 alone is allowed unless every width must share one denormal behaviour.
  k.float_controls.preserve_denorm32 = p.p12.shaderDenormPreserveFloat32 &&
                                       p.p12.denormBehaviorIndependence != VK_SHADER_FLOAT_CONTROLS_INDEPENDENCE_NONE;

  OptionalFeatures& o = c.features;
  o.float16 = p.f12.shaderFloat16;
  o.int8 = p.f12.shaderInt8;
  o.int16 = p.f.features.shaderInt16;
  o.float64 = p.f.features.shaderFloat64;
  o.storage8 = p.f12.storageBuffer8BitAccess;
  o.storage16 = p.f11.storageBuffer16BitAccess;
  o.scalar_layout = p.f12.scalarBlockLayout;
  o.memory_model = p.f12.vulkanMemoryModel;
  o.memory_model_device_scope = p.f12.vulkanMemoryModelDeviceScope;
  o.subgroup_size_control = p.v13 && p.f13.subgroupSizeControl;
  o.compute_full_subgroups = p.v13 && p.f13.computeFullSubgroups;
  o.synchronization2 = p.v13 && p.f13.synchronization2;
  o.maintenance4 = p.v13 && p.f13.maintenance4;

  ir::TargetInfo& t = c.target;
  t.name = "vulkan";
  t.is_gpu = p.props.deviceType != VK_PHYSICAL_DEVICE_TYPE_CPU;
  const VkPhysicalDeviceLimits& l = p.props.limits;
  t.max_workgroup = int(std::min(l.maxComputeWorkGroupInvocations, l.maxComputeWorkGroupSize[0]));
  t.shared_memory = l.maxComputeSharedMemorySize;
  // Subgroup reductions need basic + arithmetic operations in compute shaders; otherwise the
  // renderer must use shared memory only (subgroup_size 1).
  const VkSubgroupFeatureFlags need =
      VK_SUBGROUP_FEATURE_BASIC_BIT | VK_SUBGROUP_FEATURE_ARITHMETIC_BIT | VK_SUBGROUP_FEATURE_SHUFFLE_BIT;
  bool subgroups = (p.p11.subgroupSupportedStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                   (p.p11.subgroupSupportedOperations & need) == need;
  t.subgroup_size = subgroups ? int(p.p11.subgroupSize) : 1;
  if (subgroups && o.subgroup_size_control && (p.p13.requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
      p.p13.minSubgroupSize != p.p13.maxSubgroupSize && p.p11.subgroupSize >= p.p13.minSubgroupSize &&
      p.p11.subgroupSize <= p.p13.maxSubgroupSize) {
    k.require_subgroup_size = true;
  }
  k.full_subgroups = o.compute_full_subgroups;
  t.vector_width = 4;
  t.max_fused_row = 8192;
  t.max_buffer_range = int64_t(k.max_allocation);
  t.has_f16 = o.float16 && o.storage16;
  t.has_i8 = o.int8 && o.storage8;
  t.has_f64 = o.float64;
  t.has_i64 = true;  // shaderInt64 is required
  t.f32_denormals = k.float_controls.preserve_denorm32;
  // Multiprocessors where the driver says; otherwise an estimate by device type.
  if (p.nv_sm && p.sm.shaderSMCount) {
    t.parallelism = int(p.sm.shaderSMCount);
  } else if (p.amd_core && p.amd.computeUnitsPerShaderArray) {
    t.parallelism = int(p.amd.shaderEngineCount * p.amd.shaderArraysPerEngineCount * p.amd.computeUnitsPerShaderArray);
  } else if (p.props.deviceType == VK_PHYSICAL_DEVICE_TYPE_CPU) {
    t.parallelism = int(std::max(1u, std::thread::hardware_concurrency()));
  } else {
    t.parallelism = p.props.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU ? 64 : 16;
  }
  return c;
}

}  // namespace

absl::StatusOr<DeviceChoice> choose_physical_device(VkInstance instance, int index) {
  uint32_t n = 0;
  VkResult r = vkEnumeratePhysicalDevices(instance, &n, nullptr);
  if (r != VK_SUCCESS || n == 0) return absl::UnavailableError("vulkan: no physical device");
  std::vector<VkPhysicalDevice> pds(n);
  vkEnumeratePhysicalDevices(instance, &n, pds.data());
  std::vector<Probe> probes(n);
  for (uint32_t i = 0; i < n; ++i) probe(pds[i], &probes[i]);

  if (index >= 0) {
    if (index >= int(n))
      return absl::UnavailableError(absl::StrCat("vulkan: KILN_VULKAN_DEVICE=", index, " but there are only ", n, " physical device(s)"));
    std::string why = missing_requirements(probes[index]);
    if (!why.empty())
      return absl::UnavailableError(absl::StrCat("vulkan: device ", index, " (", probes[index].props.deviceName, ") is unsuitable: ", why));
    return describe(pds[index], index, probes[index]);
  }
  int best = -1;
  std::vector<std::string> rejected;
  for (uint32_t i = 0; i < n; ++i) {
    std::string why = missing_requirements(probes[i]);
    if (!why.empty()) {
      rejected.push_back(absl::StrCat(probes[i].props.deviceName, ": ", why));
      continue;
    }
    if (best < 0 || type_rank(probes[i].props.deviceType) < type_rank(probes[best].props.deviceType)) best = int(i);
  }
  if (best < 0)
    return absl::UnavailableError(absl::StrCat("vulkan: no physical device with what kiln needs (", absl::StrJoin(rejected, "; "), ")"));
  return describe(pds[best], best, probes[best]);
}

}  // namespace kiln::runtime::vk

#include "backends/vulkan/select_device.h"

#include <algorithm>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/vulkan/target.h"
#include "support/options.h"

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
  // Cooperative matrices: the kernel (codegen contraction_coop) holds f16 values in float16_t
  // and 32-wide subgroups, and glslang writes such shaders in the Vulkan memory model.
  o.conditional_rendering = p.ext_cond && p.cond.conditionalRendering;
  o.coop_matrix = p.coop_shape[0] > 0 && o.float16 && o.storage16 && o.memory_model && p.p11.subgroupSize == 32 &&
                  has_subgroup_operations(p) && support::options().vulkan_coop_matrix;
  c.target = read_target(p, o);

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
  k.copy_family = p.transfer_family >= 0 ? uint32_t(p.transfer_family) : UINT32_MAX;
  k.timestamp_valid_bits = p.timestamp_bits;  // 0: no timestamps on this queue
  k.timestamp_period_ns = p.props.limits.timestampPeriod;
  for (int i = 0; i < 3; ++i) k.max_group_count[i] = p.props.limits.maxComputeWorkGroupCount[i];
  k.max_allocation = VkDeviceSize(c.target.max_buffer_range);
  k.storage_offset_alignment = std::max<VkDeviceSize>(1, p.props.limits.minStorageBufferOffsetAlignment);
  k.max_storage_range = p.props.limits.maxStorageBufferRange;
  k.vulkan13 = p.v13;
  // Kernels are rendered for the subgroup size the device reports: pin it where it may vary.
  const uint32_t sg = p.p11.subgroupSize;
  k.require_subgroup_size = has_subgroup_operations(p) && o.subgroup_size_control &&
                            (p.p13.requiredSubgroupSizeStages & VK_SHADER_STAGE_COMPUTE_BIT) &&
                            p.p13.minSubgroupSize != p.p13.maxSubgroupSize && sg >= p.p13.minSubgroupSize &&
                            sg <= p.p13.maxSubgroupSize;
  k.full_subgroups = o.compute_full_subgroups;
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

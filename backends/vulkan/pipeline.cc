#include "backends/vulkan/pipeline.h"

#include "absl/strings/str_cat.h"
#include "backends/vulkan/vk_status.h"

namespace kiln::runtime::vk {

absl::StatusOr<VkPipeline> create_compute_pipeline(Context& c, const std::string& name, const std::vector<uint32_t>& spirv,
                                                   uint32_t local_size_x) {
  VkShaderModuleCreateInfo mi = vk_struct<VkShaderModuleCreateInfo>(VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO);
  mi.codeSize = spirv.size() * sizeof(uint32_t);
  mi.pCode = spirv.data();
  VkShaderModule module = VK_NULL_HANDLE;
  KILN_VK_RETURN_IF_ERROR(vkCreateShaderModule(c.device, &mi, nullptr, &module), absl::StrCat("vkCreateShaderModule (", name, ")"));

  VkComputePipelineCreateInfo ci = vk_struct<VkComputePipelineCreateInfo>(VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO);
  ci.stage.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO;
  ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  ci.stage.module = module;
  ci.stage.pName = "main";
  ci.layout = c.pipeline_layout;
  // Kernels are rendered for TargetInfo::subgroup_size: pin it where the driver may vary it.
  VkPipelineShaderStageRequiredSubgroupSizeCreateInfo sub = vk_struct<VkPipelineShaderStageRequiredSubgroupSizeCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_REQUIRED_SUBGROUP_SIZE_CREATE_INFO);
  const uint32_t sg = uint32_t(c.target.subgroup_size);
  if (c.caps.require_subgroup_size) {
    sub.requiredSubgroupSize = sg;
    ci.stage.pNext = &sub;
    if (c.caps.full_subgroups && sg > 1 && local_size_x % sg == 0)
      ci.stage.flags |= VK_PIPELINE_SHADER_STAGE_CREATE_REQUIRE_FULL_SUBGROUPS_BIT;
  }
  VkPipeline pipeline = VK_NULL_HANDLE;
  VkResult r = vkCreateComputePipelines(c.device, c.pipeline_cache, 1, &ci, nullptr, &pipeline);
  vkDestroyShaderModule(c.device, module, nullptr);
  KILN_VK_RETURN_IF_ERROR(r, absl::StrCat("vkCreateComputePipelines (", name, ")"));
  return pipeline;
}

SharedPipeline::~SharedPipeline() {
  if (!process_exiting()) vkDestroyPipeline(device_, pipeline_, nullptr);
}

absl::StatusOr<std::shared_ptr<SharedPipeline>> shared_compute_pipeline(Context& c, const std::string& name,
                                                                        const std::vector<uint32_t>& spirv,
                                                                        uint32_t local_size_x) {
  std::string key(reinterpret_cast<const char*>(&local_size_x), sizeof(local_size_x));
  key.append(reinterpret_cast<const char*>(spirv.data()), spirv.size() * sizeof(uint32_t));
  return c.shared_pipelines.get(key, [&]() -> absl::StatusOr<std::shared_ptr<SharedPipeline>> {
    auto made = create_compute_pipeline(c, name, spirv, local_size_x);
    if (!made.ok()) return made.status();
    return std::make_shared<SharedPipeline>(c.device, *made);
  });
}

}  // namespace kiln::runtime::vk

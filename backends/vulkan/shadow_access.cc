#include "backends/vulkan/shadow_access.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "backends/vulkan/spirv_compiler.h"
#include "backends/vulkan/vk_status.h"

namespace kiln::runtime::vk {
namespace {

// Never true at run time (shadows are dispatched with one workgroup), but the compiler cannot
// know that, so every binding stays statically read or written.
std::string shadow_glsl(int reads, int writes) {
  std::string s = "#version 460\nlayout(local_size_x = 1) in;\n";
  if (reads) absl::StrAppend(&s, "layout(set = 0, binding = 0) readonly buffer R { uint v[]; } r[", reads, "];\n");
  if (writes) absl::StrAppend(&s, "layout(set = 0, binding = 1) buffer W { uint v[]; } w[", writes, "];\n");
  s += "void main() {\n  if (gl_NumWorkGroups.x != 0x6b696c6eu) return;\n  uint acc = 0u;\n";
  for (int i = 0; i < reads; ++i) absl::StrAppend(&s, "  acc += r[", i, "].v[0];\n");
  for (int i = 0; i < writes; ++i) absl::StrAppend(&s, "  w[", i, "].v[0] = acc;\n");
  return s + "}\n";
}

}  // namespace

absl::StatusOr<std::unique_ptr<ShadowPipelines>> ShadowPipelines::create(Context& c, const std::vector<CompiledKernel>& kernels,
                                                                          const std::vector<ir::Step>& steps) {
  std::unique_ptr<ShadowPipelines> sp(new ShadowPipelines(c));
  const int limit = 32;  // storage buffers per shadow: within every device's per-stage limit
  for (const ir::Step& step : steps) {
    StepAccess a;
    if (!step.is_kernel()) {  // a loop or branch marker: no dispatch
      sp->steps_.push_back(std::move(a));
      continue;
    }
    a.reads = kernels[step.kernel].reads;
    a.writes = kernels[step.kernel].writes;
    if (int(a.writes.size()) > limit) a.writes.resize(limit);
    if (int(a.reads.size() + a.writes.size()) > limit) a.reads.resize(limit - a.writes.size());
    if (!a.reads.empty() || !a.writes.empty()) {
      auto v = sp->variant(int(a.reads.size()), int(a.writes.size()));
      if (!v.ok()) return v.status();
      a.variant = *v;
    }
    sp->steps_.push_back(std::move(a));
  }
  return sp;
}

absl::StatusOr<int> ShadowPipelines::variant(int reads, int writes) {
  for (size_t i = 0; i < variants_.size(); ++i)
    if (variants_[i].reads == reads && variants_[i].writes == writes) return int(i);
  Variant v;
  v.reads = reads;
  v.writes = writes;
  variants_.push_back(v);  // destroyed with the others even if creation stops half way
  Variant& nv = variants_.back();
  std::vector<VkDescriptorSetLayoutBinding> bindings;
  if (reads) bindings.push_back({0, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, uint32_t(reads), VK_SHADER_STAGE_COMPUTE_BIT, nullptr});
  if (writes) bindings.push_back({1, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, uint32_t(writes), VK_SHADER_STAGE_COMPUTE_BIT, nullptr});
  auto li = vk_struct<VkDescriptorSetLayoutCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO);
  li.bindingCount = uint32_t(bindings.size());
  li.pBindings = bindings.data();
  KILN_VK_RETURN_IF_ERROR(vkCreateDescriptorSetLayout(c_.device, &li, nullptr, &nv.set_layout), "vkCreateDescriptorSetLayout (shadow)");
  auto pi = vk_struct<VkPipelineLayoutCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO);
  pi.setLayoutCount = 1;
  pi.pSetLayouts = &nv.set_layout;
  KILN_VK_RETURN_IF_ERROR(vkCreatePipelineLayout(c_.device, &pi, nullptr, &nv.layout), "vkCreatePipelineLayout (shadow)");
  SpirvOptions so;
  so.vulkan13 = c_.caps.vulkan13;
  so.optimize = false;
  auto spirv = compile_glsl(absl::StrCat("shadow_r", reads, "_w", writes), shadow_glsl(reads, writes), so);
  if (!spirv.ok()) return spirv.status();
  auto mi = vk_struct<VkShaderModuleCreateInfo>(VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO);
  mi.codeSize = spirv->size() * 4;
  mi.pCode = spirv->data();
  VkShaderModule module = VK_NULL_HANDLE;
  KILN_VK_RETURN_IF_ERROR(vkCreateShaderModule(c_.device, &mi, nullptr, &module), "vkCreateShaderModule (shadow)");
  auto ci = vk_struct<VkComputePipelineCreateInfo>(VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO);
  ci.stage = vk_struct<VkPipelineShaderStageCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO);
  ci.stage.stage = VK_SHADER_STAGE_COMPUTE_BIT;
  ci.stage.module = module;
  ci.stage.pName = "main";
  ci.layout = nv.layout;
  VkResult r = vkCreateComputePipelines(c_.device, VK_NULL_HANDLE, 1, &ci, nullptr, &nv.pipeline);
  vkDestroyShaderModule(c_.device, module, nullptr);
  KILN_VK_RETURN_IF_ERROR(r, "vkCreateComputePipelines (shadow)");
  return int(variants_.size()) - 1;
}

ShadowPipelines::~ShadowPipelines() {
  if (process_exiting()) return;
  for (Variant& v : variants_) {
    if (v.pipeline) vkDestroyPipeline(c_.device, v.pipeline, nullptr);
    if (v.layout) vkDestroyPipelineLayout(c_.device, v.layout, nullptr);
    if (v.set_layout) vkDestroyDescriptorSetLayout(c_.device, v.set_layout, nullptr);
  }
}

absl::StatusOr<std::unique_ptr<ShadowSets>> ShadowSets::create(Context& c, const ShadowPipelines& p) {
  std::unique_ptr<ShadowSets> s(new ShadowSets(c, p));
  uint32_t sets = 0, descriptors = 0;
  for (const auto& a : p.steps()) {
    if (a.variant < 0) continue;
    ++sets;
    descriptors += uint32_t(a.reads.size() + a.writes.size());
  }
  s->sets_.assign(p.steps().size(), VK_NULL_HANDLE);
  if (sets == 0) return s;
  VkDescriptorPoolSize size{VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, descriptors};
  auto pi = vk_struct<VkDescriptorPoolCreateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_POOL_CREATE_INFO);
  pi.maxSets = sets;
  pi.poolSizeCount = 1;
  pi.pPoolSizes = &size;
  KILN_VK_RETURN_IF_ERROR(vkCreateDescriptorPool(c.device, &pi, nullptr, &s->pool_), "vkCreateDescriptorPool (shadow)");
  for (size_t i = 0; i < p.steps().size(); ++i) {
    int v = p.steps()[i].variant;
    if (v < 0) continue;
    auto ai = vk_struct<VkDescriptorSetAllocateInfo>(VK_STRUCTURE_TYPE_DESCRIPTOR_SET_ALLOCATE_INFO);
    ai.descriptorPool = s->pool_;
    ai.descriptorSetCount = 1;
    ai.pSetLayouts = &p.variants()[v].set_layout;
    KILN_VK_RETURN_IF_ERROR(vkAllocateDescriptorSets(c.device, &ai, &s->sets_[i]), "vkAllocateDescriptorSets (shadow)");
  }
  return s;
}

ShadowSets::~ShadowSets() {
  if (process_exiting()) return;
  if (pool_) vkDestroyDescriptorPool(c_.device, pool_, nullptr);
}

void ShadowSets::bind(const std::vector<VkDescriptorBufferInfo>& ranges) {
  // Descriptor offsets must be aligned: widen a range down to the alignment (a superset of the
  // bytes the kernel touches), and clamp it to the largest range a descriptor may cover.
  const VkDeviceSize align = c_.caps.storage_offset_alignment, max_range = c_.caps.max_storage_range;
  auto fix = [&](VkDescriptorBufferInfo r) {
    VkDeviceSize start = r.offset / align * align;
    r.range = std::max<VkDeviceSize>(4, std::min(r.range + (r.offset - start), max_range));
    r.offset = start;
    return r;
  };
  std::vector<VkWriteDescriptorSet> writes;
  std::vector<std::vector<VkDescriptorBufferInfo>> infos;
  infos.reserve(2 * sets_.size());
  for (size_t i = 0; i < sets_.size(); ++i) {
    if (!sets_[i]) continue;
    const auto& a = p_.steps()[i];
    for (int binding = 0; binding < 2; ++binding) {
      const std::vector<int>& ids = binding == 0 ? a.reads : a.writes;
      if (ids.empty()) continue;
      infos.emplace_back();
      for (int b : ids) infos.back().push_back(fix(ranges[b]));
      auto w = vk_struct<VkWriteDescriptorSet>(VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET);
      w.dstSet = sets_[i];
      w.dstBinding = uint32_t(binding);
      w.descriptorCount = uint32_t(ids.size());
      w.descriptorType = VK_DESCRIPTOR_TYPE_STORAGE_BUFFER;
      w.pBufferInfo = infos.back().data();
      writes.push_back(w);
    }
  }
  if (!writes.empty()) vkUpdateDescriptorSets(c_.device, uint32_t(writes.size()), writes.data(), 0, nullptr);
}

void ShadowSets::record(VkCommandBuffer cb, size_t step) const {
  if (!sets_[step]) return;
  const ShadowPipelines::Variant& v = p_.variants()[p_.steps()[step].variant];
  vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, v.pipeline);
  vkCmdBindDescriptorSets(cb, VK_PIPELINE_BIND_POINT_COMPUTE, v.layout, 0, 1, &sets_[step], 0, nullptr);
  vkCmdDispatch(cb, 1, 1, 1);
}

}  // namespace kiln::runtime::vk

// Validation mode only (KILN_VULKAN_VALIDATION=1). Kernels reach memory through buffer device
// addresses, which the validation layer's synchronization validation cannot see. So next to each
// dispatch, the executable records a one-workgroup "shadow" dispatch of a generated shader that
// statically reads (binding 0) and writes (binding 1) the same byte ranges as the kernel through
// descriptors, and does nothing at run time. The shadows sit in the same place relative to the
// barriers as the kernels, so a missing or wrong barrier is reported as a SYNC-HAZARD-*.
#pragma once

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/vulkan/context.h"
#include "ir/program.h"
#include "runtime/compiled_program.h"

namespace kiln::runtime::vk {

class ShadowPipelines {
 public:
  // `kernels[k]`: what kernel k reads and writes; `steps` name kernels by index.
  static absl::StatusOr<std::unique_ptr<ShadowPipelines>> create(Context& c, const std::vector<CompiledKernel>& kernels,
                                                                 const std::vector<ir::Step>& steps);
  ~ShadowPipelines();

  struct Variant {
    int reads = 0, writes = 0;
    VkDescriptorSetLayout set_layout = VK_NULL_HANDLE;
    VkPipelineLayout layout = VK_NULL_HANDLE;
    VkPipeline pipeline = VK_NULL_HANDLE;
  };
  struct StepAccess {
    std::vector<int> reads, writes;  // ir::Program buffer ids
    int variant = -1;                // -1: the kernel touches no buffer
  };
  const std::vector<StepAccess>& steps() const { return steps_; }
  const std::vector<Variant>& variants() const { return variants_; }

 private:
  explicit ShadowPipelines(Context& c) : c_(c) {}
  absl::StatusOr<int> variant(int reads, int writes);
  Context& c_;
  std::vector<Variant> variants_;
  std::vector<StepAccess> steps_;
};

// The descriptor sets of one replay slot: rebound to the buffers of each run before recording.
class ShadowSets {
 public:
  static absl::StatusOr<std::unique_ptr<ShadowSets>> create(Context& c, const ShadowPipelines& p);
  ~ShadowSets();
  // ranges[b]: where ir::Program buffer b lives in this run.
  void bind(const std::vector<VkDescriptorBufferInfo>& ranges);
  void record(VkCommandBuffer cb, size_t step) const;

 private:
  ShadowSets(Context& c, const ShadowPipelines& p) : c_(c), p_(p) {}
  Context& c_;
  const ShadowPipelines& p_;
  VkDescriptorPool pool_ = VK_NULL_HANDLE;
  std::vector<VkDescriptorSet> sets_;  // per step (null where the step has no shadow)
};

}  // namespace kiln::runtime::vk

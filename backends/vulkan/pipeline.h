// One compute pipeline from SPIR-V, through the context's pipeline cache and layout.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/vulkan/context.h"

namespace kiln::runtime::vk {

// `local_size_x` decides whether full subgroups can be required.
absl::StatusOr<VkPipeline> create_compute_pipeline(Context& c, const std::string& name, const std::vector<uint32_t>& spirv,
                                                   uint32_t local_size_x);

// A pipeline that executables share: the sizes of a symbolic dimension load one program's shaders
// once per size, and get the pipeline an earlier size made from the same SPIR-V while any
// executable still holds it. Destroyed with its last holder (each holder waits for its own GPU
// use of it first, as for a pipeline of its own).
class SharedPipeline {
 public:
  SharedPipeline(VkDevice device, VkPipeline pipeline) : device_(device), pipeline_(pipeline) {}
  ~SharedPipeline();
  SharedPipeline(const SharedPipeline&) = delete;
  SharedPipeline& operator=(const SharedPipeline&) = delete;
  VkPipeline get() const { return pipeline_; }

 private:
  VkDevice device_;
  VkPipeline pipeline_;
};
absl::StatusOr<std::shared_ptr<SharedPipeline>> shared_compute_pipeline(Context& c, const std::string& name,
                                                                        const std::vector<uint32_t>& spirv,
                                                                        uint32_t local_size_x);

}  // namespace kiln::runtime::vk

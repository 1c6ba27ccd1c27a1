// VulkanExecutable::resize (runtime/device.h): another size of a symbolic dimension runs through
// the same pipelines. The sizes share their shaders (passes/symbolic.h); what changes is the
// dispatch sizes recorded in the slots' command buffers and the memory plan. The runs in flight
// are waited for (their command buffers are recorded again), the arena grows when the size needs
// more (the old one released after those runs) and never shrinks, and the zeroed intermediates
// are filled at their new places before the next run.
#include "absl/strings/str_cat.h"
#include "backends/vulkan/executable.h"
#include "codegen/c_family/gpu_program.h"
#include "runtime/disk_cache.h"
#include "runtime/stats.h"

namespace kiln::runtime::vk {

absl::Status VulkanExecutable::resize(const CompiledProgram& c) {
  std::lock_guard<std::mutex> lock(mu_);
  auto refuse = [](const std::string& why) {
    return absl::FailedPreconditionError(absl::StrCat("vulkan: this executable cannot take the program: ", why));
  };
  if (!resizable()) return refuse("it has loops or branches");
  if (std::string why = differs_beyond_sizes(c, steps_, buffers_, grids_.size(), num_inputs_, num_outputs_, num_params_); !why.empty())
    return refuse(why);
  const uint32_t* max_groups = ctx_->caps.max_group_count;
  for (size_t i = 0; i < c.kernels.size(); ++i) {
    const CompiledKernel& k = c.kernels[i];
    // An empty binary stands for the shader this executable runs (replay::SharedSizes checked it).
    if (!k.binary.empty() && stable_hash64(k.binary) != binary_hash_[i]) return refuse(absl::StrCat(k.name, " has another shader"));
    std::vector<uint32_t> ids;
    for (int b : k.buffers) ids.push_back(uint32_t(b));
    for (int slot : k.params) ids.push_back(uint32_t(c.buffers.size() + size_t(slot)));
    if (!codegen::gpu::pushes_ids(ids.size())) ids.clear();
    if (ids != pushed_ids_[i]) return refuse(absl::StrCat(k.name, " takes other bindings"));
    for (int d = 0; d < 3; ++d)
      if (k.grid[d] > max_groups[d])
        return absl::InternalError(absl::StrCat("vulkan: kernel '", k.name, "' dispatches ", k.grid[d], " workgroups along axis ", d,
                                                "; ", ctx_->caps.name, " allows ", max_groups[d]));
  }
  // The slots' command buffers are recorded again below: the runs that use them finish first.
  if (last_value_)
    if (absl::Status s = ctx_->wait(last_value_); !s.ok()) return s;
  // Zeroed intermediates (chained kernels' tickets) are zero again after every run: they need
  // filling only where the arena or their places are new.
  bool refill = false;
  auto zeroed = [](const std::vector<ir::BufferDesc>& bs) {
    std::vector<std::pair<int64_t, int64_t>> r;
    for (const ir::BufferDesc& b : bs)
      if (b.zeroed) r.push_back({b.offset, b.bytes()});
    return r;
  };
  if (zeroed(c.buffers) != zeroed(buffers_)) refill = true;
  if (VkDeviceSize(c.arena_bytes) > arena_.size) {
    refill = true;
    auto arena = ctx_->allocate(VkDeviceSize(c.arena_bytes), MemoryUse::kDevice);
    if (!arena.ok())
      return absl::Status(arena.status().code(), absl::StrCat(arena.status().message(), " (the arena of intermediates)"));
    if (arena_.buffer) ctx_->release(arena_, last_value_);
    arena_ = *arena;
    last_value_ = std::max(last_value_, arena->ready_after);
    arena_copy_after_ = std::max(arena_copy_after_, arena->ready_after_copy);
  }
  buffers_ = c.buffers;
  for (size_t i = 0; i < c.kernels.size(); ++i) {
    grids_[i] = c.kernels[i].grid;
    kernels_[i].bytes = c.kernels[i].bytes;
    kernels_[i].flops = c.kernels[i].flops;
  }
  if (refill)
    if (absl::Status s = zero_arena_ranges(); !s.ok()) return s;
  if (!shadow_)  // (validation mode records each run anyway)
    for (auto& slot : slots_)
      if (absl::Status s = record(slot.get()); !s.ok()) return s;
  counters().executables_resized++;
  return absl::OkStatus();
}

}  // namespace kiln::runtime::vk

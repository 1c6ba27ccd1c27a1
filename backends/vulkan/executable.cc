#include "backends/vulkan/executable.h"

#include "runtime/disk_cache.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <optional>

#include "absl/strings/str_cat.h"
#include "backends/vulkan/peaks.h"
#include "runtime/bindings.h"
#include "runtime/disk_cache.h"
#include "support/options.h"
#include "support/trace.h"
#include "backends/vulkan/memory.h"
#include "backends/vulkan/pipeline.h"
#include "backends/vulkan/pipeline_cache.h"
#include "backends/vulkan/spirv_module.h"
#include "backends/vulkan/vk_status.h"
#include "codegen/c_family/gpu_program.h"

namespace kiln::runtime::vk {
absl::StatusOr<std::unique_ptr<VulkanExecutable>> VulkanExecutable::create(Device* owner, std::shared_ptr<Context> ctx,
                                                                            const CompiledProgram& c, ExecutableOptions o) {
  std::unique_ptr<VulkanExecutable> e(new VulkanExecutable());
  e->owner_ = owner;
  e->ctx_ = std::move(ctx);
  e->opts_ = o;
  if (e->opts_.profile && e->ctx_->caps.timestamp_valid_bits == 0) {
    std::fprintf(stderr, "kiln: vulkan: %s has no timestamps on its compute queue; no per-kernel GPU times\n", e->ctx_->caps.name.c_str());
    e->opts_.profile = false;
  }
  e->buffers_ = c.buffers;
  e->steps_ = c.steps;
  e->links_ = ir::block_links(c.steps);
  e->run_at_.assign(c.steps.size(), -1);
  for (size_t i = 0; i < c.steps.size(); ++i) {
    if (!c.steps[i].is_kernel()) continue;
    ++e->kernel_steps_;
    if (i > 0 && c.steps[i - 1].is_kernel()) {
      e->runs_.back().second = i + 1;
    } else {
      e->run_at_[i] = int(e->runs_.size());
      e->runs_.push_back({i, i + 1});
    }
  }
  const bool control = e->kernel_steps_ != int(c.steps.size());
  // A loop whose body is one straight-line run and has no trip limit (a limit is checked per
  // trip) runs in batches where the device has conditional rendering.
  e->batch_at_.assign(c.steps.size(), -1);
  if (control && e->ctx_->caps.conditional_rendering && o.loop_batch > 1)
    for (size_t i = 0; i < c.steps.size(); ++i) {
      if (c.steps[i].kind != ir::StepKind::kWhile || c.steps[i].max_trips > 0) continue;
      const size_t end = size_t(e->links_.end[i]);
      bool straight = end > i + 1;
      for (size_t j = i + 1; j < end; ++j) straight = straight && c.steps[j].is_kernel();
      if (straight) e->batch_at_[i] = e->num_batches_++;
    }
  if (control && e->opts_.profile) {
    std::fprintf(stderr, "kiln: vulkan: no per-kernel GPU times for a program with loops or branches\n");
    e->opts_.profile = false;
  }
  e->num_inputs_ = c.num_inputs;
  e->num_outputs_ = c.num_outputs;
  e->num_params_ = c.params.size();
  if (absl::Status s = e->build_pipelines(c); !s.ok()) return s;
  if (e->ctx_->caps.validation) {
    auto shadow = ShadowPipelines::create(*e->ctx_, c.kernels, c.steps);
    if (!shadow.ok()) return shadow.status();
    e->shadow_ = *std::move(shadow);
  }

  VkCommandPoolCreateInfo pi = vk_struct<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
  pi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;  // validation mode re-records
  pi.queueFamilyIndex = e->ctx_->caps.queue_family;
  KILN_VK_RETURN_IF_ERROR(vkCreateCommandPool(e->ctx_->device, &pi, nullptr, &e->pool_), "vkCreateCommandPool (executable)");
  if (c.arena_bytes > 0) {
    auto arena = e->ctx_->allocate(VkDeviceSize(c.arena_bytes), MemoryUse::kDevice);
    if (!arena.ok())
      return absl::Status(arena.status().code(), absl::StrCat(arena.status().message(), " (the arena of intermediates)"));
    e->arena_ = *arena;
    e->last_value_ = arena->ready_after;
    e->arena_copy_after_ = arena->ready_after_copy;
    if (absl::Status s = e->zero_arena_ranges(); !s.ok()) return s;
  }
  // The first slot is recorded now: loading an executable records its command buffer.
  std::lock_guard<std::mutex> lock(e->mu_);
  if (auto s = e->acquire_slot(); !s.ok()) return s.status();
  return e;
}

absl::Status VulkanExecutable::zero_arena_ranges() {
  std::vector<const ir::BufferDesc*> zeroed;
  for (const ir::BufferDesc& b : buffers_)
    if (b.zeroed && b.bytes() > 0) zeroed.push_back(&b);
  if (zeroed.empty()) return absl::OkStatus();
  VkCommandBufferAllocateInfo ai = vk_struct<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
  ai.commandPool = pool_;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  VkCommandBuffer cb = VK_NULL_HANDLE;  // freed with the pool, after the GPU is done with it
  KILN_VK_RETURN_IF_ERROR(vkAllocateCommandBuffers(ctx_->device, &ai, &cb), "vkAllocateCommandBuffers (zeroing)");
  VkCommandBufferBeginInfo bi = vk_struct<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  KILN_VK_RETURN_IF_ERROR(vkBeginCommandBuffer(cb, &bi), "vkBeginCommandBuffer (zeroing)");
  // Sizes of zeroed buffers are multiples of 4 (uint32 tickets), as vkCmdFillBuffer needs.
  for (const ir::BufferDesc* b : zeroed) vkCmdFillBuffer(cb, arena_.buffer, VkDeviceSize(b->offset), VkDeviceSize(b->bytes()), 0);
  VkMemoryBarrier filled = vk_struct<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
  filled.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
  filled.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &filled, 0, nullptr, 0,
                       nullptr);
  KILN_VK_RETURN_IF_ERROR(vkEndCommandBuffer(cb), "vkEndCommandBuffer (zeroing)");
  auto v = ctx_->submit(Queue::kCompute, cb, Stamp{last_value_, arena_copy_after_}, VK_PIPELINE_STAGE_TRANSFER_BIT);
  if (!v.ok()) return v.status();
  last_value_ = *v;  // the first run waits for it (it shares the arena)
  return absl::OkStatus();
}

absl::Status VulkanExecutable::build_pipelines(const CompiledProgram& c) {
  const uint32_t* max_groups = ctx_->caps.max_group_count;
  for (const CompiledKernel& k : c.kernels) {
    std::vector<uint32_t> ids;
    for (int b : k.buffers) ids.push_back(uint32_t(b));
    for (int slot : k.params) ids.push_back(uint32_t(c.buffers.size() + size_t(slot)));
    if (!codegen::gpu::pushes_ids(ids.size())) ids.clear();  // the shader has them in its text
    pushed_ids_.push_back(std::move(ids));
  }
  for (const CompiledKernel& k : c.kernels) {
    uint64_t threads = uint64_t(k.block[0]) * k.block[1] * k.block[2];
    if (threads == 0 || threads > uint64_t(ctx_->target.max_workgroup))
      return absl::InternalError(absl::StrCat("vulkan: kernel '", k.name, "' has a workgroup of ", threads, " invocations; ",
                                              ctx_->caps.name, " allows 1..", ctx_->target.max_workgroup));
    for (int d = 0; d < 3; ++d)
      if (k.grid[d] > max_groups[d])
        return absl::InternalError(absl::StrCat("vulkan: kernel '", k.name, "' dispatches ", k.grid[d], " workgroups along axis ", d,
                                                "; ", ctx_->caps.name, " allows ", max_groups[d]));
    if (k.twin >= 0) {  // check_consistent: an earlier kernel with a pipeline of its own
      if (c.kernels[size_t(k.twin)].block != k.block)
        return absl::InvalidArgumentError(absl::StrCat("vulkan: kernel '", k.name, "' has workgroups of ", k.block[0],
                                                       " invocations, the shader of its twin '", c.kernels[size_t(k.twin)].name,
                                                       "' ", c.kernels[size_t(k.twin)].block[0]));
      pipelines_.push_back(pipelines_[size_t(k.twin)]);
    } else {
      auto spirv = spirv_words(k.binary);
      if (!spirv.ok()) return absl::InvalidArgumentError(absl::StrCat("vulkan: kernel '", k.name, "': ", spirv.status().message()));
      auto pipeline = shared_compute_pipeline(*ctx_, k.name, *spirv, k.block[0]);
      if (!pipeline.ok()) return pipeline.status();
      pipelines_.push_back((*pipeline)->get());
      pipeline_refs_.push_back(*std::move(pipeline));
    }
    grids_.push_back(k.grid);
    binary_hash_.push_back(stable_hash64(k.binary));
    support::KernelRun info;
    info.name = k.name;
    info.kernel = int(kernels_.size());
    info.bytes = k.bytes;
    info.flops = k.flops;
    info.tensor_math = k.tensor_math;
    info.computes = k.computes;
    kernels_.push_back(std::move(info));
  }
  save_pipeline_cache(ctx_.get());
  return absl::OkStatus();
}

VulkanExecutable::~VulkanExecutable() {
  if (process_exiting()) return;
  // Pipelines and command buffers must outlive the GPU's use of them.
  if (last_value_) ctx_->wait(last_value_).IgnoreError();
  VkDevice dev = ctx_->device;
  for (auto& s : slots_) {
    if (s->queries) vkDestroyQueryPool(dev, s->queries, nullptr);
    if (s->flags.buffer) ctx_->release(s->flags, 0);
    if (s->predicates.buffer) ctx_->release(s->predicates, 0);
  }
  if (tables_.buffer) ctx_->release(tables_, 0);
  ctx_->release(arena_, last_value_);
  if (pool_) vkDestroyCommandPool(dev, pool_, nullptr);
  pipeline_refs_.clear();  // the last holder of a pipeline destroys it
}

absl::StatusOr<VulkanExecutable::Slot*> VulkanExecutable::acquire_slot() {
  uint64_t done = ctx_->completed();
  Slot* oldest = nullptr;
  for (auto& s : slots_) {
    if (s->value <= done) return s.get();
    if (!oldest || s->value < oldest->value) oldest = s.get();
  }
  const size_t max_slots = size_t(std::max(opts_.max_in_flight, 1));
  if (slots_.size() < max_slots) {
    if (!tables_.buffer) {
      // Every slot's address table in one host-visible allocation (one VkDeviceMemory per
      // executable, however many runs are in flight).
      table_stride_ = (std::max<VkDeviceSize>(buffers_.size() + num_params_, 1) * sizeof(uint64_t) + 63) / 64 * 64;
      auto tables = ctx_->allocate(table_stride_ * max_slots, MemoryUse::kTable);
      if (!tables.ok()) return tables.status();
      tables_ = *tables;
    }
    auto s = std::make_unique<Slot>();
    const VkDeviceSize at = table_stride_ * slots_.size();
    s->table = tables_;  // a view of slot i's part
    s->table.address += at;
    s->table.mapped = static_cast<char*>(tables_.mapped) + at;
    s->table.size = table_stride_;
    slots_.push_back(std::move(s));
    Slot* slot = slots_.back().get();
    absl::Status st = prepare(slot);
    if (st.ok() && !shadow_) st = record(slot);
    if (!st.ok()) {
      if (slot->queries) vkDestroyQueryPool(ctx_->device, slot->queries, nullptr);
      slots_.pop_back();
      return st;
    }
    return slot;
  }
  if (absl::Status st = ctx_->wait(oldest->value); !st.ok()) return st;
  return oldest;
}

absl::Status VulkanExecutable::prepare(Slot* s) {
  VkDevice dev = ctx_->device;
  const uint32_t nq = uint32_t(2 * steps_.size());
  if (opts_.profile && nq > 0) {
    VkQueryPoolCreateInfo qi = vk_struct<VkQueryPoolCreateInfo>(VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO);
    qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qi.queryCount = nq;
    KILN_VK_RETURN_IF_ERROR(vkCreateQueryPool(dev, &qi, nullptr, &s->queries), "vkCreateQueryPool");
  }
  VkCommandBufferAllocateInfo ai = vk_struct<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
  ai.commandPool = pool_;
  ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
  ai.commandBufferCount = 1;
  KILN_VK_RETURN_IF_ERROR(vkAllocateCommandBuffers(dev, &ai, &s->cb), "vkAllocateCommandBuffers (executable)");
  if (kernel_steps_ != int(steps_.size())) {
    s->runs.assign(runs_.size(), VK_NULL_HANDLE);
    if (!runs_.empty()) {
      s->runs[0] = s->cb;
      ai.commandBufferCount = uint32_t(runs_.size() - 1);
      if (ai.commandBufferCount)
        KILN_VK_RETURN_IF_ERROR(vkAllocateCommandBuffers(dev, &ai, s->runs.data() + 1), "vkAllocateCommandBuffers (executable runs)");
    }
    auto flags = ctx_->allocate(VkDeviceSize(std::max<size_t>(steps_.size(), 4)), MemoryUse::kReadback);
    if (!flags.ok()) return flags.status();
    s->flags = *flags;
    if (num_batches_ > 0) {
      s->batches.assign(size_t(num_batches_), VK_NULL_HANDLE);
      ai.commandBufferCount = uint32_t(num_batches_);
      KILN_VK_RETURN_IF_ERROR(vkAllocateCommandBuffers(dev, &ai, s->batches.data()), "vkAllocateCommandBuffers (executable loops)");
      auto words = ctx_->allocate(VkDeviceSize(4 * num_batches_), MemoryUse::kPredicate);
      if (!words.ok()) return words.status();
      s->predicates = *words;
    }
  }
  if (shadow_) {
    auto sets = ShadowSets::create(*ctx_, *shadow_);
    if (!sets.ok()) return sets.status();
    s->shadow = *std::move(sets);
  }
  return absl::OkStatus();
}

absl::Status VulkanExecutable::record(Slot* s) {
  if (s->runs.empty()) {  // straight-line: one command buffer
    VkCommandBufferBeginInfo bi = vk_struct<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
    KILN_VK_RETURN_IF_ERROR(vkBeginCommandBuffer(s->cb, &bi), "vkBeginCommandBuffer");
    record_steps(s, s->cb, 0, steps_.size(), -1, 0);
    return check(vkEndCommandBuffer(s->cb), "vkEndCommandBuffer (executable)");
  }
  for (size_t r = 0; r < runs_.size(); ++r) {
    VkCommandBufferBeginInfo bi = vk_struct<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
    KILN_VK_RETURN_IF_ERROR(vkBeginCommandBuffer(s->runs[r], &bi), "vkBeginCommandBuffer");
    const size_t end = runs_[r].second;
    // The flag of the marker after the run (a while head, an if, or a loop's end whose head
    // tests the flag the body's last steps recomputed), copied out for the host.
    int flag = -1;
    if (end < steps_.size()) {
      const ir::Step& m = steps_[end];
      if (m.kind == ir::StepKind::kWhile || m.kind == ir::StepKind::kIf) flag = m.flag;
      if (m.kind == ir::StepKind::kEnd && steps_[size_t(links_.head[end])].kind == ir::StepKind::kWhile)
        flag = steps_[size_t(links_.head[end])].flag;
    }
    record_steps(s, s->runs[r], runs_[r].first, end, flag, end);
    KILN_VK_RETURN_IF_ERROR(vkEndCommandBuffer(s->runs[r]), "vkEndCommandBuffer (executable run)");
  }
  for (size_t i = 0; i < steps_.size(); ++i) {
    if (batch_at_[i] < 0) continue;
    VkCommandBuffer cb = s->batches[size_t(batch_at_[i])];
    VkCommandBufferBeginInfo bi = vk_struct<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
    KILN_VK_RETURN_IF_ERROR(vkBeginCommandBuffer(cb, &bi), "vkBeginCommandBuffer");
    record_batch(s, cb, i, size_t(batch_at_[i]));
    KILN_VK_RETURN_IF_ERROR(vkEndCommandBuffer(cb), "vkEndCommandBuffer (executable loop)");
  }
  return absl::OkStatus();
}

void VulkanExecutable::record_batch(Slot* s, VkCommandBuffer cb, size_t head, size_t word) {
  const size_t end = size_t(links_.end[head]);
  const VkDeviceSize flag_at = VkDeviceSize(buffers_[size_t(steps_[head].flag)].offset), word_at = 4 * VkDeviceSize(word);
  auto barrier = [&](VkPipelineStageFlags src, VkAccessFlags src_access, VkPipelineStageFlags dst, VkAccessFlags dst_access) {
    VkMemoryBarrier b = vk_struct<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
    b.srcAccessMask = src_access;
    b.dstAccessMask = dst_access;
    vkCmdPipelineBarrier(cb, src, dst, 0, 1, &b, 0, nullptr, 0, nullptr);
  };
  // The predicate word: zero, then its low byte is the flag (a bool of one byte).
  barrier(VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_CONDITIONAL_RENDERING_BIT_EXT,
          VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_CONDITIONAL_RENDERING_READ_BIT_EXT, VK_PIPELINE_STAGE_TRANSFER_BIT,
          VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
  vkCmdFillBuffer(cb, s->predicates.buffer, word_at, 4, 0);
  barrier(VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT);
  const VkBufferCopy to_word{flag_at, word_at, 1};
  vkCmdCopyBuffer(cb, arena_.buffer, s->predicates.buffer, 1, &to_word);
  VkConditionalRenderingBeginInfoEXT ci = vk_struct<VkConditionalRenderingBeginInfoEXT>(VK_STRUCTURE_TYPE_CONDITIONAL_RENDERING_BEGIN_INFO_EXT);
  ci.buffer = s->predicates.buffer;
  ci.offset = word_at;
  for (int t = 0; t < opts_.loop_batch; ++t) {
    // Everything before (the predicate's copy above all) before the predicate is read.
    barrier(VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, VK_ACCESS_MEMORY_WRITE_BIT, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
            VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT | VK_ACCESS_CONDITIONAL_RENDERING_READ_BIT_EXT);
    vkCmdBeginConditionalRenderingEXT(cb, &ci);
    record_steps(s, cb, head + 1, end, -1, 0);
    vkCmdEndConditionalRenderingEXT(cb);
    barrier(VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_CONDITIONAL_RENDERING_BIT_EXT,
            VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_CONDITIONAL_RENDERING_READ_BIT_EXT, VK_PIPELINE_STAGE_TRANSFER_BIT,
            VK_ACCESS_TRANSFER_READ_BIT | VK_ACCESS_TRANSFER_WRITE_BIT);
    vkCmdCopyBuffer(cb, arena_.buffer, s->predicates.buffer, 1, &to_word);
  }
  // The flag after the batch, for the host (the slot of the loop's end marker).
  const VkBufferCopy to_host{flag_at, VkDeviceSize(end), 1};
  vkCmdCopyBuffer(cb, arena_.buffer, s->flags.buffer, 1, &to_host);
  barrier(VK_PIPELINE_STAGE_TRANSFER_BIT, VK_ACCESS_TRANSFER_WRITE_BIT, VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
          VK_ACCESS_HOST_READ_BIT | VK_ACCESS_SHADER_READ_BIT);
}

void VulkanExecutable::record_steps(Slot* s, VkCommandBuffer cb, size_t begin, size_t end, int flag, size_t flag_slot) {
  const uint32_t nq = uint32_t(2 * steps_.size());
  if (s->queries) vkCmdResetQueryPool(cb, s->queries, 0, nq);
  const uint64_t table = s->table.address;
  // A barrier only where the Program has a dependency edge: independent kernels may overlap.
  VkMemoryBarrier barrier = vk_struct<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
  barrier.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  barrier.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
  if (opts_.queue_order || begin > 0) {
    // Everything submitted earlier to the compute queue (kernels, downloads, and uploads where
    // they share it) before this run's first dispatch: RAW on inputs written by an upload or an
    // earlier run, WAR/WAW on the outputs and the arena. run() then submits without a compute
    // timeline wait; uploads on the copy queue are waited for by their copy timeline values.
    // (A later straight-line run of a program with loops always orders itself this way.)
    VkMemoryBarrier first = vk_struct<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
    first.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT | VK_ACCESS_TRANSFER_WRITE_BIT;
    first.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
    vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT | VK_PIPELINE_STAGE_TRANSFER_BIT,
                         VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &first, 0, nullptr, 0, nullptr);
  }
  for (size_t i = begin; i < end; ++i) {
    const ir::Step& step = steps_[i];
    if (!step.deps.empty() && int(i) != opts_.drop_barrier_step)
      vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &barrier, 0,
                           nullptr, 0, nullptr);
    if (s->queries) vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, s->queries, uint32_t(2 * i));
    if (s->shadow) s->shadow->record(cb, i);
    const auto& g = grids_[step.kernel];
    vkCmdBindPipeline(cb, VK_PIPELINE_BIND_POINT_COMPUTE, pipelines_[step.kernel]);
    // The table's address pushed once, again after a shadow dispatch (whose pipeline layout
    // disturbs push constants); each kernel's table indices before its dispatch.
    if (i == begin || s->shadow) vkCmdPushConstants(cb, ctx_->pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof(table), &table);
    if (const std::vector<uint32_t>& ids = pushed_ids_[size_t(step.kernel)]; !ids.empty())
      vkCmdPushConstants(cb, ctx_->pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, sizeof(table),
                         uint32_t(ids.size() * sizeof(uint32_t)), ids.data());
    vkCmdDispatch(cb, g[0], g[1], g[2]);
    if (s->queries) vkCmdWriteTimestamp(cb, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, s->queries, uint32_t(2 * i + 1));
  }
  if (flag < 0) return;
  VkMemoryBarrier to_copy = vk_struct<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
  to_copy.srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT;
  to_copy.dstAccessMask = VK_ACCESS_TRANSFER_READ_BIT;
  vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &to_copy, 0, nullptr, 0,
                       nullptr);
  VkBufferCopy region{VkDeviceSize(buffers_[size_t(flag)].offset), VkDeviceSize(flag_slot), 1};
  vkCmdCopyBuffer(cb, arena_.buffer, s->flags.buffer, 1, &region);
  VkMemoryBarrier to_host = vk_struct<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
  to_host.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
  to_host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
  vkCmdPipelineBarrier(cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &to_host, 0, nullptr, 0, nullptr);
}

absl::Status VulkanExecutable::run_structured(Slot* s, Stamp first) {
  std::vector<int64_t> trips(steps_.size(), 0);
  size_t back_from = 0;  // the loop end that jumped back to the head reached next (0: none)
  uint64_t last = 0;
  bool submitted = false;
  auto flag_at = [&](size_t marker) -> absl::StatusOr<bool> {
    if (last && ctx_->completed() < last)
      if (absl::Status st = ctx_->wait(last); !st.ok()) return st;
    return static_cast<const uint8_t*>(s->flags.mapped)[marker] != 0;
  };
  for (size_t i = 0; i < steps_.size();) {
    const ir::Step& step = steps_[i];
    if (step.is_kernel()) {
      const auto& run = runs_[size_t(run_at_[i])];
      auto v = ctx_->submit(Queue::kCompute, s->runs[size_t(run_at_[i])], submitted ? Stamp{opts_.queue_order ? 0 : last, 0} : first,
                            VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT);
      if (!v.ok()) return v.status();
      s->value = last_value_ = last = *v;
      submitted = true;
      i = run.second;
      continue;
    }
    // A head's flag was copied out at the end of the run before it, or for a loop's head reached
    // from its end, of the body's last run (the slot of the end marker).
    bool flag = false;
    if (step.kind == ir::StepKind::kWhile || step.kind == ir::StepKind::kIf) {
      auto go = flag_at(back_from ? back_from : i);
      if (!go.ok()) return go.status();
      flag = *go;
    }
    back_from = 0;
    auto after = ir::step_after_marker(steps_, links_, i, flag, &trips);
    if (!after.ok()) return after.status();
    size_t next = *after;
    if (step.kind == ir::StepKind::kEnd && next < i) back_from = i;
    if (step.kind == ir::StepKind::kWhile && next == i + 1 && batch_at_[i] >= 0) {
      // Batches of trips until the flag after one is false (the trips after the condition
      // failed dispatched nothing), then on after the loop.
      for (bool more = true; more;) {
        auto v = ctx_->submit(Queue::kCompute, s->batches[size_t(batch_at_[i])], Stamp{opts_.queue_order ? 0 : last, 0},
                              VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT);
        if (!v.ok()) return v.status();
        s->value = last_value_ = last = *v;
        auto again = flag_at(size_t(links_.end[i]));
        if (!again.ok()) return again.status();
        more = *again;
      }
      next = size_t(links_.end[i]) + 1;
    }
    i = next;
  }
  return absl::OkStatus();
}

absl::Status VulkanExecutable::run(const std::vector<Buffer*>& inputs, const std::vector<Buffer*>& outputs,
                                   const ParamValues& params) {
  if (absl::Status s = check_bindings("vulkan", owner_, buffers_, num_inputs_, num_outputs_, inputs, outputs, num_params_, params);
      !s.ok())
    return s;
  // Every binding is a buffer of this device (checked above), so of this backend's type.
  std::vector<VulkanBuffer*> in(inputs.size()), out(outputs.size());
  for (size_t i = 0; i < inputs.size(); ++i) in[i] = static_cast<VulkanBuffer*>(inputs[i]);
  for (size_t i = 0; i < outputs.size(); ++i) out[i] = static_cast<VulkanBuffer*>(outputs[i]);
  std::lock_guard<std::mutex> lock(mu_);
  std::optional<support::TraceSpan> span(std::in_place, "acquire a run slot (vulkan)");
  auto slot = acquire_slot();
  if (!slot.ok()) return slot.status();
  Slot* s = *slot;
  span.emplace("bind (vulkan)");
  // The GPU waits for the previous run (it shares the arena), for the writers of the inputs, and
  // for every earlier use of the outputs and of this slot's table; on the copy queue, for the
  // uploads into its own buffers only (their last copies), not for other uploads in flight.
  uint64_t after = std::max(last_value_, s->value), copy_after = arena_copy_after_;
  auto* table = static_cast<uint64_t*>(s->table.mapped);
  for (size_t i = 0; i < buffers_.size(); ++i) {
    const ir::BufferDesc& b = buffers_[i];
    VulkanBuffer* vb = nullptr;
    switch (b.kind) {
      case ir::BufferKind::kInput: vb = in.at(b.index); break;
      case ir::BufferKind::kOutput: vb = out.at(b.index); break;
      case ir::BufferKind::kIntermediate: table[i] = arena_.address + uint64_t(b.offset); continue;
    }
    table[i] = vb->address();
    after = std::max(after, b.kind == ir::BufferKind::kInput ? vb->last_write() : vb->last_use());
    // Inputs wait for their uploads; outputs also for downloads still reading them.
    copy_after = std::max(copy_after, b.kind == ir::BufferKind::kInput ? vb->last_copy() : vb->last_copy_use());
  }
  for (size_t i = 0; i < params.size(); ++i) table[buffers_.size() + i] = params[i];
  if (shadow_) {
    std::vector<VkDescriptorBufferInfo> ranges(buffers_.size());
    for (size_t i = 0; i < buffers_.size(); ++i) {
      const ir::BufferDesc& b = buffers_[i];
      VkDeviceSize bytes = VkDeviceSize(std::max<int64_t>(b.bytes(), 4));
      switch (b.kind) {
        case ir::BufferKind::kInput: ranges[i] = {in[b.index]->buffer(), 0, bytes}; break;
        case ir::BufferKind::kOutput: ranges[i] = {out[b.index]->buffer(), 0, bytes}; break;
        case ir::BufferKind::kIntermediate: ranges[i] = {arena_.buffer, VkDeviceSize(b.offset), bytes}; break;
      }
    }
    s->shadow->bind(ranges);
    if (absl::Status st = record(s); !st.ok()) return st;
  }
  uint64_t value = 0;
  span.emplace("submit (vulkan)");
  if (!s->runs.empty()) {
    absl::Status st = run_structured(s, Stamp{opts_.queue_order ? 0 : after, copy_after});
    value = last_value_;
    if (!st.ok()) {
      for (VulkanBuffer* b : in) b->note_read(value);
      for (VulkanBuffer* b : out) b->note_write(value);
      return st;
    }
  } else {
    // A profiled run waits for its timestamps right after: no point in batching it.
    auto v = ctx_->submit(Queue::kCompute, s->cb, Stamp{opts_.queue_order ? 0 : after, copy_after},
                          VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, s->queries ? Submit::kNow : Submit::kMayBatch);
    if (!v.ok()) return v.status();
    s->value = last_value_ = value = *v;
  }
  span.emplace("after the submit (vulkan)");
  if (!ran_once_ && ctx_->caps.type == VK_PHYSICAL_DEVICE_TYPE_CPU) {
    // The driver compiles the pipelines on this first dispatch: let it finish, then re-arm the
    // exit hook behind the statics it built (see rearm_exit_hook).
    if (absl::Status st = ctx_->wait(value); !st.ok()) return st;
    rearm_exit_hook();
  }
  ran_once_ = true;
  for (VulkanBuffer* b : in) b->note_read(value);
  for (VulkanBuffer* b : out) b->note_write(value);
  if (s->queries) print_profile(s);
  return absl::OkStatus();
}

void VulkanExecutable::print_profile(Slot* s) {
  if (!ctx_->wait(s->value).ok()) return;
  std::vector<uint64_t> t(2 * steps_.size());
  if (vkGetQueryPoolResults(ctx_->device, s->queries, 0, uint32_t(t.size()), t.size() * sizeof(uint64_t), t.data(), sizeof(uint64_t),
                            VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT) != VK_SUCCESS)
    return;
  const uint32_t bits = ctx_->caps.timestamp_valid_bits;
  const uint64_t mask = bits >= 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1;
  const double period_us = ctx_->caps.timestamp_period_ns / 1000.0;
  const bool print = opts_.print_times;
  // Profiles: the GPU's clock placed on the trace's by the end of the last dispatch, which the
  // wait above has just seen (an approximation of up to the wait's latency).
  const double host_end = support::trace_now_us_precise();
  const bool traced = support::tracing();
  if (traced && peaks_.source.empty()) peaks_ = device_peaks(*ctx_);
  double total = 0;
  for (size_t i = 0; i < steps_.size(); ++i) {
    double us = double((t[2 * i + 1] - t[2 * i]) & mask) * period_us;
    total += us;
    if (print) std::fprintf(stderr, "kiln: vulkan: step %zu kernel '%s' %.1f us GPU\n", i, kernels_[size_t(steps_[i].kernel)].name.c_str(), us);
    if (traced) {
      const double before_end = double((t[2 * steps_.size() - 1] - t[2 * i]) & mask) * period_us;
      support::KernelRun run = kernels_[size_t(steps_[i].kernel)];
      run.start_us = host_end - before_end;
      run.dur_us = us;
      support::trace_kernel("vulkan", run, peaks_, "\"clock\": \"GPU timestamps, aligned at the run's end\"");
    }
  }
  double span = steps_.empty() ? 0 : double((t[2 * steps_.size() - 1] - t[0]) & mask) * period_us;
  if (print)
    std::fprintf(stderr, "kiln: vulkan: %zu dispatches, %.1f us summed, %.1f us first start to last end\n", steps_.size(), total, span);
}

}  // namespace kiln::runtime::vk

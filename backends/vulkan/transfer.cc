#include "backends/vulkan/transfer.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "backends/vulkan/vk_status.h"
#include "support/copy_bytes.h"

namespace kiln::runtime::vk {
namespace {

constexpr VkDeviceSize kChunk = VkDeviceSize(32) << 20;      // largest staging buffer
constexpr VkDeviceSize kKeepStaging = VkDeviceSize(96) << 20;  // staging kept for reuse

}  // namespace

namespace {
// The value `f` signals as a point on both timelines.
Stamp stamp_of(Queue q, uint64_t value) { return q == Queue::kCopy ? Stamp{0, value} : Stamp{value, 0}; }
}  // namespace

absl::Status Transfers::init() {
  for (int q = 0; q < 2; ++q) {
    if (q == 1 && !ctx_->dedicated_copy_queue()) {
      pools_[1] = pools_[0];  // copies share the compute family's pool (and its queue's lock)
      break;
    }
    VkCommandPoolCreateInfo pi = vk_struct<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
    pi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT | VK_COMMAND_POOL_CREATE_TRANSIENT_BIT;
    pi.queueFamilyIndex = q == 0 ? ctx_->caps.queue_family : ctx_->caps.copy_family;
    KILN_VK_RETURN_IF_ERROR(vkCreateCommandPool(ctx_->device, &pi, nullptr, &pools_[q]), "vkCreateCommandPool (transfers)");
  }
  return absl::OkStatus();
}

Transfers::~Transfers() {
  if (process_exiting()) return;
  Stamp last;
  for (const InFlight& f : in_flight_) last.raise(stamp_of(f.queue, f.value));
  ctx_->wait(last).IgnoreError();  // the device may be lost; the pools go either way
  for (InFlight& f : in_flight_) ctx_->release(f.staging, stamp_of(f.queue, f.value));
  for (Allocation& a : free_staging_) ctx_->release(a, 0);
  if (pools_[1] && pools_[1] != pools_[0]) vkDestroyCommandPool(ctx_->device, pools_[1], nullptr);
  if (pools_[0]) vkDestroyCommandPool(ctx_->device, pools_[0], nullptr);
}

void Transfers::reclaim() {
  const uint64_t done[2] = {ctx_->completed(), ctx_->copy_completed()};
  size_t keep = 0;
  for (InFlight& f : in_flight_) {
    const int q = f.queue == Queue::kCopy ? 1 : 0;
    if (f.value > done[q]) {
      in_flight_[keep++] = f;
      continue;
    }
    free_cbs_[q].push_back(f.cb);
    (q == 1 ? f.staging.ready_after_copy : f.staging.ready_after) = f.value;
    give_staging(f.staging);
  }
  in_flight_.resize(keep);
}

void Transfers::give_staging(Allocation a) {
  if (!a.buffer) return;
  if (free_staging_bytes_ + a.size > kKeepStaging) {
    ctx_->release(a, 0);
    return;
  }
  free_staging_bytes_ += a.size;
  free_staging_.push_back(a);
}

absl::StatusOr<Allocation> Transfers::take_staging(VkDeviceSize bytes, MemoryUse use) {
  int best = -1;
  for (size_t i = 0; i < free_staging_.size(); ++i) {
    const Allocation& a = free_staging_[i];
    if (a.use == use && a.size >= bytes && (best < 0 || a.size < free_staging_[best].size)) best = int(i);
  }
  if (best >= 0) {
    Allocation a = free_staging_[best];
    free_staging_.erase(free_staging_.begin() + best);
    free_staging_bytes_ -= a.size;
    return a;
  }
  // Small requests get a 64 KiB buffer so that later small copies reuse it.
  return ctx_->allocate(std::max<VkDeviceSize>(bytes, 64 << 10), use);
}

absl::StatusOr<VkCommandBuffer> Transfers::take_command_buffer(Queue q) {
  std::vector<VkCommandBuffer>& free_cbs = free_cbs_[q == Queue::kCopy ? 1 : 0];
  VkCommandBuffer cb = VK_NULL_HANDLE;
  if (!free_cbs.empty()) {
    cb = free_cbs.back();
    free_cbs.pop_back();
  } else {
    VkCommandBufferAllocateInfo ai = vk_struct<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
    ai.commandPool = pools_[q == Queue::kCopy ? 1 : 0];
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    KILN_VK_RETURN_IF_ERROR(vkAllocateCommandBuffers(ctx_->device, &ai, &cb), "vkAllocateCommandBuffers (transfer)");
  }
  VkCommandBufferBeginInfo bi = vk_struct<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
  bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
  if (VkResult r = vkBeginCommandBuffer(cb, &bi); r != VK_SUCCESS) {
    free_cbs.push_back(cb);
    return check(r, "vkBeginCommandBuffer (transfer)");
  }
  return cb;
}

absl::Status Transfers::upload(VulkanBuffer* dst, const void* src, int64_t bytes) {
  if (bytes < 0 || bytes > dst->bytes())
    return absl::OutOfRangeError(absl::StrCat("vulkan: upload of ", bytes, " bytes into a ", dst->bytes(), "-byte buffer"));
  std::lock_guard<std::mutex> lock(mu_);
  reclaim();
  const Queue q = ctx_->copy_timeline_on() ? Queue::kCopy : Queue::kCompute;
  for (VkDeviceSize off = 0; off < VkDeviceSize(bytes); off += kChunk) {
    VkDeviceSize n = std::min<VkDeviceSize>(kChunk, VkDeviceSize(bytes) - off);
    auto staging = take_staging(n, MemoryUse::kUpload);
    if (!staging.ok()) return staging.status();
    support::copy_bytes(staging->mapped, static_cast<const char*>(src) + off, size_t(n));
    auto cb = take_command_buffer(q);
    if (!cb.ok()) {
      give_staging(*staging);
      return cb.status();
    }
    VkBufferCopy region{0, off, n};
    vkCmdCopyBuffer(*cb, staging->buffer, dst->buffer(), 1, &region);
    absl::Status s = check(vkEndCommandBuffer(*cb), "vkEndCommandBuffer (upload)");
    // Waiting for the buffer's (and the staging buffer's) last uses, on either queue, orders this
    // copy after earlier accesses to either. A fresh buffer has none: the copy starts at once,
    // beside whatever the compute queue runs.
    const Stamp after{std::max(dst->last_use(), staging->ready_after), std::max(dst->last_copy_use(), staging->ready_after_copy)};
    absl::StatusOr<uint64_t> v = s.ok() ? ctx_->submit(q, *cb, after, VK_PIPELINE_STAGE_TRANSFER_BIT) : s;
    if (!v.ok()) {
      free_cbs_[q == Queue::kCopy ? 1 : 0].push_back(*cb);
      give_staging(*staging);
      return v.status();
    }
    in_flight_.push_back({*cb, *staging, *v, q});
    if (q == Queue::kCopy) dst->note_copy(*v);
    else dst->note_write(*v);
  }
  return absl::OkStatus();
}

absl::Status Transfers::download(VulkanBuffer* src, void* dst, int64_t bytes) {
  return download_many({{src, dst, bytes}});
}

absl::Status Transfers::download_many(const std::vector<Download>& all) {
  for (const Download& d : all)
    if (d.bytes < 0 || d.bytes > d.src->bytes())
      return absl::OutOfRangeError(absl::StrCat("vulkan: download of ", d.bytes, " bytes from a ", d.src->bytes(), "-byte buffer"));
  // Pieces of at most kChunk bytes, each with its own staging buffer, batched so that one
  // batch's staging stays under kKeepStaging: one command buffer, one submission, one wait each.
  struct Piece {
    VulkanBuffer* src;
    char* dst;
    VkDeviceSize off, bytes;
    Allocation staging;
  };
  std::vector<Piece> pieces;
  for (const Download& d : all)
    for (VkDeviceSize off = 0; off < VkDeviceSize(d.bytes); off += kChunk)
      pieces.push_back({d.src, static_cast<char*>(d.dst) + off, off, std::min<VkDeviceSize>(kChunk, VkDeviceSize(d.bytes) - off), {}});
  // On the copy queue where uploads have one: a download then overlaps kernels submitted after it
  // (they wait for it only where they write its buffer), as uploads do.
  const Queue q = ctx_->copy_timeline_on() ? Queue::kCopy : Queue::kCompute;
  for (size_t first = 0; first < pieces.size();) {
    size_t end = first;
    VkDeviceSize batch_bytes = 0;
    while (end < pieces.size() && (end == first || batch_bytes + pieces[end].bytes <= kKeepStaging))
      batch_bytes += pieces[end++].bytes;
    uint64_t value = 0;
    {
      std::lock_guard<std::mutex> lock(mu_);
      reclaim();
      auto give_back = [&] {
        for (size_t i = first; i < end; ++i) give_staging(std::exchange(pieces[i].staging, Allocation{}));
      };
      Stamp after;
      for (size_t i = first; i < end; ++i) {
        auto st = take_staging(pieces[i].bytes, MemoryUse::kReadback);
        if (!st.ok()) {
          give_back();
          return st.status();
        }
        pieces[i].staging = *st;
        // Deferred synchronization: the GPU waits for the last writers of the sources (a kernel,
        // or an upload on the copy queue) and for the staging buffers' last uses.
        after.raise(Stamp{std::max(pieces[i].src->last_write(), st->ready_after),
                          std::max(pieces[i].src->last_copy(), st->ready_after_copy)});
      }
      auto cb = take_command_buffer(q);
      if (!cb.ok()) {
        give_back();
        return cb.status();
      }
      for (size_t i = first; i < end; ++i) {
        VkBufferCopy region{pieces[i].off, 0, pieces[i].bytes};
        vkCmdCopyBuffer(*cb, pieces[i].src->buffer(), pieces[i].staging.buffer, 1, &region);
      }
      // Makes the copied bytes visible to the host once the timeline says the copies are done.
      VkMemoryBarrier to_host = vk_struct<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
      to_host.srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT;
      to_host.dstAccessMask = VK_ACCESS_HOST_READ_BIT;
      vkCmdPipelineBarrier(*cb, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1, &to_host, 0, nullptr, 0, nullptr);
      absl::Status s = check(vkEndCommandBuffer(*cb), "vkEndCommandBuffer (download)");
      absl::StatusOr<uint64_t> v = s.ok() ? ctx_->submit(q, *cb, after, VK_PIPELINE_STAGE_TRANSFER_BIT) : s;
      if (!v.ok()) {
        free_cbs_[q == Queue::kCopy ? 1 : 0].push_back(*cb);
        give_back();
        return v.status();
      }
      value = *v;
      for (size_t i = first; i < end; ++i) {
        if (q == Queue::kCopy) pieces[i].src->note_copy_read(value);
        else pieces[i].src->note_read(value);
      }
      in_flight_.push_back({*cb, Allocation{}, value, q});  // the staging buffers stay with us
    }
    absl::Status w = ctx_->wait(stamp_of(q, value));
    if (w.ok())
      for (size_t i = first; i < end; ++i) support::copy_bytes(pieces[i].dst, pieces[i].staging.mapped, size_t(pieces[i].bytes));
    std::lock_guard<std::mutex> lock(mu_);
    for (size_t i = first; i < end; ++i) {
      (q == Queue::kCopy ? pieces[i].staging.ready_after_copy : pieces[i].staging.ready_after) = value;
      give_staging(std::exchange(pieces[i].staging, Allocation{}));
    }
    if (!w.ok()) return w;
    first = end;
  }
  return absl::OkStatus();
}

}  // namespace kiln::runtime::vk

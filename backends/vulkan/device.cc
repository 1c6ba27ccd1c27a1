#include "backends/vulkan/device.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "backends/vulkan/executable.h"
#include "backends/vulkan/peaks.h"
#include "backends/vulkan/target.h"
#include "runtime/disk_cache.h"
#include "support/options.h"
#include "support/trace.h"

namespace kiln::runtime::vk {
namespace {

const char* type_name(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete GPU";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated GPU";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual GPU";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "CPU";
    default: return "other";
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<VulkanDevice>> VulkanDevice::create() {
  const support::Options env = support::options();
  if (absl::Status s = env.check("KILN_VULKAN_DEVICE"); !s.ok())
    return absl::InvalidArgumentError(absl::StrCat("vulkan: ", s.message()));
  ContextOptions o;
  o.validation = env.vulkan_validation;
  o.device_index = env.vulkan_device;
  o.spin_us = env.vulkan_spin_us;
  o.skip_done_waits = env.vulkan_skip_done_waits;
  o.transfer_queue = env.vulkan_transfer_queue;
  o.batch = env.vulkan_batch;
  o.batch_hold = env.vulkan_batch_hold;
  o.reuse_bytes = env.vulkan_reuse_bytes;
  o.cache_dir = DiskCache::for_backend("vulkan").dir();  // "" when disabled
  auto ctx = Context::create(o);
  if (!ctx.ok()) return ctx.status();
  // Profiles measure the device's peaks before their clock starts, not inside a traced run.
  support::add_trace_start_hook([weak = std::weak_ptr<Context>(*ctx)] {
    if (auto c = weak.lock()) (void)device_peaks(*c);
  });
  std::unique_ptr<VulkanDevice> d(new VulkanDevice(*std::move(ctx)));
  if (absl::Status s = d->transfers_.init(); !s.ok()) return s;
  if (env.debug >= 1) {
    const ir::TargetInfo& t = d->target();
    std::fprintf(stderr,
                 "kiln: vulkan: opened %s: %d multiprocessors, workgroup <= %d, shared %lld KiB, f16 %d i8 %d f64 %d, "
                 "preserve inf/nan f32 %d, denormals f32 %d\n",
                 d->description().c_str(), t.parallelism, t.max_workgroup, (long long)(t.shared_memory >> 10), t.has_f16,
                 t.has_i8, t.has_f64, t.preserve_inf_nan32, t.f32_denormals);
  }
  return d;
}

VulkanDevice::VulkanDevice(std::shared_ptr<Context> ctx)
    : ctx_(std::move(ctx)), target_key_(vk::target_key(ctx_->target)), transfers_(ctx_) {}

std::string VulkanDevice::description() const {
  const Caps& c = ctx_->caps;
  return absl::StrFormat("vulkan (%s, %s, Vulkan %d.%d.%d, device %d, subgroup %d%s)", c.name, type_name(c.type),
                         VK_API_VERSION_MAJOR(c.api_version), VK_API_VERSION_MINOR(c.api_version),
                         VK_API_VERSION_PATCH(c.api_version), c.index, ctx_->target.subgroup_size,
                         std::string(ctx_->dedicated_copy_queue() ? ", copy queue" : "") + (c.validation ? ", validation on" : ""));
}

absl::StatusOr<std::shared_ptr<Buffer>> VulkanDevice::alloc(int64_t bytes) {
  if (bytes < 0) return absl::InvalidArgumentError("vulkan: negative allocation");
  auto a = ctx_->allocate(VkDeviceSize(std::max<int64_t>(bytes, 1)), MemoryUse::kDevice);
  if (!a.ok()) return a.status();
  return std::shared_ptr<Buffer>(new VulkanBuffer(this, ctx_, *a, bytes));
}

absl::Status VulkanDevice::upload(Buffer* dst, const void* src, int64_t bytes) {
  auto b = mine(dst);
  if (!b.ok()) return b.status();
  return transfers_.upload(*b, src, bytes);
}

absl::Status VulkanDevice::download(Buffer* src, void* dst, int64_t bytes) {
  auto b = mine(src);
  if (!b.ok()) return b.status();
  absl::Status s = transfers_.download(*b, dst, bytes);
  return s.ok() ? validation_status() : s;
}

absl::Status VulkanDevice::download_many(const std::vector<Download>& all) {
  std::vector<Transfers::Download> mine_all;
  mine_all.reserve(all.size());
  for (const Download& d : all) {
    auto b = mine(d.src);
    if (!b.ok()) return b.status();
    mine_all.push_back({*b, d.dst, d.bytes});
  }
  absl::Status s = transfers_.download_many(mine_all);
  return s.ok() ? validation_status() : s;
}

absl::StatusOr<std::unique_ptr<Executable>> VulkanDevice::load(const CompiledProgram& c) {
  if (absl::Status s = refuse_collectives(c, "vulkan"); !s.ok()) return s;
  if (absl::Status s = check_consistent(c); !s.ok()) return s;
  if (c.backend != "vulkan")
    return absl::FailedPreconditionError(absl::StrCat("vulkan: cannot load a program compiled for ", c.backend));
  if (c.target_key != target_key_)
    return absl::FailedPreconditionError(absl::StrCat("vulkan: the program was compiled for target [", c.target_key, "]; ",
                                                      ctx_->caps.name, " is [", target_key_, "]"));
  const support::Options env = support::options();
  ExecutableOptions o;
  o.drop_barrier_step = env.vulkan_drop_barrier;
  o.profile = env.debug >= 1 || support::tracing();  // per-kernel timestamps (KILN_DEBUG=1, profiles)
  o.print_times = env.debug >= 1;
  o.max_in_flight = env.vulkan_in_flight;
  o.queue_order = env.vulkan_queue_order;
  o.loop_batch = env.vulkan_loop_batch;
  auto e = VulkanExecutable::create(this, ctx_, c, o);
  if (!e.ok()) return e.status();
  return std::unique_ptr<Executable>(std::move(*e));
}

absl::StatusOr<uint64_t> VulkanDevice::upload_value(Buffer* b) {
  auto v = mine(b);
  if (!v.ok()) return v.status();
  return (*v)->last_copy();
}

absl::Status VulkanDevice::synchronize() {
  absl::Status s = ctx_->wait(ctx_->last_submitted_all());
  return s.ok() ? validation_status() : s;
}

// With KILN_VULKAN_VALIDATION=1 any validation message fails the next read of a result (or
// synchronize), so a test cannot pass while the layer complains.
absl::Status VulkanDevice::validation_status() {
  if (!ctx_->caps.validation) return absl::OkStatus();
  std::vector<std::string> m = ctx_->log.take_unreported();
  if (m.empty()) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("vulkan: the validation layer reported ", m.size(), " message(s); the first: ", m[0]));
}

absl::StatusOr<VulkanBuffer*> VulkanDevice::mine(Buffer* b) {
  auto* vb = dynamic_cast<VulkanBuffer*>(b);
  if (!vb || b->device() != this) return absl::InvalidArgumentError("vulkan: the buffer belongs to another device");
  return vb;
}

}  // namespace kiln::runtime::vk

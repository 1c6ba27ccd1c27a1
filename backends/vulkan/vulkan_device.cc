// The Vulkan Device: memory, transfers and compile(Program) -> VulkanExecutable.
#include "backends/vulkan/vulkan_device.h"

#include <cstdio>
#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "backends/vulkan/buffer.h"
#include "runtime/disk_cache.h"
#include "backends/vulkan/context.h"
#include "backends/vulkan/executable.h"
#include "backends/vulkan/kernel_compiler.h"
#include "backends/vulkan/transfer.h"

namespace kiln::runtime {
namespace vk {
namespace {

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  int r = 0;
  return v && *v && absl::SimpleAtoi(v, &r) ? r : fallback;
}

const char* type_name(VkPhysicalDeviceType t) {
  switch (t) {
    case VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU: return "discrete GPU";
    case VK_PHYSICAL_DEVICE_TYPE_INTEGRATED_GPU: return "integrated GPU";
    case VK_PHYSICAL_DEVICE_TYPE_VIRTUAL_GPU: return "virtual GPU";
    case VK_PHYSICAL_DEVICE_TYPE_CPU: return "CPU";
    default: return "other";
  }
}

class VulkanDevice : public Device {
 public:
  static absl::StatusOr<std::unique_ptr<Device>> create() {
    ContextOptions o;
    o.validation = env_int("KILN_VULKAN_VALIDATION", 0) != 0;
    o.device_index = -1;
    if (const char* idx = std::getenv("KILN_VULKAN_DEVICE"); idx && *idx && !absl::SimpleAtoi(idx, &o.device_index))
      return absl::InvalidArgumentError(absl::StrCat("vulkan: KILN_VULKAN_DEVICE=", idx, " is not a device index"));
    o.cache_dir = DiskCache::for_backend("vulkan").dir();  // "" when disabled
    auto ctx = Context::create(o);
    if (!ctx.ok()) return ctx.status();
    std::unique_ptr<VulkanDevice> d(new VulkanDevice(*std::move(ctx), o.cache_dir));
    if (absl::Status s = d->transfers_.init(); !s.ok()) return s;
    if (env_int("KILN_DEBUG", 0) >= 1) {
      const ir::TargetInfo& t = d->target();
      const FloatControls& fc = d->ctx_->caps.float_controls;
      std::fprintf(stderr,
                   "kiln: vulkan: opened %s: %d multiprocessors, workgroup <= %d, shared %lld KiB, f16 %d i8 %d f64 %d, "
                   "preserve inf/nan f32 %d, denormals f32 %d\n",
                   d->description().c_str(), t.parallelism, t.max_workgroup, (long long)(t.shared_memory >> 10), t.has_f16,
                   t.has_i8, t.has_f64, fc.preserve_inf_nan32, fc.preserve_denorm32);
    }
    return std::unique_ptr<Device>(std::move(d));
  }

  std::string name() const override { return "vulkan"; }
  std::string description() const override {
    const Caps& c = ctx_->caps;
    return absl::StrFormat("vulkan (%s, %s, Vulkan %d.%d.%d, device %d, subgroup %d%s)", c.name, type_name(c.type),
                           VK_API_VERSION_MAJOR(c.api_version), VK_API_VERSION_MINOR(c.api_version),
                           VK_API_VERSION_PATCH(c.api_version), c.index, ctx_->target.subgroup_size,
                           c.validation ? ", validation on" : "");
  }
  const ir::TargetInfo& target() const override { return ctx_->target; }
  bool is_cpu() const { return ctx_->caps.type == VK_PHYSICAL_DEVICE_TYPE_CPU; }
  Context& context() { return *ctx_; }
  const KernelCompiler& compiler() const { return compiler_; }

  absl::StatusOr<std::shared_ptr<Buffer>> alloc(int64_t bytes) override {
    if (bytes < 0) return absl::InvalidArgumentError("vulkan: negative allocation");
    auto a = ctx_->allocate(VkDeviceSize(std::max<int64_t>(bytes, 1)), MemoryUse::kDevice);
    if (!a.ok()) return a.status();
    return std::shared_ptr<Buffer>(new VulkanBuffer(this, ctx_, *a, bytes));
  }
  absl::Status upload(Buffer* dst, const void* src, int64_t bytes) override {
    auto b = mine(dst);
    if (!b.ok()) return b.status();
    return transfers_.upload(*b, src, bytes);
  }
  absl::Status download(Buffer* src, void* dst, int64_t bytes) override {
    auto b = mine(src);
    if (!b.ok()) return b.status();
    absl::Status s = transfers_.download(*b, dst, bytes);
    return s.ok() ? validation_status() : s;
  }
  absl::StatusOr<std::unique_ptr<Executable>> compile(const ir::Program& p) override {
    // GLSL indexes buffers with 32-bit unsigned integers (see dialect_glsl.cc).
    for (const ir::BufferDesc& b : p.buffers)
      if (shape_numel(b.shape) > (int64_t(1) << 32))
        return absl::UnimplementedError(absl::StrCat("vulkan: a tensor of ", shape_numel(b.shape), " elements (", shape_str(b.shape),
                                                     ") is over the Vulkan backend's limit of 2^32 elements per tensor"));
    auto rendered = codegen::gpu::render(p, codegen::gpu::Dialect::kGlsl, ctx_->target);
    if (!rendered.ok()) return rendered.status();
    return compile_rendered(p, *rendered);
  }
  absl::StatusOr<std::unique_ptr<Executable>> compile_rendered(const ir::Program& p, const codegen::gpu::RenderedProgram& r) {
    ExecutableOptions o;
    o.drop_barrier_step = env_int("KILN_VULKAN_DROP_BARRIER", -1);
    o.profile = env_int("KILN_DEBUG", 0) >= 1;
    o.max_in_flight = env_int("KILN_VULKAN_IN_FLIGHT", 64);
    o.queue_order = env_int("KILN_VULKAN_QUEUE_ORDER", 1) != 0;
    auto e = VulkanExecutable::create(this, ctx_, p, r, compiler_, o);
    if (!e.ok()) return e.status();
    return std::unique_ptr<Executable>(std::move(*e));
  }
  absl::Status synchronize() override {
    absl::Status s = ctx_->wait(ctx_->last_submitted());
    return s.ok() ? validation_status() : s;
  }

 private:
  VulkanDevice(std::shared_ptr<Context> ctx, const std::string& cache_dir)
      : ctx_(std::move(ctx)),
        // KILN_VULKAN_SPIRV_OPT=0 skips the SPIRV-Tools optimizer (to tell its effects apart).
        compiler_(DiskCache(cache_dir), device_key(*ctx_),
                  SpirvOptions{ctx_->caps.vulkan13, ctx_->caps.scalar_layout, env_int("KILN_VULKAN_SPIRV_OPT", 1) != 0,
                               ctx_->caps.float_controls}),
        transfers_(ctx_) {}
  static std::string device_key(const Context& c) {
    return absl::StrFormat("%s %04x:%04x driver %x api %x", c.caps.name, c.caps.vendor_id, c.caps.device_id, c.caps.driver_version,
                           c.caps.api_version);
  }
  // With KILN_VULKAN_VALIDATION=1 any validation message fails the next read of a result (or
  // synchronize), so a test cannot pass while the layer complains.
  absl::Status validation_status() {
    if (!ctx_->caps.validation) return absl::OkStatus();
    std::vector<std::string> m = ctx_->log.take_unreported();
    if (m.empty()) return absl::OkStatus();
    return absl::InternalError(absl::StrCat("vulkan: the validation layer reported ", m.size(), " message(s); the first: ", m[0]));
  }
  absl::StatusOr<VulkanBuffer*> mine(Buffer* b) {
    auto* vb = dynamic_cast<VulkanBuffer*>(b);
    if (!vb || b->device() != this) return absl::InvalidArgumentError("vulkan: the buffer belongs to another device");
    return vb;
  }

  std::shared_ptr<Context> ctx_;
  KernelCompiler compiler_;
  Transfers transfers_;
};

VulkanDevice* as_vulkan(Device* d) { return dynamic_cast<VulkanDevice*>(d); }

}  // namespace

std::vector<std::string> validation_messages(Device* d) {
  VulkanDevice* v = as_vulkan(d);
  return v ? v->context().log.snapshot() : std::vector<std::string>{};
}

void clear_validation_messages(Device* d) {
  if (VulkanDevice* v = as_vulkan(d)) v->context().log.clear();
}

absl::StatusOr<std::unique_ptr<Executable>> compile_rendered(Device* d, const ir::Program& p,
                                                             const codegen::gpu::RenderedProgram& rendered) {
  VulkanDevice* v = as_vulkan(d);
  if (!v) return absl::InvalidArgumentError("vulkan: compile_rendered needs a Vulkan device");
  return v->compile_rendered(p, rendered);
}

std::string kernel_cache_path(Device* d, const std::string& glsl) {
  VulkanDevice* v = as_vulkan(d);
  return v ? v->compiler().cache_path(glsl) : "";
}

}  // namespace vk

absl::StatusOr<std::unique_ptr<Device>> create_vulkan_device() { return vk::VulkanDevice::create(); }

bool vulkan_device_is_cpu(Device* d) {
  vk::VulkanDevice* v = vk::as_vulkan(d);
  return !v || v->is_cpu();
}

}  // namespace kiln::runtime

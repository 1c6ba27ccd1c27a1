#include "backends/vulkan/peaks.h"

#include <algorithm>
#include <cstring>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "backends/vulkan/compiler.h"
#include "backends/vulkan/pipeline.h"
#include "backends/vulkan/spirv_compiler.h"
#include "backends/vulkan/vk_status.h"

namespace kiln::runtime::vk {
namespace {

constexpr uint32_t kGroups = 1024, kLocal = 256;
constexpr double kLongEnoughUs = 2000;

const char* kPreamble = R"(#version 460
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
layout(local_size_x = 256) in;
layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Table { uint64_t a[]; };
layout(push_constant) uniform PC { uint64_t table; } pc;
layout(buffer_reference, std430, buffer_reference_align = 16) buffer BufV4 { vec4 v[]; };
layout(buffer_reference, std430, buffer_reference_align = 4) buffer BufF32 { float v[]; };
)";

// table: {src, dst, vec4 count}
const char* kCopy = R"(void main() {
  Table t = Table(pc.table);
  BufV4 src = BufV4(t.a[0]);
  BufV4 dst = BufV4(t.a[1]);
  uint n = uint(t.a[2]);
  uint stride = gl_NumWorkGroups.x * 256u;
  for (uint i = gl_GlobalInvocationID.x; i < n; i += stride) dst.v[i] = src.v[i];
}
)";

// table: {coefficients (2 floats), dst (one float per thread), iterations}
const char* kFma = R"(void main() {
  Table t = Table(pc.table);
  BufF32 k = BufF32(t.a[0]);
  BufF32 dst = BufF32(t.a[1]);
  int n = int(t.a[2]);
  float m = k.v[0], c = k.v[1];
  float x = float(gl_GlobalInvocationID.x) * 1e-9;
  float a0 = x, a1 = x + 1.0, a2 = x + 2.0, a3 = x + 3.0, a4 = x + 4.0, a5 = x + 5.0, a6 = x + 6.0, a7 = x + 7.0;
  for (int i = 0; i < n; ++i) {
    a0 = fma(a0, m, c); a1 = fma(a1, m, c); a2 = fma(a2, m, c); a3 = fma(a3, m, c);
    a4 = fma(a4, m, c); a5 = fma(a5, m, c); a6 = fma(a6, m, c); a7 = fma(a7, m, c);
  }
  dst.v[gl_GlobalInvocationID.x] = a0 + a1 + a2 + a3 + a4 + a5 + a6 + a7;
}
)";

// Owns what one measurement creates; frees it all when it goes.
class Probe {
 public:
  explicit Probe(Context& c) : c_(c) {}
  ~Probe() {
    if (last_) (void)c_.wait(last_);
    for (VkPipeline p : pipelines_) vkDestroyPipeline(c_.device, p, nullptr);
    if (queries_) vkDestroyQueryPool(c_.device, queries_, nullptr);
    if (pool_) vkDestroyCommandPool(c_.device, pool_, nullptr);
    for (Allocation& a : allocations_) c_.release(a, last_);
  }

  absl::Status init() {
    VkCommandPoolCreateInfo pi = vk_struct<VkCommandPoolCreateInfo>(VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO);
    pi.flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT;
    pi.queueFamilyIndex = c_.caps.queue_family;
    KILN_VK_RETURN_IF_ERROR(vkCreateCommandPool(c_.device, &pi, nullptr, &pool_), "vkCreateCommandPool (peaks)");
    VkCommandBufferAllocateInfo ai = vk_struct<VkCommandBufferAllocateInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO);
    ai.commandPool = pool_;
    ai.level = VK_COMMAND_BUFFER_LEVEL_PRIMARY;
    ai.commandBufferCount = 1;
    KILN_VK_RETURN_IF_ERROR(vkAllocateCommandBuffers(c_.device, &ai, &cb_), "vkAllocateCommandBuffers (peaks)");
    VkQueryPoolCreateInfo qi = vk_struct<VkQueryPoolCreateInfo>(VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO);
    qi.queryType = VK_QUERY_TYPE_TIMESTAMP;
    qi.queryCount = 2;
    KILN_VK_RETURN_IF_ERROR(vkCreateQueryPool(c_.device, &qi, nullptr, &queries_), "vkCreateQueryPool (peaks)");
    return absl::OkStatus();
  }

  absl::StatusOr<VkPipeline> pipeline(const std::string& name, const char* body) {
    auto spirv = compile_glsl(name, absl::StrCat(kPreamble, body), spirv_options(c_.target));
    if (!spirv.ok()) return spirv.status();
    auto p = create_compute_pipeline(c_, name, *spirv, kLocal);
    if (!p.ok()) return p.status();
    pipelines_.push_back(*p);
    return *p;
  }

  absl::StatusOr<Allocation> allocate(VkDeviceSize bytes, MemoryUse use) {
    auto a = c_.allocate(bytes, use);
    if (!a.ok()) return a.status();
    allocations_.push_back(*a);
    copy_after_ = std::max(copy_after_, a->ready_after_copy);  // a recycled upload target's last copy
    return *a;
  }

  // GPU microseconds of one dispatch of `p` over `table`.
  absl::StatusOr<double> time(VkPipeline p, const Allocation& table) {
    // The pool resets buffers individually: beginning one again resets it.
    VkCommandBufferBeginInfo bi = vk_struct<VkCommandBufferBeginInfo>(VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO);
    bi.flags = VK_COMMAND_BUFFER_USAGE_ONE_TIME_SUBMIT_BIT;
    KILN_VK_RETURN_IF_ERROR(vkBeginCommandBuffer(cb_, &bi), "vkBeginCommandBuffer (peaks)");
    vkCmdResetQueryPool(cb_, queries_, 0, 2);
    // Host writes of the table before the dispatch reads it; the previous run's writes first.
    VkMemoryBarrier mb = vk_struct<VkMemoryBarrier>(VK_STRUCTURE_TYPE_MEMORY_BARRIER);
    mb.srcAccessMask = VK_ACCESS_HOST_WRITE_BIT | VK_ACCESS_SHADER_WRITE_BIT;
    mb.dstAccessMask = VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT;
    vkCmdPipelineBarrier(cb_, VK_PIPELINE_STAGE_HOST_BIT | VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                         VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0, nullptr, 0, nullptr);
    vkCmdWriteTimestamp(cb_, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, queries_, 0);
    vkCmdBindPipeline(cb_, VK_PIPELINE_BIND_POINT_COMPUTE, p);
    const uint64_t address = table.address;
    vkCmdPushConstants(cb_, c_.pipeline_layout, VK_SHADER_STAGE_COMPUTE_BIT, 0, sizeof address, &address);
    vkCmdDispatch(cb_, kGroups, 1, 1);
    vkCmdWriteTimestamp(cb_, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, queries_, 1);
    KILN_VK_RETURN_IF_ERROR(vkEndCommandBuffer(cb_), "vkEndCommandBuffer (peaks)");
    auto v = c_.submit(Queue::kCompute, cb_, Stamp{0, copy_after_}, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT);
    if (!v.ok()) return v.status();
    last_ = *v;
    if (absl::Status s = c_.wait(*v); !s.ok()) return s;
    uint64_t t[2];
    KILN_VK_RETURN_IF_ERROR(vkGetQueryPoolResults(c_.device, queries_, 0, 2, sizeof t, t, sizeof(uint64_t),
                                                  VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT),
                            "vkGetQueryPoolResults (peaks)");
    const uint32_t bits = c_.caps.timestamp_valid_bits;
    const uint64_t mask = bits >= 64 ? ~uint64_t(0) : (uint64_t(1) << bits) - 1;
    return double((t[1] - t[0]) & mask) * c_.caps.timestamp_period_ns / 1000.0;
  }

  // Best of three runs, after one to warm up.
  absl::StatusOr<double> best_time(VkPipeline p, const Allocation& table) {
    double best = 1e300;
    for (int i = 0; i < 4; ++i) {
      auto us = time(p, table);
      if (!us.ok()) return us.status();
      if (i > 0) best = std::min(best, *us);
    }
    return best;
  }

 private:
  Context& c_;
  VkCommandPool pool_ = VK_NULL_HANDLE;
  VkCommandBuffer cb_ = VK_NULL_HANDLE;
  VkQueryPool queries_ = VK_NULL_HANDLE;
  std::vector<VkPipeline> pipelines_;
  std::vector<Allocation> allocations_;
  uint64_t last_ = 0;
  uint64_t copy_after_ = 0;  // the copy timeline value the allocations' last uploads reached
};

void write_table(const Allocation& table, std::initializer_list<uint64_t> values) {
  std::vector<uint64_t> v(values);
  std::memcpy(table.mapped, v.data(), v.size() * sizeof(uint64_t));
}

absl::StatusOr<support::Peaks> measure(Context& c) {
  if (c.caps.timestamp_valid_bits == 0)
    return absl::UnavailableError("the device's compute queue has no timestamps");
  Probe p(c);
  if (absl::Status s = p.init(); !s.ok()) return s;
  auto copy = p.pipeline("kiln_peak_copy", kCopy);
  if (!copy.ok()) return copy.status();
  auto fma = p.pipeline("kiln_peak_fma", kFma);
  if (!fma.ok()) return fma.status();
  auto table = p.allocate(64, MemoryUse::kTable);
  if (!table.ok()) return table.status();

  support::Peaks peaks;
  // Bandwidth: buffers of growing size until a copy is long enough to time well.
  double copy_us = 0, copy_bytes = 0;
  for (VkDeviceSize bytes = VkDeviceSize(16) << 20; bytes <= (VkDeviceSize(256) << 20); bytes *= 4) {
    auto src = p.allocate(bytes, MemoryUse::kDevice);
    auto dst = p.allocate(bytes, MemoryUse::kDevice);
    if (!src.ok() || !dst.ok()) {
      if (copy_us > 0) break;  // the device has less memory to spare: keep the last size
      return src.ok() ? dst.status() : src.status();
    }
    write_table(*table, {src->address, dst->address, bytes / 16});
    auto us = p.best_time(*copy, *table);
    if (!us.ok()) return us.status();
    copy_us = *us;
    copy_bytes = 2.0 * double(bytes);
    if (copy_us >= kLongEnoughUs) break;
  }
  if (copy_us <= 0) return absl::InternalError("the copy took no time on the device's clock");
  peaks.bytes_per_s = copy_bytes / (copy_us * 1e-6);

  // Arithmetic: the coefficients keep the chains finite (|m| < 1).
  auto coef = p.allocate(2 * sizeof(float), MemoryUse::kTable);
  auto out = p.allocate(VkDeviceSize(kGroups) * kLocal * sizeof(float), MemoryUse::kDevice);
  if (!coef.ok()) return coef.status();
  if (!out.ok()) return out.status();
  const float k[2] = {0.999f, 0.001f};
  std::memcpy(coef->mapped, k, sizeof k);
  double fma_us = 0, flops = 0;
  for (int64_t iterations = 64; iterations <= (int64_t(1) << 20); iterations *= 4) {
    write_table(*table, {coef->address, out->address, uint64_t(iterations)});
    auto us = p.best_time(*fma, *table);
    if (!us.ok()) return us.status();
    fma_us = *us;
    flops = double(kGroups) * kLocal * double(iterations) * 8 * 2;
    if (fma_us >= kLongEnoughUs) break;
  }
  if (fma_us <= 0) return absl::InternalError("the FMA kernel took no time on the device's clock");
  peaks.flops_per_s = flops / (fma_us * 1e-6);
  peaks.launch_floor_us = c.caps.type == VK_PHYSICAL_DEVICE_TYPE_CPU ? 20 : 5;
  peaks.source = absl::StrFormat("measured on the device: a copy of %.0f MiB, an FMA kernel of %.2g flops",
                                 copy_bytes / 2 / (1 << 20), flops);
  return peaks;
}

}  // namespace

support::Peaks device_peaks(Context& c) {
  std::call_once(c.peaks_once, [&] {
    auto p = measure(c);
    if (p.ok()) {
      c.peaks = *p;
    } else {
      c.peaks = support::Peaks{};
      c.peaks.source = absl::StrCat("unknown (measuring them failed: ", p.status().message(),
                                    "); KILN_PEAK_GBPS and KILN_PEAK_GFLOPS set them");
    }
  });
  return support::with_peak_overrides(c.peaks);
}

}  // namespace kiln::runtime::vk

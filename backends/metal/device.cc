// The Metal Device (device.h).
#include "backends/metal/device.h"

#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "backends/metal/compiler.h"
#include "backends/metal/executable.h"
#include "backends/metal/memory.h"
#include "backends/metal/target.h"
#include "runtime/stats.h"

namespace kiln::runtime::metal {
namespace {

// GPU cores of the chip a Metal device names ("Apple M2 Max"), as in its largest configuration
// (binned parts have a few fewer): Metal does not report them, and they only shape how the passes
// split work. 8, the fewest of any Apple GPU with Metal 3, for a name not in the table.
int gpu_cores(const std::string& name) {
  struct Chip {
    const char* name;
    int cores;
  };
  static constexpr Chip kChips[] = {
      {"Apple M1 Ultra", 64}, {"Apple M1 Max", 32}, {"Apple M1 Pro", 16}, {"Apple M1", 8},
      {"Apple M2 Ultra", 76}, {"Apple M2 Max", 38}, {"Apple M2 Pro", 19}, {"Apple M2", 10},
      {"Apple M3 Ultra", 80}, {"Apple M3 Max", 40}, {"Apple M3 Pro", 18}, {"Apple M3", 10},
      {"Apple M4 Max", 40},   {"Apple M4 Pro", 20}, {"Apple M4", 10}};
  for (const Chip& c : kChips)  // longer names first, so "Apple M1" matches only the base chip
    if (absl::StartsWith(name, c.name)) return c.cores;
  return 8;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Device>> MetalDevice::create() {
  auto api = load_api();
  if (!api.ok()) return api.status();
  return create_with(*api);
}

absl::StatusOr<std::unique_ptr<Device>> MetalDevice::create_with(const MetalApi* api) {
  const MetalApi& a = *api;
  Id device = a.create_default_device();
  if (!device) return absl::UnavailableError("metal: no Metal device (MTLCreateSystemDefaultDevice found no GPU)");
  const std::string name = a.device_name(device);
  if (!a.supports_metal3(device)) {
    a.release(device);
    return absl::UnavailableError(
        absl::StrCat("metal: device ", name, " lacks Metal 3 (GPU addresses in argument buffers, which kiln's kernels read)"));
  }
  auto queue = Queue::create(a, device);
  if (!queue.ok()) {
    a.release(device);
    return queue.status();
  }
  const int cores = gpu_cores(name);
  std::string description = absl::StrCat("metal (", name, ", ", cores, " GPU cores, Metal 3, ", a.library, ")");
  return std::unique_ptr<Device>(
      new MetalDevice(a, device, *std::move(queue), metal_target_info(name, cores), std::move(description)));
}

MetalDevice::~MetalDevice() {
  (void)queue_->wait_all();
  queue_.reset();  // buffers still alive keep the queue; the MTLDevice is retained by what it made
  api_.release(device_);
}

absl::StatusOr<std::shared_ptr<Buffer>> MetalDevice::alloc(int64_t bytes) {
  if (bytes < 0) return absl::InvalidArgumentError("metal: negative allocation");
  Id buffer = new_shared_buffer(api_, device_, bytes);
  if (!buffer) return absl::ResourceExhaustedError(absl::StrCat("metal: out of memory allocating ", bytes, " bytes"));
  counters().bytes_allocated += bytes;
  return std::shared_ptr<Buffer>(new MetalBuffer(this, queue_, buffer, bytes));
}

absl::Status MetalDevice::upload(Buffer* dst, const void* src, int64_t bytes) {
  if (dst->device() != this) return absl::InvalidArgumentError("metal: upload into a buffer of another device");
  if (bytes < 0 || bytes > dst->bytes()) return absl::OutOfRangeError("metal: upload larger than the buffer");
  if (bytes == 0) return absl::OkStatus();
  auto* b = static_cast<MetalBuffer*>(dst);
  // Buffers are written once, before anyone holds them; should a run still use this one, the
  // copy waits for it (shared storage: the CPU writes the very memory the GPU reads).
  if (absl::Status s = queue_->wait(b->last_use()); !s.ok()) return s;
  std::memcpy(b->contents(), src, size_t(bytes));
  return absl::OkStatus();
}

absl::Status MetalDevice::download(Buffer* src, void* dst, int64_t bytes) {
  if (src->device() != this) return absl::InvalidArgumentError("metal: download of a buffer of another device");
  if (bytes < 0 || bytes > src->bytes()) return absl::OutOfRangeError("metal: download larger than the buffer");
  if (bytes == 0) return absl::OkStatus();
  auto* b = static_cast<MetalBuffer*>(src);
  if (absl::Status s = queue_->wait(b->last_write()); !s.ok()) return s;
  std::memcpy(dst, b->contents(), size_t(bytes));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Executable>> MetalDevice::load(const CompiledProgram& c) {
  if (absl::Status s = refuse_collectives(c, "metal"); !s.ok()) return s;
  if (absl::Status s = check_consistent(c); !s.ok()) return s;
  const std::string mine = target_key(target_);
  if (c.backend != "metal" || c.target_key != mine)
    return absl::FailedPreconditionError(absl::StrCat("metal: the program was compiled for ", c.backend, " ", c.target_key,
                                                      "; this device is metal ", mine));
  for (const ir::Step& step : c.steps)
    if (step.is_marker()) return absl::UnimplementedError(kMetalNoControl);
  if (!c.kernels.empty() && c.module.empty())
    return absl::InvalidArgumentError(absl::StrCat("metal: the compiled program has ", c.kernels.size(), " kernels and no MSL"));
  auto e = MetalExecutable::create(this, device_, queue_, target_, c);
  if (!e.ok()) return e.status();
  return std::unique_ptr<Executable>(*std::move(e));
}

absl::Status MetalDevice::synchronize() { return queue_->wait_all(); }

}  // namespace kiln::runtime::metal

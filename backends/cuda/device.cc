// The CUDA Device (device.h): opening the GPU, memory and transfers on its stream, and load().
#include "backends/cuda/device.h"

#include "backends/cuda/nccl.h"

#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "backends/cuda/driver_api.h"
#include "backends/cuda/executable.h"
#include "backends/cuda/nccl.h"
#include "backends/cuda/nvrtc.h"
#include "backends/cuda/target.h"
#include "runtime/stats.h"
#include "support/options.h"

namespace kiln::runtime::cuda {
namespace {

int attribute(CUdevice d, CUdevice_attribute a) {
  int v = 0;
  if (api().cuDeviceGetAttribute(&v, a, d) != CUDA_SUCCESS) return 0;
  return v;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Device>> CudaDevice::create() {
  const support::Options opts = support::options();
  if (absl::Status s = opts.check("KILN_CUDA_DEVICE"); !s.ok()) return s;
  return create_at(opts.cuda_device);
}

int CudaDevice::default_ordinal() { return support::options().cuda_device; }

absl::Status CudaDevice::collectives_status() const { return nccl_status(); }

absl::StatusOr<std::unique_ptr<Device>> CudaDevice::create_at(int index) {
  const support::Options opts = support::options();
  auto drv = driver();
  if (!drv.ok()) return drv.status();
  const DriverApi& a = **drv;
  int count = 0;
  if (absl::Status s = cu_check(a.cuDeviceGetCount(&count), "cuDeviceGetCount"); !s.ok()) return s;
  if (index < 0 || index >= count)
    return absl::UnavailableError(absl::StrCat("cuda: device ", index, " was asked for (KILN_CUDA_DEVICE or cuda:N) but there are ",
                                               count, " devices"));
  auto ctx = std::make_unique<Context>();
  if (absl::Status s = cu_check(a.cuDeviceGet(&ctx->device, index), "cuDeviceGet"); !s.ok()) return s;
  const CUdevice d = ctx->device;
  if (absl::Status s = cu_check(a.cuDevicePrimaryCtxRetain(&ctx->ctx, d), "retaining the primary context"); !s.ok())
    return s;
  if (absl::Status s = ctx->make_current(); !s.ok()) return s;
  if (absl::Status s = cu_check(a.cuStreamCreate(&ctx->stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate"); !s.ok())
    return s;
  if (!opts.cuda_copy_stream) {
    ctx->copy_stream = ctx->stream;  // KILN_CUDA_COPY_STREAM=0: uploads queue behind the kernels
  } else if (absl::Status s = cu_check(a.cuStreamCreate(&ctx->copy_stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate (copies)");
             !s.ok()) {
    return s;
  }
  ctx->pool = std::make_unique<MemoryPool>(ctx->stream, ctx->copy_stream, &ctx->compute_seq);
  const int major = attribute(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  const int minor = attribute(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  ctx->cc = major * 10 + minor;
  ctx->shared_optin = attribute(d, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  ctx->max_grid[0] = attribute(d, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X);
  ctx->max_grid[1] = attribute(d, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y);
  ctx->max_grid[2] = attribute(d, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z);
  const int sms = attribute(d, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  ctx->sms = sms;
  ctx->peaks = cuda_peaks(ctx->cc, sms, attribute(d, CU_DEVICE_ATTRIBUTE_CLOCK_RATE),
                          attribute(d, CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE),
                          attribute(d, CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH));
  char name[256] = {0};
  if (a.cuDeviceGetName(name, sizeof(name) - 1, d) != CUDA_SUCCESS) std::snprintf(name, sizeof(name), "device %d", index);
  size_t total = 0;
  if (a.cuDeviceTotalMem(&total, d) != CUDA_SUCCESS) total = 0;
  // NVRTC's version: the compiler the JIT pairs with this device (bench results quote it).
  std::string desc = absl::StrFormat("cuda:%d (%s, sm_%d, %d SMs, %d MiB, driver %d.%d, NVRTC %s)", index, name, ctx->cc, sms,
                                     int64_t(total >> 20), a.driver_version / 1000, a.driver_version % 1000 / 10,
                                     nvrtc_version());
  ir::TargetInfo t = cuda_target_info(sms, ctx->shared_optin, ctx->cc);
  Context* shared = ctx.release();  // lives for the process (context.h)
  return std::unique_ptr<Device>(new CudaDevice(shared, std::move(desc), std::move(t)));
}

absl::StatusOr<std::shared_ptr<Buffer>> CudaDevice::alloc(int64_t bytes) {
  if (bytes < 0) return absl::InvalidArgumentError("cuda: negative allocation");
  if (bytes == 0) return std::make_shared<CudaBuffer>(this, 0, 0, 0, ctx_->pool.get());
  if (absl::Status s = ctx_->make_current(); !s.ok()) return s;
  int64_t size = 0;
  uint64_t seq = 0;
  auto p = ctx_->pool->allocate(bytes, &size, &seq);
  if (!p.ok()) return p.status();
  counters().bytes_allocated += bytes;
  return std::make_shared<CudaBuffer>(this, bytes, *p, size, ctx_->pool.get(), seq);
}

absl::Status CudaDevice::upload(Buffer* dst, const void* src, int64_t bytes) {
  if (bytes > dst->bytes()) return absl::OutOfRangeError("cuda: upload larger than the buffer");
  if (bytes <= 0) return absl::OkStatus();
  auto* b = static_cast<CudaBuffer*>(dst);
  if (absl::Status s = ctx_->make_current(); !s.ok()) return s;
  auto done = Event::create();
  if (!done.ok()) return done.status();
  // On the copy stream, so the upload overlaps the kernels already queued; staged through
  // page-locked memory, so it returns once `src` is copied (the caller may reuse it at once). A
  // recycled block waits for the compute submission its previous user was in.
  std::lock_guard<std::mutex> lock(ctx_->staging.mu);
  if (absl::Status s = ctx_->copy_waits_for_compute(b->recycled_seq()); !s.ok()) return s;
  if (absl::Status s = ctx_->staging.copy(b->ptr(), src, bytes, ctx_->copy_stream); !s.ok()) return s;
  if (absl::Status s = (*done)->record(ctx_->copy_stream); !s.ok()) return s;
  b->writer = *done;
  b->upload = *done;
  return absl::OkStatus();
}

absl::Status CudaDevice::download(Buffer* src, void* dst, int64_t bytes) {
  return download_many({{src, dst, bytes}});
}

absl::Status CudaDevice::download_many(const std::vector<Download>& all) {
  for (const Download& d : all) {
    if (d.src->device() != this) return absl::InvalidArgumentError("cuda: download of a buffer of another device");
    if (d.bytes > d.src->bytes()) return absl::OutOfRangeError("cuda: download larger than the buffer");
  }
  if (absl::Status s = ctx_->make_current(); !s.ok()) return s;
  // On the copy stream after only the work that wrote these buffers, through the page-locked
  // ring (the device copies fill k+1 while the host copies fill k out).
  std::lock_guard<std::mutex> lock(ctx_->staging.mu);
  std::vector<StagingRing::Piece> pieces;
  pieces.reserve(all.size());
  for (const Download& d : all) {
    if (d.bytes <= 0) continue;
    auto* b = static_cast<CudaBuffer*>(d.src);
    if (std::shared_ptr<Event> w = b->writer) {
      if (absl::Status s = w->make_wait(ctx_->copy_stream); !s.ok()) return s;
    }
    pieces.push_back({d.dst, b->ptr(), d.bytes});
  }
  if (pieces.empty()) return absl::OkStatus();
  if (absl::Status s = ctx_->staging.copy_back(pieces, ctx_->copy_stream); !s.ok()) return s;
  // A buffer a run with collectives wrote: those that timed out leave no values to trust.
  for (const Download& d : all)
    if (const auto& o = static_cast<CudaBuffer*>(d.src)->collectives)
      if (absl::Status s = o->get(); !s.ok()) return s;
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Executable>> CudaDevice::load(const CompiledProgram& c) {
  if (absl::Status s = check_consistent(c); !s.ok()) return s;
  const std::string mine = target_key(target_);
  // No cubin for this GPU: a newer GPU JIT-compiles the module's PTX in the driver.
  const bool jit_ptx = c.backend == "cuda" && !accepts_key(target_, c.target_key) && !c.portable_module.empty() &&
                       runs_ptx_of(target_, c.target_key);
  if (c.backend != "cuda" || (!accepts_key(target_, c.target_key) && !jit_ptx))
    return absl::FailedPreconditionError(absl::StrCat(
        "cuda: the program was compiled for ", c.backend, " ", c.target_key, "; this device is cuda ", mine,
        c.backend != "cuda"                ? ""
        : c.portable_module.empty()        ? " (and the program has no PTX for the driver to compile)"
        : !runs_ptx_of(target_, c.target_key) ? " (PTX runs only on its architecture and later ones)"
                                              : ""));
  if (!c.kernels.empty() && c.module.empty())
    return absl::InvalidArgumentError(
        absl::StrCat("cuda: the compiled program has ", c.kernels.size(), " kernels and no module"));
  if (absl::Status s = ctx_->make_current(); !s.ok()) return s;
  std::shared_ptr<Module> module;
  if (!c.kernels.empty()) {
    if (jit_ptx && support::debug_level() >= 1)
      std::fprintf(stderr, "kiln: cuda: no cubin for %s in a program compiled for %s: the driver JIT-compiles its PTX (%zu bytes)\n",
                   mine.c_str(), c.target_key.c_str(), c.portable_module.size());
    auto m = module_for(jit_ptx ? c.portable_module : c.module);
    if (!m.ok()) return m.status();
    module = *std::move(m);
  }
  auto e = CudaExecutable::create(this, ctx_, c, std::move(module));
  if (!e.ok()) return e.status();
  return std::unique_ptr<Executable>(*std::move(e));
}

absl::Status CudaDevice::synchronize() {
  if (absl::Status s = ctx_->make_current(); !s.ok()) return s;
  if (absl::Status s = cu_check(api().cuStreamSynchronize(ctx_->copy_stream), "cuStreamSynchronize (copies)"); !s.ok())
    return s;
  return cu_check(api().cuStreamSynchronize(ctx_->stream), "cuStreamSynchronize");
}

Context* context_of(Device* d) {
  auto* c = dynamic_cast<CudaDevice*>(d);
  return c ? c->context() : nullptr;
}

}  // namespace kiln::runtime::cuda

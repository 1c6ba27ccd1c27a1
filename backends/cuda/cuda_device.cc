// The CUDA device: driver API loaded at run time, NVRTC-compiled modules (cached on disk), memory
// from a stream-ordered pool, and one CUDA graph per executable.
#include <cstdlib>
#include <memory>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "codegen/c_family/gpu_program.h"
#include "backends/cuda/cached_compile.h"
#include "backends/cuda/cuda_context.h"
#include "backends/cuda/cuda_executable.h"
#include "backends/cuda/cuda_target.h"
#include "backends/cuda/driver_api.h"
#include "runtime/device.h"
#include "runtime/stats.h"

namespace kiln::runtime {
namespace cuda {
namespace {

bool keep_ptx() {
  const char* debug = std::getenv("KILN_DEBUG");
  return std::getenv("KILN_DUMP_DIR") || (debug && std::atoi(debug) >= 4);
}

// What sources() shows: the launch of each kernel; the first entry also holds the module
// source and its PTX (every kernel lives in that one translation unit).
std::vector<std::string> describe(const codegen::gpu::RenderedProgram& r, const std::string& ptx) {
  std::vector<std::string> out;
  for (size_t i = 0; i < r.kernels.size(); ++i) {
    const codegen::gpu::KernelSource& k = r.kernels[i];
    std::string s = absl::StrFormat("// %s: grid %dx%dx%d, block %dx%dx%d, %d bytes dynamic shared memory; %s\n", k.name,
                                    k.grid[0], k.grid[1], k.grid[2], k.block[0], k.block[1], k.block[2], k.shared_bytes,
                                    k.strategy);
    if (i == 0) {
      absl::StrAppend(&s, "// ---- CUDA module (all kernels) ----\n", r.module_source);
      if (!ptx.empty()) absl::StrAppend(&s, "\n// ---- PTX ----\n", ptx);
    } else {
      absl::StrAppend(&s, "// (module source and PTX: see kernel 0)\n");
    }
    out.push_back(std::move(s));
  }
  return out;
}

class CudaDevice : public Device {
 public:
  CudaDevice(Context* ctx, std::string description, ir::TargetInfo target)
      : ctx_(ctx), description_(std::move(description)), target_(std::move(target)),
        cache_(DiskCache::for_backend("cuda")) {}
  // The Context is never freed: buffers and executables may be destroyed after the device at
  // process exit, and they still release into its pool.
  ~CudaDevice() override = default;

  std::string name() const override { return "cuda"; }
  std::string description() const override { return description_; }
  const ir::TargetInfo& target() const override { return target_; }

  absl::StatusOr<std::shared_ptr<Buffer>> alloc(int64_t bytes) override {
    if (bytes < 0) return absl::InvalidArgumentError("cuda: negative allocation");
    if (bytes == 0) return std::make_shared<CudaBuffer>(this, 0, 0, 0, ctx_->pool.get());
    if (absl::Status s = ctx_->make_current(); !s.ok()) return s;
    int64_t size = 0;
    auto p = ctx_->pool->allocate(bytes, &size);
    if (!p.ok()) return p.status();
    counters().bytes_allocated += bytes;
    return std::make_shared<CudaBuffer>(this, bytes, *p, size, ctx_->pool.get());
  }

  absl::Status upload(Buffer* dst, const void* src, int64_t bytes) override {
    if (bytes > dst->bytes()) return absl::OutOfRangeError("cuda: upload larger than the buffer");
    if (bytes <= 0) return absl::OkStatus();
    auto* b = static_cast<CudaBuffer*>(dst);
    if (absl::Status s = ctx_->make_current(); !s.ok()) return s;
    // On the device's stream, so runs queued after it see the data; pageable host memory is
    // staged before the call returns, so `src` may be reused at once.
    if (absl::Status s = cu_check(api().cuMemcpyHtoDAsync(b->ptr(), src, size_t(bytes), ctx_->stream), "upload (cuMemcpyHtoDAsync)");
        !s.ok())
      return s;
    if (absl::Status s = ctx_->upload_done->record(ctx_->stream); !s.ok()) return s;
    b->writer = ctx_->upload_done;
    return absl::OkStatus();
  }

  absl::Status download(Buffer* src, void* dst, int64_t bytes) override {
    if (bytes > src->bytes()) return absl::OutOfRangeError("cuda: download larger than the buffer");
    if (bytes <= 0) return absl::OkStatus();
    auto* b = static_cast<CudaBuffer*>(src);
    if (absl::Status s = ctx_->make_current(); !s.ok()) return s;
    // Wait only for the work that wrote this buffer, then copy (the synchronous copy runs on the
    // legacy stream, which does not wait for kiln's non-blocking stream).
    if (std::shared_ptr<Event> w = b->writer) {
      if (absl::Status s = w->wait(); !s.ok()) return s;
    }
    return cu_check(api().cuMemcpyDtoH(dst, b->ptr(), size_t(bytes)), "download (cuMemcpyDtoH)");
  }

  absl::StatusOr<std::unique_ptr<Executable>> compile(const ir::Program& p) override {
    auto rendered = codegen::gpu::render(p, codegen::gpu::Dialect::kCuda, target_);
    if (!rendered.ok()) return rendered.status();
    if (rendered->kernels.size() != p.kernels.size())
      return absl::InternalError(absl::StrCat("cuda: the renderer returned ", rendered->kernels.size(),
                                              " kernels for a program of ", p.kernels.size()));
    if (absl::Status s = ctx_->make_current(); !s.ok()) return s;
    const bool ptx = keep_ptx();
    std::shared_ptr<Module> module;
    std::string ptx_text;
    if (!p.kernels.empty()) {
      auto bin = cached_compile(rendered->module_source, ctx_->cc, int(p.kernels.size()), ptx, cache_);
      if (!bin.ok()) return bin.status();
      auto m = Module::load(bin->cubin);
      if (!m.ok()) return m.status();
      module = *std::move(m);
      ptx_text = std::move(bin->ptx);
    }
    std::vector<LaunchSpec> specs;
    for (const codegen::gpu::KernelSource& k : rendered->kernels) {
      LaunchSpec l;
      l.name = k.name;
      l.buffers = k.buffers;
      for (int i = 0; i < 3; ++i) l.grid[i] = k.grid[i], l.block[i] = k.block[i];
      l.shared_bytes = k.shared_bytes;
      auto fn = module->function(k.name);
      if (!fn.ok()) return fn.status();
      l.fn = *fn;
      specs.push_back(std::move(l));
    }
    std::vector<std::string> sources;
    if (ptx || std::getenv("KILN_DUMP_DIR")) sources = describe(*rendered, ptx_text);
    auto e = CudaExecutable::create(this, ctx_, p, std::move(module), std::move(specs), std::move(sources));
    if (!e.ok()) return e.status();
    return std::unique_ptr<Executable>(*std::move(e));
  }

  absl::Status synchronize() override {
    if (absl::Status s = ctx_->make_current(); !s.ok()) return s;
    return cu_check(api().cuStreamSynchronize(ctx_->stream), "cuStreamSynchronize");
  }

 private:
  friend Context* cuda::context_of(Device* d);
  Context* ctx_;
  std::string description_;
  ir::TargetInfo target_;
  DiskCache cache_;
};

int attribute(CUdevice d, CUdevice_attribute a) {
  int v = 0;
  if (api().cuDeviceGetAttribute(&v, a, d) != CUDA_SUCCESS) return 0;
  return v;
}

absl::StatusOr<std::unique_ptr<Device>> create() {
  auto drv = driver();
  if (!drv.ok()) return drv.status();
  const DriverApi& a = **drv;
  int count = 0, index = 0;
  if (absl::Status s = cu_check(a.cuDeviceGetCount(&count), "cuDeviceGetCount"); !s.ok()) return s;
  if (const char* e = std::getenv("KILN_CUDA_DEVICE"); e && *e) index = std::atoi(e);
  if (index < 0 || index >= count)
    return absl::UnavailableError(absl::StrCat("cuda: KILN_CUDA_DEVICE=", index, " but there are ", count, " devices"));
  auto ctx = std::make_unique<Context>();
  if (absl::Status s = cu_check(a.cuDeviceGet(&ctx->device, index), "cuDeviceGet"); !s.ok()) return s;
  const CUdevice d = ctx->device;
  if (absl::Status s = cu_check(a.cuDevicePrimaryCtxRetain(&ctx->ctx, d), "retaining the primary context"); !s.ok())
    return s;
  if (absl::Status s = ctx->make_current(); !s.ok()) return s;
  if (absl::Status s = cu_check(a.cuStreamCreate(&ctx->stream, CU_STREAM_NON_BLOCKING), "cuStreamCreate"); !s.ok())
    return s;
  ctx->pool = std::make_unique<MemoryPool>(ctx->stream);
  auto ev = Event::create();
  if (!ev.ok()) return ev.status();
  ctx->upload_done = *std::move(ev);
  const int major = attribute(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR);
  const int minor = attribute(d, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR);
  ctx->cc = major * 10 + minor;
  ctx->shared_optin = attribute(d, CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN);
  ctx->max_grid[0] = attribute(d, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X);
  ctx->max_grid[1] = attribute(d, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y);
  ctx->max_grid[2] = attribute(d, CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z);
  const int sms = attribute(d, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT);
  char name[256] = {0};
  if (a.cuDeviceGetName(name, sizeof(name) - 1, d) != CUDA_SUCCESS) std::snprintf(name, sizeof(name), "device %d", index);
  size_t total = 0;
  if (a.cuDeviceTotalMem(&total, d) != CUDA_SUCCESS) total = 0;
  std::string desc = absl::StrFormat("cuda (%s, sm_%d, %d SMs, %d MiB, driver %d.%d, NVRTC %s)", name, ctx->cc, sms,
                                     int64_t(total >> 20), a.driver_version / 1000, a.driver_version % 1000 / 10,
                                     nvrtc_version());
  ir::TargetInfo t = cuda_target_info(sms, ctx->shared_optin, ctx->cc);
  Context* shared = ctx.release();  // lives for the process (see ~CudaDevice)
  return std::unique_ptr<Device>(new CudaDevice(shared, std::move(desc), std::move(t)));
}

}  // namespace

Context* context_of(Device* d) {
  auto* c = dynamic_cast<CudaDevice*>(d);
  return c ? c->ctx_ : nullptr;
}

}  // namespace cuda

absl::StatusOr<std::unique_ptr<Device>> create_cuda_device() { return cuda::create(); }

}  // namespace kiln::runtime

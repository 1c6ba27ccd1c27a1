// The HIP Device (device.h).
#include "backends/hip/device.h"

#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/hip/executable.h"
#include "backends/hip/memory.h"
#include "backends/hip/target.h"
#include "runtime/stats.h"
#include "support/options.h"

namespace kiln::runtime::hip {

absl::StatusOr<std::unique_ptr<Device>> HipDevice::create() {
  // Without the AMD kernel driver's device there is no AMD GPU to find: say so without loading
  // and initializing the ROCm runtime (every process probes the devices it could default to).
  // (KILN_HIP_SKIP_KFD_CHECK=1, a test hook, skips this: tests/hip/runtime_test.cc runs the
  // device against a stand-in libamdhip64 on machines without the amdgpu driver.)
  if (!support::options().hip_skip_kfd_check && ::access("/dev/kfd", F_OK) != 0)
    return absl::UnavailableError("hip: no AMD GPU (no /dev/kfd: the amdgpu kernel driver is not loaded)");
  auto api = load_api();
  if (!api.ok()) return absl::UnavailableError(absl::StrCat("hip: ", api.status().message()));
  const HipApi& a = **api;
  (void)a.hipInit(0);  // without a GPU this fails too; the count below says so
  int count = 0;
  hipError_t e = a.hipGetDeviceCount(&count);
  if (e != hipSuccess || count == 0)
    return absl::UnavailableError(absl::StrCat("hip: no AMD GPU (", a.library, ": hipGetDeviceCount ",
                                               e == hipSuccess ? "found none" : a.hipGetErrorName(e), ")"));
  if (absl::Status s = hip_check(a, a.hipSetDevice(0), "hipSetDevice"); !s.ok()) return s;
  // Read through the ROCm 5 layout of hipDeviceProp_t (hip_api.h); a runtime with another
  // layout shows up as a processor name that is not one.
  std::vector<char> raw(sizeof(hipDeviceProp_t) + 4096, 0);
  auto* props = reinterpret_cast<hipDeviceProp_t*>(raw.data());
  if (absl::Status s = hip_check(a, a.hipGetDeviceProperties(props, 0), "hipGetDeviceProperties"); !s.ok()) return s;
  std::string arch(props->gcnArchName, strnlen(props->gcnArchName, sizeof(props->gcnArchName)));
  const std::string gfx = arch.substr(0, arch.find(':'));  // "gfx90a:sramecc+:xnack-"
  if (gfx.rfind("gfx", 0) != 0 || props->multiProcessorCount <= 0)
    return absl::UnavailableError(absl::StrCat("hip: cannot read the GPU's processor from ", a.library,
                                               " (runtime version ", a.runtime_version, ", processor '", arch, "')"));
  hipStream_t stream = nullptr;
  if (absl::Status s = hip_check(a, a.hipStreamCreateWithFlags(&stream, hipStreamNonBlocking), "hipStreamCreateWithFlags"); !s.ok())
    return s;
  std::string name(props->name, strnlen(props->name, sizeof(props->name)));
  std::string description = absl::StrCat("hip (", name, ", ", gfx, ", ", props->multiProcessorCount, " CUs, ",
                                         props->totalGlobalMem >> 20, " MiB, HIP runtime ", a.runtime_version, ")");
  return std::unique_ptr<Device>(
      new HipDevice(a, stream, hip_target_info(gfx, props->multiProcessorCount), std::move(description)));
}

absl::StatusOr<std::shared_ptr<Buffer>> HipDevice::alloc(int64_t bytes) {
  if (bytes < 0) return absl::InvalidArgumentError("hip: negative allocation");
  void* p = nullptr;
  if (absl::Status s = hip_check(api_, api_.hipMalloc(&p, size_t(std::max<int64_t>(bytes, 1))),
                                 absl::StrCat("allocating ", bytes, " bytes (hipMalloc)"));
      !s.ok())
    return s;
  counters().bytes_allocated += bytes;
  return std::shared_ptr<Buffer>(new HipBuffer(this, api_, bytes, p));
}

absl::Status HipDevice::upload(Buffer* dst, const void* src, int64_t bytes) {
  if (dst->device() != this) return absl::InvalidArgumentError("hip: upload into a buffer of another device");
  if (bytes < 0 || bytes > dst->bytes()) return absl::OutOfRangeError("hip: upload larger than the buffer");
  if (bytes == 0) return absl::OkStatus();
  // A buffer is written once, before anyone holds it: no kernel can be reading it now.
  return hip_check(api_, api_.hipMemcpy(static_cast<HipBuffer*>(dst)->ptr(), src, size_t(bytes), hipMemcpyHostToDevice),
                   "upload (hipMemcpy)");
}

absl::Status HipDevice::download(Buffer* src, void* dst, int64_t bytes) {
  if (src->device() != this) return absl::InvalidArgumentError("hip: download of a buffer of another device");
  if (bytes < 0 || bytes > src->bytes()) return absl::OutOfRangeError("hip: download larger than the buffer");
  if (bytes == 0) return absl::OkStatus();
  auto* b = static_cast<HipBuffer*>(src);
  if (b->writer)
    if (absl::Status s = b->writer->wait(); !s.ok()) return s;
  return hip_check(api_, api_.hipMemcpy(dst, b->ptr(), size_t(bytes), hipMemcpyDeviceToHost), "download (hipMemcpy)");
}

absl::StatusOr<std::unique_ptr<Executable>> HipDevice::load(const CompiledProgram& c) {
  if (absl::Status s = refuse_collectives(c, "hip"); !s.ok()) return s;
  if (absl::Status s = check_consistent(c); !s.ok()) return s;
  const std::string mine = target_key(target_);
  if (c.backend != "hip" || c.target_key != mine)
    return absl::FailedPreconditionError(absl::StrCat("hip: the program was compiled for ", c.backend, " ", c.target_key,
                                                      "; this device is hip ", mine));
  if (!c.kernels.empty() && c.module.empty())
    return absl::InvalidArgumentError(absl::StrCat("hip: the compiled program has ", c.kernels.size(), " kernels and no module"));
  auto e = HipExecutable::create(this, api_, stream_, c);
  if (!e.ok()) return e.status();
  return std::unique_ptr<Executable>(*std::move(e));
}

absl::Status HipDevice::synchronize() { return hip_check(api_, api_.hipStreamSynchronize(stream_), "hipStreamSynchronize"); }

}  // namespace kiln::runtime::hip

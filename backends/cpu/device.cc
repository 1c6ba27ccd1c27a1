// The CPU Device (device.h): the host's target, host memory and transfers, and load()'s checks.
#include "backends/cpu/device.h"

#include <algorithm>
#include <cstring>
#include <thread>

#include "absl/strings/str_cat.h"
#include "backends/cpu/executable.h"
#include "backends/cpu/target.h"
#include "runtime/stats.h"
#include "support/copy_bytes.h"

namespace kiln::runtime::cpu {

absl::StatusOr<std::unique_ptr<Device>> CpuDevice::create() {
  const int threads = int(std::max(1u, std::thread::hardware_concurrency()));
  auto target = host_target(threads);
  if (!target.ok()) return target.status();
  auto key = target_key(*target);
  if (!key.ok()) return key.status();
  // Profiles measure this machine's peaks before their clock starts, not inside a traced run.
  const int width = target->vector_width;
  support::add_trace_start_hook([threads, width] { (void)host_peaks(threads, width); });
  return std::unique_ptr<Device>(new CpuDevice(threads, *std::move(target), *std::move(key)));
}

CpuDevice::CpuDevice(int threads, ir::TargetInfo target, std::string key)
    : pool_(threads), target_(std::move(target)), key_(std::move(key)) {}

std::string CpuDevice::description() const {
  return absl::StrCat("cpu (", pool_.size(), " threads, LLVM ORC JIT for ", target_.cpu_name, ")");
}

absl::StatusOr<std::shared_ptr<Buffer>> CpuDevice::alloc(int64_t bytes) {
  if (bytes < 0) return absl::InvalidArgumentError("cpu: negative allocation");
  void* p = blocks_.take(bytes);
  if (!p) return absl::ResourceExhaustedError(absl::StrCat("cpu: out of memory allocating ", bytes, " bytes"));
  counters().bytes_allocated += bytes;
  return std::make_shared<HostBuffer>(this, bytes, p, &blocks_);
}

absl::Status CpuDevice::upload(Buffer* dst, const void* src, int64_t bytes) {
  if (bytes > dst->bytes()) return absl::OutOfRangeError("cpu: upload larger than the buffer");
  support::copy_bytes(static_cast<HostBuffer*>(dst)->data(), src, size_t(bytes));
  return absl::OkStatus();
}

absl::Status CpuDevice::download(Buffer* src, void* dst, int64_t bytes) {
  if (bytes > src->bytes()) return absl::OutOfRangeError("cpu: download larger than the buffer");
  support::copy_bytes(dst, static_cast<HostBuffer*>(src)->data(), size_t(bytes));
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Executable>> CpuDevice::load(const CompiledProgram& c) {
  if (c.backend != "cpu")
    return absl::FailedPreconditionError(absl::StrCat("cpu: cannot load a program compiled for the '", c.backend, "' backend"));
  if (!key_compatible(c.target_key, key_))
    return absl::FailedPreconditionError(absl::StrCat("cpu: the program was compiled for another CPU (",
                                                      describe_difference(c.target_key, key_), ")"));
  if (absl::Status s = check_consistent(c); !s.ok()) return s;
  return CpuExecutable::load(c, this, &pool_);
}

}  // namespace kiln::runtime::cpu

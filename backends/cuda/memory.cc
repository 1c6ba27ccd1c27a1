// The pool behind memory.h: size classes, reuse, and trimming when the device runs out.
#include "backends/cuda/memory.h"

#include "absl/strings/str_cat.h"
#include "backends/cuda/driver_api.h"

namespace kiln::runtime::cuda {

int64_t MemoryPool::size_class(int64_t bytes) {
  constexpr int64_t kMiB = int64_t(1) << 20;
  if (bytes > kMiB) return (bytes + 2 * kMiB - 1) / (2 * kMiB) * (2 * kMiB);
  int64_t c = 512;
  while (c < bytes) c *= 2;
  return c;
}

absl::StatusOr<CUdeviceptr> MemoryPool::allocate(int64_t bytes, int64_t* size) {
  const int64_t cls = size_class(bytes);
  *size = cls;
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = free_.find(cls); it != free_.end()) {
    CUdeviceptr p = it->second;
    free_.erase(it);
    cached_ -= cls;
    return p;
  }
  CUdeviceptr p = 0;
  CUresult r = api().cuMemAlloc(&p, size_t(cls));
  if (r == CUDA_ERROR_OUT_OF_MEMORY && !free_.empty()) {
    trim_locked();
    r = api().cuMemAlloc(&p, size_t(cls));
  }
  if (r == CUDA_SUCCESS) return p;
  size_t free_bytes = 0, total = 0;
  std::string detail;
  if (api().cuMemGetInfo(&free_bytes, &total) == CUDA_SUCCESS)
    detail = absl::StrCat("; ", free_bytes >> 20, " MiB of ", total >> 20, " MiB free");
  return cu_error(r, absl::StrCat("cuMemAlloc of ", bytes, " bytes", detail));
}

void MemoryPool::release(CUdeviceptr p, int64_t size) {
  std::lock_guard<std::mutex> lock(mu_);
  free_.emplace(size, p);
  cached_ += size;
}

void MemoryPool::trim() {
  std::lock_guard<std::mutex> lock(mu_);
  trim_locked();
}

void MemoryPool::trim_locked() {
  if (free_.empty()) return;
  // Queued work may still use a cached block: wait for it before handing memory back.
  api().cuStreamSynchronize(stream_);
  for (const auto& [size, p] : free_) api().cuMemFree(p);
  free_.clear();
  cached_ = 0;
}

int64_t MemoryPool::cached_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cached_;
}

}  // namespace kiln::runtime::cuda

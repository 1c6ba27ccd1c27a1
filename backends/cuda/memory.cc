// The pool behind memory.h: size classes, reuse, and trimming when the device runs out.
#include "backends/cuda/memory.h"

#include "absl/strings/str_cat.h"
#include "backends/cuda/context.h"
#include "backends/cuda/driver_api.h"

namespace kiln::runtime::cuda {

int64_t MemoryPool::size_class(int64_t bytes) {
  constexpr int64_t kMiB = int64_t(1) << 20;
  if (bytes > kMiB) return (bytes + 2 * kMiB - 1) / (2 * kMiB) * (2 * kMiB);
  int64_t c = 512;
  while (c < bytes) c *= 2;
  return c;
}

absl::StatusOr<CUdeviceptr> MemoryPool::allocate(int64_t bytes, int64_t* size, uint64_t* seq) {
  const int64_t cls = size_class(bytes);
  *size = cls;
  if (seq) *seq = 0;
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = free_.find(cls); it != free_.end()) {
    const Block b = it->second;
    free_.erase(it);
    cached_ -= cls;
    if (seq) *seq = b.seq;
    return b.ptr;
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
  free_.emplace(size, Block{p, compute_seq_->load(std::memory_order_acquire)});
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
  api().cuStreamSynchronize(copy_stream_);
  for (const auto& [size, b] : free_) api().cuMemFree(b.ptr);
  free_.clear();
  cached_ = 0;
}

CudaBuffer::~CudaBuffer() {
  if (!ptr_) return;
  // An upload no run waited for may still be writing: later compute users of the block wait.
  if (!process_exiting()) (void)make_compute_wait(pool_->compute_stream());
  pool_->release(ptr_, size_);
}

absl::Status CudaBuffer::make_compute_wait(CUstream compute) {
  if (!upload || compute_waited.load(std::memory_order_acquire)) return absl::OkStatus();
  if (absl::Status s = upload->make_wait(compute); !s.ok()) return s;
  compute_waited.store(true, std::memory_order_release);
  return absl::OkStatus();
}

int64_t MemoryPool::cached_bytes() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cached_;
}

}  // namespace kiln::runtime::cuda

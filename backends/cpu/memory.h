// CPU memory: buffers in host memory, 64-byte aligned (kernels load whole vectors), and the pool
// that recycles large blocks. Every realize allocates fresh outputs; handing the same pages back
// avoids the kernel zeroing and faulting them in again each time.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>

#include "runtime/device.h"

namespace kiln::runtime::cpu {

// 64-byte aligned host memory (at least 64 bytes), freed with std::free; nullptr when exhausted.
void* aligned_alloc_bytes(int64_t bytes);

// Large blocks freed by buffers, kept for reuse (up to a total); small ones go back to malloc.
class BlockPool {
 public:
  ~BlockPool();
  void* take(int64_t bytes);
  void give(void* p, int64_t bytes);

 private:
  static constexpr int64_t kMinPooled = 1 << 16;
  static constexpr int64_t kMaxCached = int64_t(1) << 31;
  std::mutex mu_;
  std::multimap<int64_t, void*> free_;
  int64_t cached_ = 0;
};

class HostBuffer : public Buffer {
 public:
  HostBuffer(Device* d, int64_t bytes, void* p, BlockPool* pool) : Buffer(d, bytes), p_(p), pool_(pool) {}
  ~HostBuffer() override { pool_->give(p_, bytes()); }
  char* data() const { return static_cast<char*>(p_); }

 private:
  void* p_;
  BlockPool* pool_;
};

}  // namespace kiln::runtime::cpu

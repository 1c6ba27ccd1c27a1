// Host allocation and the block pool of memory.h.
#include "backends/cpu/memory.h"

#include <cstdlib>

namespace kiln::runtime::cpu {

void* aligned_alloc_bytes(int64_t bytes) {
  size_t n = size_t((bytes + 63) / 64 * 64);
  if (n == 0) n = 64;
  return std::aligned_alloc(64, n);
}

BlockPool::~BlockPool() {
  for (auto& [bytes, p] : free_) std::free(p);
}

void* BlockPool::take(int64_t bytes) {
  if (bytes >= kMinPooled) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_.find(bytes);
    if (it != free_.end()) {
      void* p = it->second;
      free_.erase(it);
      cached_ -= bytes;
      return p;
    }
  }
  return aligned_alloc_bytes(bytes);
}

void BlockPool::give(void* p, int64_t bytes) {
  if (bytes >= kMinPooled) {
    std::lock_guard<std::mutex> lock(mu_);
    if (cached_ + bytes <= kMaxCached) {
      free_.emplace(bytes, p);
      cached_ += bytes;
      return;
    }
  }
  std::free(p);
}

}  // namespace kiln::runtime::cpu

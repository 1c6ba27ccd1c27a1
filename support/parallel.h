// parallel_for: runs fn(0) .. fn(n - 1) on up to `threads` threads (0: every hardware thread),
// the calling thread among them, and returns when all are done. For independent work a compiler
// does per kernel (Vulkan compiles each kernel's SPIR-V on its own); fn must be thread-safe.
#pragma once

#include <algorithm>
#include <atomic>
#include <cstddef>
#include <functional>
#include <thread>
#include <vector>

namespace kiln::support {

inline void parallel_for(size_t n, int threads, const std::function<void(size_t)>& fn) {
  size_t t = threads > 0 ? size_t(threads) : std::max<size_t>(1, std::thread::hardware_concurrency());
  t = std::min(t, n);
  if (t <= 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < n; i = next++) fn(i);
  };
  std::vector<std::thread> pool;
  for (size_t k = 1; k < t; ++k) pool.emplace_back(work);
  work();
  for (std::thread& th : pool) th.join();
}

}  // namespace kiln::support

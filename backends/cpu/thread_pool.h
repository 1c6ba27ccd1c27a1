// A fixed pool of worker threads that splits [0, n) into chunks.
#pragma once

#include <condition_variable>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace kiln::runtime::cpu {

class ThreadPool {
 public:
  explicit ThreadPool(int threads);
  ~ThreadPool();
  int size() const { return int(workers_.size()) + 1; }
  // Runs fn(begin, end) over chunks of [0, n) on all threads (the caller included) and waits.
  // Concurrent callers are serialized.
  void parallel_for(int64_t n, int64_t chunk, const std::function<void(int64_t, int64_t)>& fn);

 private:
  void work_loop();
  void drain();

  std::vector<std::thread> workers_;
  std::mutex run_mu_;  // one parallel_for at a time
  std::mutex mu_;
  std::condition_variable cv_, done_cv_;
  const std::function<void(int64_t, int64_t)>* fn_ = nullptr;
  int64_t n_ = 0, chunk_ = 1, next_ = 0;
  int active_ = 0;
  uint64_t generation_ = 0;
  bool stop_ = false;
};

}  // namespace kiln::runtime::cpu

// The worker loop and chunking of thread_pool.h.
#include "backends/cpu/thread_pool.h"

namespace kiln::runtime::cpu {

ThreadPool::ThreadPool(int threads) {
  for (int i = 1; i < threads; ++i) workers_.emplace_back([this] { work_loop(); });
}

ThreadPool::~ThreadPool() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  for (auto& t : workers_) t.join();
}

void ThreadPool::drain() {
  for (;;) {
    int64_t b;
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (next_ >= n_) return;
      b = next_;
      next_ += chunk_;
    }
    int64_t e = b + chunk_ < n_ ? b + chunk_ : n_;
    (*fn_)(b, e);
  }
}

void ThreadPool::work_loop() {
  uint64_t seen = 0;
  for (;;) {
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || generation_ != seen; });
      if (stop_) return;
      seen = generation_;
      ++active_;
    }
    drain();
    {
      std::lock_guard<std::mutex> lock(mu_);
      if (--active_ == 0) done_cv_.notify_all();
    }
  }
}

void ThreadPool::parallel_for(int64_t n, int64_t chunk, const std::function<void(int64_t, int64_t)>& fn) {
  if (n <= 0) return;
  if (workers_.empty() || n <= chunk) {
    fn(0, n);
    return;
  }
  std::lock_guard<std::mutex> run_lock(run_mu_);
  {
    std::lock_guard<std::mutex> lock(mu_);
    fn_ = &fn;
    n_ = n;
    chunk_ = chunk < 1 ? 1 : chunk;
    next_ = 0;
    ++generation_;
  }
  cv_.notify_all();
  drain();
  std::unique_lock<std::mutex> lock(mu_);
  done_cv_.wait(lock, [&] { return active_ == 0 && next_ >= n_; });
  fn_ = nullptr;
}

}  // namespace kiln::runtime::cpu

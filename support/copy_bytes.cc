#include "support/copy_bytes.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <cstring>
#include <mutex>
#include <thread>

#include <unistd.h>

#include "support/options.h"

namespace kiln::support {
namespace {

constexpr size_t kParallelFrom = size_t(4) << 20;  // smaller copies stay on the calling thread
constexpr size_t kPiece = size_t(1) << 20;          // a piece per thread step, 64-byte aligned

// The helper threads: each waits for the next job (a generation count), takes pieces of it until
// none are left, and reports that it is done with it.
class Copiers {
 public:
  explicit Copiers(int helpers) : helpers_(size_t(helpers)) {
    // Kept for the process (never destroyed: see pool()).
    for (int i = 0; i < helpers; ++i) std::thread([this] { loop(); }).detach();
  }

  // Copies with the helpers; false (nothing done) when another caller's copy is running, or in a
  // child process forked after the helpers started (it has none of them).
  bool run(char* dst, const char* src, size_t n) {
    if (getpid() != owner_) return false;
    std::unique_lock<std::mutex> busy(busy_, std::try_to_lock);
    if (!busy) return false;
    {
      std::lock_guard<std::mutex> l(mu_);
      dst_ = dst;
      src_ = src;
      n_ = n;
      next_.store(0);
      pending_ = helpers_;
      ++generation_;
    }
    start_.notify_all();
    work(dst, src, n);
    std::unique_lock<std::mutex> l(mu_);
    done_.wait(l, [&] { return pending_ == 0; });
    return true;
  }

 private:
  void work(char* dst, const char* src, size_t n) {
    const size_t pieces = (n + kPiece - 1) / kPiece;
    for (size_t i = next_++; i < pieces; i = next_++) {
      const size_t at = i * kPiece;
      std::memcpy(dst + at, src + at, std::min(kPiece, n - at));
    }
  }

  void loop() {
    uint64_t seen = 0;
    for (;;) {
      std::unique_lock<std::mutex> l(mu_);
      start_.wait(l, [&] { return generation_ != seen; });
      seen = generation_;
      char* dst = dst_;
      const char* src = src_;
      const size_t n = n_;
      l.unlock();
      work(dst, src, n);
      l.lock();
      if (--pending_ == 0) done_.notify_all();
    }
  }

  const size_t helpers_;
  const pid_t owner_ = getpid();
  std::mutex busy_;  // one job at a time
  std::mutex mu_;
  std::condition_variable start_, done_;
  uint64_t generation_ = 0;
  char* dst_ = nullptr;
  const char* src_ = nullptr;
  size_t n_ = 0, pending_ = 0;
  std::atomic<size_t> next_{0};
};

// Sized by the first large copy's thread count (a later, larger KILN_COPY_THREADS keeps it).
Copiers* pool(int threads) {
  // Leaked on purpose: the helpers may still wait when static destructors run at exit.
  static Copiers* p = new Copiers(threads - 1);
  return p;
}

}  // namespace

int copy_threads() {
  const int set = options().copy_threads;
  if (set > 0) return set;
  return std::clamp(int(std::thread::hardware_concurrency() / 2), 1, 8);
}

void copy_bytes(void* dst, const void* src, size_t n) {
  const int threads = copy_threads();
  if (n < kParallelFrom || threads <= 1 || !pool(threads)->run(static_cast<char*>(dst), static_cast<const char*>(src), n))
    std::memcpy(dst, src, n);
}

}  // namespace kiln::support

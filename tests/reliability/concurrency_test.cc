// Eight threads record and realize at once on the CPU backend: independent graphs, graphs of
// the same structure (one cached executable replayed concurrently), graphs that share lazy
// history, a thread clearing the executable cache meanwhile, the kernel disk cache under
// concurrent writers, and large host copies from every thread. Run under ThreadSanitizer by `bash dev.sh test` (preset tsan).
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <cmath>
#include <filesystem>
#include <latch>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "kiln/kiln.h"
#include "runtime/disk_cache.h"
#include "replay/compile_or_replay.h"
#include "testing/reference.h"
#include "testing/scoped_env.h"

namespace kiln {
namespace {

constexpr int kThreads = 8;
#if defined(__SANITIZE_THREAD__) || defined(__SANITIZE_ADDRESS__)
constexpr int kIters = 4;  // sanitizers slow everything 5-20x
#else
constexpr int kIters = 12;
#endif

// Runs f(thread index) on kThreads threads released together; returns the failures they saw.
std::vector<std::string> run_threads(const std::function<void(int, std::vector<std::string>*)>& f) {
  std::latch start(kThreads);
  std::mutex mu;
  std::vector<std::string> failures;
  std::vector<std::thread> ts;
  for (int t = 0; t < kThreads; ++t)
    ts.emplace_back([&, t] {
      std::vector<std::string> mine;
      start.arrive_and_wait();
      try {
        f(t, &mine);
      } catch (const std::exception& e) {
        mine.push_back(absl::StrCat("thread ", t, " threw: ", e.what()));
      }
      std::lock_guard<std::mutex> lock(mu);
      failures.insert(failures.end(), mine.begin(), mine.end());
    });
  for (auto& t : ts) t.join();
  return failures;
}

void check(::testing::AssertionResult r, const std::string& what, std::vector<std::string>* failures) {
  if (!r) failures->push_back(what + ": " + r.message());
}

// A different graph per thread (kind and shape), each against the interpreter.
TEST(Concurrency, IndependentGraphsOnEightThreads) {
  auto failures = run_threads([](int t, std::vector<std::string>* f) {
    for (int it = 0; it < kIters; ++it) {
      uint32_t seed = uint32_t(1000 * t + it);
      Shape s = {int64_t(t + 2), int64_t(17 + 3 * t + it)};
      Tensor x = testing::random_tensor(s, float32, seed);
      Tensor y;
      switch (t % 4) {
        case 0: y = softmax(x * 1.5, -1); break;
        case 1: y = layer_norm(x, ones({s[1]}), zeros({s[1]})); break;
        case 2: y = relu(matmul(x, testing::random_tensor({s[1], 5}, float32, seed + 7))); break;
        default: y = cast(x.argmax(1), float32) + x.sum({0}).max(); break;
      }
      check(testing::MatchesReference({y}), absl::StrCat("thread ", t, " iteration ", it), f);
    }
  });
  EXPECT_TRUE(failures.empty()) << absl::StrJoin(failures, "\n");
}

// Large uploads and downloads from every thread at once: the host copies of 4 MiB or more split
// among helper threads (support/copy_bytes.h), one caller at a time using them, the others
// copying alone; every thread gets its own bytes back.
TEST(Concurrency, LargeCopiesFromEightThreads) {
  testing::ScopedEnv env({{"KILN_COPY_THREADS", "4"}});  // helpers even on a machine of 2 cores
  auto failures = run_threads([](int t, std::vector<std::string>* f) {
    for (int it = 0; it < 2; ++it) {
      std::vector<float> v(size_t(5) << 18);  // 5 MiB
      for (size_t i = 0; i < v.size(); ++i) v[i] = float(t * 1000 + it) + float(i % 977);
      Tensor x = from_vector(v, {int64_t(v.size())});
      if (x.to_vector<float>() != v) f->push_back(absl::StrCat("thread ", t, " iteration ", it, ": bytes differ"));
    }
  });
  EXPECT_TRUE(failures.empty()) << absl::StrJoin(failures, "\n");
}

// Every thread realizes the same structure with its own data at the same moment: one cached
// executable (or a few, when several threads miss the cache together) replayed concurrently.
TEST(Concurrency, SameStructureReplayedConcurrently) {
  // Warm the executable cache once, then race on it.
  auto model = [](const Tensor& x, const Tensor& w) { return (matmul(x, w).tanh() * 2.0).sum({1}, true) + x.max({1}, true); };
  realize({model(testing::random_tensor({16, 48}, float32, 1), testing::random_tensor({48, 24}, float32, 2))});
  reset_stats();
  auto failures = run_threads([&](int t, std::vector<std::string>* f) {
    for (int it = 0; it < kIters; ++it) {
      uint32_t seed = uint32_t(7919 * t + it);
      Tensor x = testing::random_tensor({16, 48}, float32, seed), w = testing::random_tensor({48, 24}, float32, seed + 1);
      check(testing::MatchesReference({model(x, w)}), absl::StrCat("thread ", t, " iteration ", it), f);
    }
  });
  EXPECT_TRUE(failures.empty()) << absl::StrJoin(failures, "\n");
  Stats s = stats();
  EXPECT_EQ(s.graphs_realized, kThreads * kIters);
  EXPECT_EQ(s.executables_built, 0);
  EXPECT_EQ(s.executable_cache_hits, kThreads * kIters);
  // Cold: every thread misses at once; each result is still right, however many compile.
  replay::clear_executable_cache();
  reset_stats();
  failures = run_threads([&](int t, std::vector<std::string>* f) {
    Tensor x = testing::random_tensor({16, 48}, float32, uint32_t(t)), w = testing::random_tensor({48, 24}, float32, 99);
    check(testing::MatchesReference({model(x, w)}), absl::StrCat("cold thread ", t), f);
  });
  EXPECT_TRUE(failures.empty()) << absl::StrJoin(failures, "\n");
  EXPECT_GE(stats().executables_built, 1);
  EXPECT_LE(stats().executables_built, kThreads);
  EXPECT_EQ(stats().graphs_realized, kThreads);
}

// Threads extend and realize graphs that share unrealized history; some realize the shared
// node itself, so it turns into a buffer while others are collecting graphs through it.
TEST(Concurrency, SharedLazyHistory) {
  for (int round = 0; round < kIters; ++round) {
    Tensor x = testing::random_tensor({40, 30}, float32, uint32_t(round));
    Tensor shared = softmax(x, -1) * 3.0 + 1.0;  // not realized yet
    std::vector<double> xs = x.to_vector<double>();
    auto failures = run_threads([&](int t, std::vector<std::string>* f) {
      if (t % 3 == 0) {
        shared.realize();
        return;
      }
      // Asking whether it is realized while another thread realizes it is fine too.
      bool seen_realized = false;
      for (int k = 0; k < 100; ++k) seen_realized = seen_realized || shared.is_realized();
      (void)seen_realized;
      Tensor y = (shared * double(t)).sum({1});
      std::vector<double> got = y.to_vector<double>();
      for (int r = 0; r < 40; ++r) {  // each softmax row sums to 1: (1 * 3 + 30 * 1) * t
        double want = 33.0 * t;
        if (std::fabs(got[r] - want) > 1e-3 * want)
          f->push_back(absl::StrCat("round ", round, " thread ", t, " row ", r, ": ", got[r], " != ", want));
      }
    });
    EXPECT_TRUE(failures.empty()) << absl::StrJoin(failures, "\n");
    EXPECT_TRUE(shared.is_realized());
    EXPECT_NEAR(shared.sum().item(), 40 * 33.0, 1e-2);
  }
}

// One thread keeps dropping the executable cache while the others realize.
TEST(Concurrency, ClearingTheExecutableCacheWhileOthersRun) {
  std::atomic<bool> done{false};
  std::thread clearer([&] {
    while (!done.load()) {
      replay::clear_executable_cache();
      std::this_thread::yield();
    }
  });
  auto failures = run_threads([](int t, std::vector<std::string>* f) {
    for (int it = 0; it < kIters; ++it) {
      Tensor x = testing::random_tensor({8, int64_t(9 + t % 2)}, float32, uint32_t(31 * t + it));
      check(testing::MatchesReference({exp(x - x.max({1}, true)).sum({1})}), absl::StrCat("thread ", t), f);
    }
  });
  done = true;
  clearer.join();
  EXPECT_TRUE(failures.empty()) << absl::StrJoin(failures, "\n");
}

// The kernel binary cache on disk: eight writers and readers on the same keys never see a torn
// or mixed file (every read is absent or exactly one version that was written).
TEST(Concurrency, KernelDiskCacheUnderConcurrentWriters) {
  std::string dir = ::testing::TempDir() + "/kiln_concurrent_disk_cache_" + std::to_string(::getpid());
  std::filesystem::remove_all(dir);
  runtime::DiskCache cache(dir);
  auto blob = [](int key, int version) { return std::string(size_t(4000 + 37 * key), char('a' + (key * 7 + version) % 26)); };
  ::testing::internal::CaptureStderr();
  auto failures = run_threads([&](int t, std::vector<std::string>* f) {
    for (int it = 0; it < 40; ++it) {
      int key = (t + it) % 4;
      std::string k = absl::StrCat("kernel source ", key);
      if (it % 2 == 0) {
        cache.put(k, blob(key, t));
      } else if (auto got = cache.get(k)) {
        bool known = false;
        for (int v = 0; v < kThreads; ++v) known = known || *got == blob(key, v);
        if (!known) f->push_back(absl::StrCat("thread ", t, " read a blob of ", got->size(), " bytes that nobody wrote"));
      }
    }
  });
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_TRUE(failures.empty()) << absl::StrJoin(failures, "\n");
  EXPECT_EQ(err, "");  // no corrupted or unwritable file was ever seen
  for (int key = 0; key < 4; ++key) EXPECT_TRUE(cache.get(absl::StrCat("kernel source ", key)).has_value());
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace kiln

// support::copy_bytes (support/copy_bytes.h): large copies split among helper threads arrive
// byte for byte, whatever their size and alignment, with KILN_COPY_THREADS at 1 or several, and
// when several callers copy at once (one gets the helpers, the others copy alone; the same
// through uploads under ThreadSanitizer: Concurrency.LargeCopiesFromEightThreads).
#include "support/copy_bytes.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <thread>
#include <vector>

#include "testing/scoped_env.h"

namespace kiln {
namespace {

std::vector<uint8_t> pattern(size_t n, uint32_t seed) {
  std::vector<uint8_t> v(n);
  uint32_t x = seed * 2654435761u + 1;
  for (size_t i = 0; i < n; ++i) {
    x = x * 1664525u + 1013904223u;
    v[i] = uint8_t(x >> 24);
  }
  return v;
}

// Copies `n` bytes from offset `src_off` of a source to offset `dst_off` of a destination and
// checks every byte, and that nothing around the destination range changed.
void check_copy(size_t n, size_t src_off, size_t dst_off, uint32_t seed) {
  std::vector<uint8_t> src = pattern(n + src_off, seed);
  std::vector<uint8_t> dst(n + dst_off + 64, 0xAB);
  support::copy_bytes(dst.data() + dst_off, src.data() + src_off, n);
  for (size_t i = 0; i < dst_off; ++i) ASSERT_EQ(dst[i], 0xAB) << "before the range, at " << i;
  for (size_t i = 0; i < n; ++i) ASSERT_EQ(dst[dst_off + i], src[src_off + i]) << "at " << i << " of " << n;
  for (size_t i = dst_off + n; i < dst.size(); ++i) ASSERT_EQ(dst[i], 0xAB) << "after the range, at " << i;
}

TEST(CopyBytes, EverySizeAndAlignmentArrivesWhole) {
  for (const char* threads : {"1", "3", "8"}) {
    SCOPED_TRACE(::testing::Message() << "KILN_COPY_THREADS=" << threads);
    testing::ScopedEnv env({{"KILN_COPY_THREADS", threads}});
    uint32_t seed = 1;
    for (size_t n : {size_t(0), size_t(1), size_t(4 << 20) - 1, size_t(4 << 20), size_t(4 << 20) + 13, size_t(33 << 20) + 7})
      for (size_t off : {size_t(0), size_t(3)}) check_copy(n, off, 64 - off, seed++);
  }
}

TEST(CopyBytes, CallersOnSeveralThreadsEachGetTheirBytes) {
  testing::ScopedEnv env({{"KILN_COPY_THREADS", "4"}});
  std::vector<std::thread> callers;
  std::vector<int> ok(6, 0);
  for (int t = 0; t < 6; ++t)
    callers.emplace_back([t, &ok] {
      for (int rep = 0; rep < 4; ++rep) {
        const size_t n = (size_t(5) << 20) + size_t(t) * 4097;
        std::vector<uint8_t> src = pattern(n, uint32_t(100 + t * 10 + rep)), dst(n, 0);
        support::copy_bytes(dst.data(), src.data(), n);
        if (dst != src) return;
      }
      ok[size_t(t)] = 1;
    });
  for (std::thread& c : callers) c.join();
  EXPECT_EQ(ok, std::vector<int>(6, 1));
}

// A child forked after the helpers started has none of them: its large copies run on its one
// thread instead of waiting for helpers forever.
TEST(CopyBytes, AForkedChildCopiesAlone) {
  testing::ScopedEnv env({{"KILN_COPY_THREADS", "4"}});
  check_copy(size_t(8) << 20, 0, 0, 7);  // the helpers are running now
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    std::vector<uint8_t> src = pattern(size_t(8) << 20, 9), dst(src.size(), 0);
    support::copy_bytes(dst.data(), src.data(), src.size());
    _exit(dst == src ? 0 : 1);
  }
  int status = 0;
  pid_t done = 0;
  for (int i = 0; i < 400 && done == 0; ++i) {  // up to 20 s
    done = waitpid(child, &status, WNOHANG);
    if (done == 0) usleep(50000);
  }
  if (done == 0) kill(child, SIGKILL), waitpid(child, &status, 0);
  ASSERT_NE(done, 0) << "the forked child's copy did not finish";
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << "the child's bytes differ";
}

TEST(CopyBytes, ThreadsFollowTheSetting) {
  {
    testing::ScopedEnv env({{"KILN_COPY_THREADS", "5"}});
    EXPECT_EQ(support::copy_threads(), 5);
  }
  testing::ScopedEnv env({{"KILN_COPY_THREADS", ""}});
  EXPECT_GE(support::copy_threads(), 1);
  EXPECT_LE(support::copy_threads(), 8);
}

}  // namespace
}  // namespace kiln

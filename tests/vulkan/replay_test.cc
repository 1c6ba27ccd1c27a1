// Replay of one recorded command buffer: values, barriers only on dependency edges (checked by
// the validation layer's synchronization validation), concurrent runs, profiling output.
#include <gtest/gtest.h>

#include <cstdlib>
#include <thread>

#include "runtime/stats.h"
#include "vulkan/vulkan_fixture.h"

namespace kiln::vktest {
namespace {

using ReplayTest = VulkanTest;

// in -> k0: tmp = x + 1 -> k1 (after k0): out0 = tmp * 2;  k2 (independent): out1 = x * 3.
struct Chain {
  explicit Chain(int64_t n) {
    int in = b.input(n), tmp = b.intermediate(n), out0 = b.output(n), out1 = b.output(n);
    b.map("add_one", n, tmp, {in}, "x0 + 1.0", {});
    b.map("times_two", n, out0, {tmp}, "x0 * 2.0", {0});
    b.map("times_three", n, out1, {in}, "x0 * 3.0", {});
  }
  ProgramBuilder b;
};

TEST_F(ReplayTest, ChainOfKernelsComputesValuesAndReplays) {
  const int64_t n = 1000;
  Chain c(n);
  auto compiled = make_compiler(dev_->target())->compile_rendered(c.b.program(), c.b.rendered());
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  ASSERT_EQ(compiled->kernels.size(), 3u);
  ASSERT_EQ(compiled->listings().size(), 3u);  // what the JIT dumps
  auto exe = dev_->load(*compiled);
  ASSERT_TRUE(exe.ok()) << exe.status();
  EXPECT_EQ((*exe)->kernels_per_run(), 3);
  for (int rep = 0; rep < 3; ++rep) {  // the same command buffer, new bindings each time
    std::vector<float> x = iota_floats(n, float(rep * 10));
    auto in = upload(dev_.get(), x);
    auto o0 = dev_->alloc(n * 4), o1 = dev_->alloc(n * 4);
    ASSERT_TRUE(o0.ok() && o1.ok());
    ASSERT_TRUE((*exe)->run({in.get()}, {o0->get(), o1->get()}, {}).ok());
    std::vector<float> r0 = download(dev_.get(), o0->get(), n), r1 = download(dev_.get(), o1->get(), n);
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_EQ(r0[i], (x[i] + 1) * 2) << "rep " << rep << " i " << i;
      ASSERT_EQ(r1[i], x[i] * 3) << "rep " << rep << " i " << i;
    }
  }
}

TEST_F(ReplayTest, MissingBarrierIsReportedBySynchronizationValidation) {
  const int64_t n = 256;
  Chain c(n);
  ::setenv("KILN_VULKAN_DROP_BARRIER", "1", 1);  // step 1 reads what step 0 wrote
  auto exe = compile_and_load(dev_.get(), c.b.program(), c.b.rendered());
  ::unsetenv("KILN_VULKAN_DROP_BARRIER");
  ASSERT_TRUE(exe.ok()) << exe.status();
  auto in = upload(dev_.get(), iota_floats(n, 0));
  auto o0 = dev_->alloc(n * 4), o1 = dev_->alloc(n * 4);
  ASSERT_TRUE(o0.ok() && o1.ok());
  ASSERT_TRUE((*exe)->run({in.get()}, {o0->get(), o1->get()}, {}).ok());
  // In validation mode a validation message fails the next synchronize (or download).
  absl::Status sync = dev_->synchronize();
  EXPECT_EQ(sync.code(), absl::StatusCode::kInternal);
  EXPECT_NE(sync.message().find("the validation layer reported"), std::string::npos) << sync;
  EXPECT_TRUE(dev_->synchronize().ok());  // each message fails one read
  std::vector<std::string> msgs = dev_->validation_messages();
  bool raw = false;
  for (const std::string& m : msgs) raw |= m.find("SYNC-HAZARD-READ-AFTER-WRITE") != std::string::npos;
  EXPECT_TRUE(raw) << "expected SYNC-HAZARD-READ-AFTER-WRITE among " << msgs.size() << " message(s)";
  dev_->clear_validation_messages();
}

TEST_F(ReplayTest, ConcurrentRunsFromSeveralThreads) {
  const int64_t n = 512;
  Chain c(n);
  auto exe = compile_and_load(dev_.get(), c.b.program(), c.b.rendered());
  ASSERT_TRUE(exe.ok()) << exe.status();
  runtime::Executable* e = exe->get();
  runtime::Device* d = dev_.get();
  std::vector<int> failures(4, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int rep = 0; rep < 20; ++rep) {
        std::vector<float> x = iota_floats(n, float(t * 1000 + rep));
        auto in = d->alloc(n * 4), o0 = d->alloc(n * 4), o1 = d->alloc(n * 4);
        if (!in.ok() || !o0.ok() || !o1.ok() || !d->upload(in->get(), x.data(), n * 4).ok() ||
            !e->run({in->get()}, {o0->get(), o1->get()}, {}).ok()) {
          failures[t]++;
          continue;
        }
        std::vector<float> r0(n), r1(n);
        if (!d->download(o0->get(), r0.data(), n * 4).ok() || !d->download(o1->get(), r1.data(), n * 4).ok()) {
          failures[t]++;
          continue;
        }
        for (int64_t i = 0; i < n; ++i)
          if (r0[i] != (x[i] + 1) * 2 || r1[i] != x[i] * 3) {
            failures[t]++;
            break;
          }
      }
    });
  }
  for (auto& th : threads) th.join();
  for (int t = 0; t < 4; ++t) EXPECT_EQ(failures[t], 0) << "thread " << t;
}

TEST_F(ReplayTest, ManyRunsWithoutReadingThenReadAll) {
  // run() does not wait: results are read only at the end, each from its own output buffer.
  // More runs than the executable keeps in flight, so later ones reuse slots.
  const int64_t n = 128;
  const int reps = 150;
  Chain c(n);
  auto exe = compile_and_load(dev_.get(), c.b.program(), c.b.rendered());
  ASSERT_TRUE(exe.ok()) << exe.status();
  std::vector<std::shared_ptr<runtime::Buffer>> keep;
  for (int rep = 0; rep < reps; ++rep) {
    auto in = upload(dev_.get(), iota_floats(n, float(rep)));
    auto o0 = dev_->alloc(n * 4), o1 = dev_->alloc(n * 4);
    ASSERT_TRUE(o0.ok() && o1.ok());
    ASSERT_TRUE((*exe)->run({in.get()}, {o0->get(), o1->get()}, {}).ok());
    keep.push_back(*o0);  // `in` and o1 are dropped while the GPU may still use them
  }
  for (int rep = 0; rep < reps; ++rep) {
    std::vector<float> r = download(dev_.get(), keep[rep].get(), n);
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(r[i], (float(rep) + float(i) + 1) * 2);
  }
}

TEST_F(ReplayTest, WrongBindingsAreErrors) {
  Chain c(64);
  auto exe = compile_and_load(dev_.get(), c.b.program(), c.b.rendered());
  ASSERT_TRUE(exe.ok()) << exe.status();
  auto small = dev_->alloc(16), out = dev_->alloc(256);
  ASSERT_TRUE(small.ok() && out.ok());
  absl::Status s = (*exe)->run({small->get()}, {out->get()}, {});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("the program takes 1 inputs and 2 outputs; the run binds 1 and 1"), std::string::npos) << s;
  s = (*exe)->run({small->get()}, {out->get(), out->get()}, {});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(s.message().find("input 0 holds 16 bytes; the program needs 256"), std::string::npos) << s;
}

TEST_F(ReplayTest, DebugLevelOnePrintsPerKernelGpuTimes) {
  Chain c(256);
  ::setenv("KILN_DEBUG", "1", 1);
  auto exe = compile_and_load(dev_.get(), c.b.program(), c.b.rendered());
  ::unsetenv("KILN_DEBUG");
  ASSERT_TRUE(exe.ok()) << exe.status();
  auto in = upload(dev_.get(), iota_floats(256, 0));
  auto o0 = dev_->alloc(1024), o1 = dev_->alloc(1024);
  ASSERT_TRUE(o0.ok() && o1.ok());
  ::testing::internal::CaptureStderr();
  absl::Status s = (*exe)->run({in.get()}, {o0->get(), o1->get()}, {});
  std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(s.ok()) << s;
  EXPECT_NE(err.find("kernel 'add_one'"), std::string::npos) << err;
  EXPECT_NE(err.find("kernel 'times_two'"), std::string::npos) << err;
  EXPECT_NE(err.find("kernel 'times_three'"), std::string::npos) << err;
  EXPECT_NE(err.find("us GPU"), std::string::npos) << err;
  EXPECT_EQ(download(dev_.get(), o1->get(), 256)[5], 15.0f);
}

}  // namespace
}  // namespace kiln::vktest

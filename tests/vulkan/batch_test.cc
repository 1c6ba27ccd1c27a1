// Batched submission (issue 18, backends/vulkan/context.h): runs issued while the GPU is busy wait
// in a batch and go to the driver as one vkQueueSubmit. Shown by the queue's counters (runs given
// timeline values against vkQueueSubmit calls), values read back, and the validation layer's
// synchronization checks; KILN_VULKAN_BATCH_HOLD=1 makes the batching deterministic (runs wait
// until the batch is full or the host waits), so the counts do not depend on the GPU's speed.
#include <gtest/gtest.h>

#include <chrono>
#include <initializer_list>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "testing/scoped_env.h"
#include "vulkan/vulkan_fixture.h"

namespace kiln::vktest {
namespace {

using testing::ScopedEnv;

// A device made under `env` with a program of one kernel, out = x * 2 over n floats, loaded on it
// and run once (an executable's first run on a CPU device waits for the driver's pipeline
// compiles, so the runs a test counts come after it).
struct Twice {
  Twice(std::initializer_list<std::pair<std::string, std::string>> env, int64_t n) : n(n) {
    {
      ScopedEnv e(env);
      d = make_device(fresh_dir("batch"), &why);
    }
    if (!d) return;
    ProgramBuilder b;
    int in = b.input(n), out = b.output(n);
    b.map("twice", n, out, {in}, "x0 * 2.0", {});
    auto e = compile_and_load(d.get(), b.program(), b.rendered());
    if (!e.ok()) {
      ADD_FAILURE() << e.status();
      d.reset();
      why = "no executable";
      return;
    }
    exe = *std::move(e);
    auto warm_in = d->alloc(n * 4);
    EXPECT_TRUE(warm_in.ok() && run(warm_in->get()) && d->synchronize().ok());
  }
  // Runs the kernel from `in` into a new buffer (nullptr and a test failure if it fails).
  std::shared_ptr<runtime::Buffer> run(runtime::Buffer* in) {
    auto out = d->alloc(n * 4);
    if (!out.ok()) {
      ADD_FAILURE() << out.status();
      return nullptr;
    }
    absl::Status s = exe->run({in}, {out->get()}, {});
    if (!s.ok()) {
      ADD_FAILURE() << s;
      return nullptr;
    }
    return *out;
  }
  void expect_scaled(runtime::Buffer* b, const std::vector<float>& x, float factor) {
    std::vector<float> r = download(d.get(), b, size_t(n));
    for (int64_t i = 0; i < n; ++i) ASSERT_EQ(r[size_t(i)], factor * x[size_t(i)]) << "at " << i;
  }
  int64_t n;
  std::string why;
  std::unique_ptr<runtime::vk::VulkanDevice> d;
  std::unique_ptr<runtime::Executable> exe;
};

// A chain of runs, each reading the output of the one before, waits in the batch: no vkQueueSubmit
// until the host reads the last output; then one submission carries the five runs, ordered (each
// run sees its predecessor's result) and clean under synchronization validation.
TEST(Batch, RunsWaitUntilTheHostWaits) {
  Twice t({{"KILN_VULKAN_BATCH_HOLD", "1"}, {"KILN_VULKAN_BATCH", "16"}}, 4096);
  if (!t.d) GTEST_SKIP() << "no Vulkan device: " << t.why;
  const std::vector<float> x = iota_floats(size_t(t.n), 1);
  std::vector<std::shared_ptr<runtime::Buffer>> bufs{upload(t.d.get(), x)};
  ASSERT_TRUE(t.d->synchronize().ok());
  const uint64_t submits0 = t.d->compute_queue_submits(), values0 = t.d->submissions();
  for (int i = 0; i < 5; ++i) {
    bufs.push_back(t.run(bufs.back().get()));
    ASSERT_TRUE(bufs.back());
  }
  EXPECT_EQ(t.d->compute_queue_submits(), submits0);  // nothing handed to the driver yet
  EXPECT_EQ(t.d->batched_runs(), 5);
  EXPECT_EQ(t.d->submissions(), values0 + 5);         // each run has its own timeline value
  EXPECT_LT(t.d->compute_completed(), values0 + 1);
  t.expect_scaled(bufs.back().get(), x, 32);
  // The five runs as one submission; then the download, on the copy queue where the device has
  // one, else one more compute submission (it waits for the last run's value).
  EXPECT_EQ(t.d->compute_queue_submits(), submits0 + (t.d->copy_timeline_on() ? 1 : 2));
  EXPECT_EQ(t.d->batched_runs(), 0);
  // An earlier output, read after the batch went: its run's value was reached with the batch's.
  t.expect_scaled(bufs[2].get(), x, 4);
  EXPECT_TRUE(t.d->validation_messages().empty());
}

// A full batch goes at once; synchronize() hands over what is left.
TEST(Batch, AFullBatchGoesAtOnce) {
  Twice t({{"KILN_VULKAN_BATCH_HOLD", "1"}, {"KILN_VULKAN_BATCH", "4"}}, 1024);
  if (!t.d) GTEST_SKIP() << "no Vulkan device: " << t.why;
  const std::vector<float> x = iota_floats(size_t(t.n), 3);
  auto in = upload(t.d.get(), x);
  ASSERT_TRUE(t.d->synchronize().ok());
  const uint64_t submits0 = t.d->compute_queue_submits();
  std::vector<std::shared_ptr<runtime::Buffer>> outs;
  for (int i = 0; i < 10; ++i) {
    outs.push_back(t.run(in.get()));
    ASSERT_TRUE(outs.back());
  }
  EXPECT_EQ(t.d->compute_queue_submits(), submits0 + 2);  // runs 1-4 and 5-8
  EXPECT_EQ(t.d->batched_runs(), 2);
  ASSERT_TRUE(t.d->synchronize().ok());
  EXPECT_EQ(t.d->compute_queue_submits(), submits0 + 3);
  EXPECT_EQ(t.d->compute_completed(), t.d->submissions());
  for (auto& o : outs) t.expect_scaled(o.get(), x, 2);
  EXPECT_TRUE(t.d->validation_messages().empty());
}

// KILN_VULKAN_BATCH=1: every run is its own submission.
TEST(Batch, BatchOfOneSubmitsEachRun) {
  Twice t({{"KILN_VULKAN_BATCH_HOLD", "1"}, {"KILN_VULKAN_BATCH", "1"}}, 256);
  if (!t.d) GTEST_SKIP() << "no Vulkan device: " << t.why;
  auto in = upload(t.d.get(), iota_floats(size_t(t.n), 0));
  ASSERT_TRUE(t.d->synchronize().ok());
  const uint64_t submits0 = t.d->compute_queue_submits();
  for (int i = 0; i < 3; ++i) ASSERT_TRUE(t.run(in.get()));
  EXPECT_EQ(t.d->compute_queue_submits(), submits0 + 3);
  EXPECT_EQ(t.d->batched_runs(), 0);
  ASSERT_TRUE(t.d->synchronize().ok());
}

// An upload into a buffer that a waiting run reads must not overtake the run: the run reads the
// old contents, the next run the new ones. Uploads on a queue of their own (or, with "2", the test
// mode's own timeline on the compute queue) make the batch go before the copy is submitted.
TEST(Batch, AnUploadDoesNotOvertakeAWaitingReader) {
  for (const char* mode : {"2", ""}) {
    SCOPED_TRACE(::testing::Message() << "KILN_VULKAN_TRANSFER_QUEUE=" << mode);
    Twice t({{"KILN_VULKAN_BATCH_HOLD", "1"}, {"KILN_VULKAN_TRANSFER_QUEUE", mode}}, 4096);
    if (!t.d) GTEST_SKIP() << "no Vulkan device: " << t.why;
    const std::vector<float> x1 = iota_floats(size_t(t.n), 1), x2 = iota_floats(size_t(t.n), 100);
    auto in = upload(t.d.get(), x1);
    auto o1 = t.run(in.get());
    ASSERT_TRUE(o1);
    EXPECT_EQ(t.d->batched_runs(), 1);
    ASSERT_TRUE(t.d->upload(in.get(), x2.data(), t.n * 4).ok());
    EXPECT_EQ(t.d->batched_runs(), 0);  // handed over before the copy that waits for it
    auto o2 = t.run(in.get());
    ASSERT_TRUE(o2);
    t.expect_scaled(o1.get(), x1, 2);
    t.expect_scaled(o2.get(), x2, 2);
    EXPECT_TRUE(t.d->validation_messages().empty());
  }
}

// Runs that wait in the batch are handed over by the Context's own thread once the GPU has
// room: with KILN_VULKAN_BATCH_HOLD=2 the submitting thread never hands a batch over itself (only
// a full batch or a host wait would), so every run finishing while the host never waits is the
// flusher's doing.
TEST(Batch, TheFlusherHandsOverRunsTheHostNeverWaitsFor) {
  Twice t({{"KILN_VULKAN_BATCH_HOLD", "2"}}, 4096);
  if (!t.d) GTEST_SKIP() << "no Vulkan device: " << t.why;
  const std::vector<float> x = iota_floats(size_t(t.n), 0);
  auto in = upload(t.d.get(), x);
  ASSERT_TRUE(t.d->synchronize().ok());
  std::vector<std::shared_ptr<runtime::Buffer>> outs;
  for (int i = 0; i < 10; ++i) {  // fewer than a batch holds
    outs.push_back(t.run(in.get()));
    ASSERT_TRUE(outs.back());
  }
  const uint64_t last = t.d->submissions();
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (t.d->compute_completed() < last && std::chrono::steady_clock::now() < until)
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  EXPECT_EQ(t.d->compute_completed(), last) << "runs were left waiting in the batch";
  EXPECT_EQ(t.d->batched_runs(), 0);
  for (auto& o : outs) t.expect_scaled(o.get(), x, 2);
  EXPECT_TRUE(t.d->validation_messages().empty());
}

}  // namespace
}  // namespace kiln::vktest

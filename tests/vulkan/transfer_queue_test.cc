// Uploads on a queue of their own (issue 18): where the device has copy engines (NVIDIA), an
// upload is submitted to their queue with a timeline of its own, and a run or a download waits on
// the GPU for the uploads into its own buffers only. Shown by queue counters, the waits each
// submission carried and the timelines' states, never by timing. On a device without copy
// engines (lavapipe in CI) uploads stay on the compute queue; KILN_VULKAN_TRANSFER_QUEUE=2 gives
// them a timeline of their own there too, so the bookkeeping is checked on every machine.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "testing/scoped_env.h"
#include "vulkan/vulkan_fixture.h"

namespace kiln::vktest {
namespace {

using testing::ScopedEnv;

// A device made under `mode` (KILN_VULKAN_TRANSFER_QUEUE, "" for the default), with the
// validation layer or not.
std::unique_ptr<runtime::vk::VulkanDevice> device_with(const char* mode, bool validation, std::string* why) {
  ScopedEnv env({{"KILN_VULKAN_TRANSFER_QUEUE", mode}});
  if (validation) return make_device(fresh_dir("copyq"), why);
  ScopedEnv off({{"KILN_VULKAN_VALIDATION", "0"}, {"KILN_CACHE_DIR", fresh_dir("copyq")}});
  auto d = runtime::vk::VulkanDevice::create();
  if (!d.ok()) {
    *why = std::string(d.status().message());
    return nullptr;
  }
  return *std::move(d);
}

// out = x * 2 over n floats.
struct Twice {
  explicit Twice(int64_t n) {
    int in = b.input(n), out = b.output(n);
    b.map("twice", n, out, {in}, "x0 * 2.0", {});
  }
  ProgramBuilder b;
};

void expect_twice(runtime::vk::VulkanDevice* d, runtime::Buffer* out, const std::vector<float>& x) {
  std::vector<float> r = download(d, out, int64_t(x.size()));
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(r[i], 2 * x[i]) << "at " << i;
}

// Without copy engines (or with KILN_VULKAN_TRANSFER_QUEUE=0) an upload is one compute-queue
// submission per 32 MiB piece, as before; with them, one copy-queue submission and none on compute.
TEST(TransferQueue, UploadsGoToTheirQueue) {
  for (const char* mode : {"", "0"}) {
    SCOPED_TRACE(::testing::Message() << "KILN_VULKAN_TRANSFER_QUEUE=" << mode);
    std::string why;
    auto d = device_with(mode, /*validation=*/false, &why);
    if (!d) {
      GTEST_SKIP() << "no Vulkan device: " << why;
    }
    const bool copies = *mode == 0 && d->has_copy_queue();
    if (*mode == '0') {
      EXPECT_FALSE(d->copy_timeline_on());
    }
    const uint64_t c0 = d->submissions(), t0 = d->copy_submissions();
    auto a = upload(d.get(), iota_floats(1000, 0));
    auto b = upload(d.get(), iota_floats(1000, 5));
    EXPECT_EQ(d->submissions() - c0, copies ? 0u : 2u);
    EXPECT_EQ(d->copy_submissions() - t0, copies ? 2u : 0u);
    EXPECT_EQ(d->description().find(", copy queue") != std::string::npos, copies) << d->description();
    ASSERT_TRUE(d->synchronize().ok());
  }
}

// A run waits on the copy timeline for the upload of its own input, not for a later upload into
// another buffer; a download (on the copy queue as well) waits for the run that wrote its buffer
// and for no copy when no upload wrote it, and a run overwriting a buffer waits for the download
// reading it; a recycled buffer carries its last upload's value to its next user.
TEST(TransferQueue, RunWaitsForItsOwnUploadOnly) {
  std::string why;
  auto d = device_with("2", /*validation=*/true, &why);
  if (!d) GTEST_SKIP() << "no Vulkan device: " << why;
  ASSERT_TRUE(d->copy_timeline_on());
  const int64_t n = 4096;
  Twice t(n);
  auto exe = compile_and_load(d.get(), t.b.program(), t.b.rendered());
  ASSERT_TRUE(exe.ok()) << exe.status();
  auto out = d->alloc(n * 4);
  ASSERT_TRUE(out.ok());
  const std::vector<float> xa = iota_floats(n, 1), xb = iota_floats(n, 7);
  auto a = upload(d.get(), xa);
  auto b = upload(d.get(), xb);
  const uint64_t ta = *d->upload_value(a.get()), tb = *d->upload_value(b.get());
  EXPECT_GT(ta, 0u);
  EXPECT_GT(tb, ta);
  ASSERT_TRUE((*exe)->run({a.get()}, {out->get()}, {}).ok());
  const uint64_t run_a = d->submissions();
  EXPECT_EQ(d->last_compute_waits().copy, ta);
  expect_twice(d.get(), out->get(), xa);
  // The download, on the copy queue too: it waits for the run that wrote `out`, and for no copy
  // (`out` was never uploaded).
  const runtime::vk::Stamp down = d->last_copy_waits();
  EXPECT_EQ(down.compute, run_a);
  EXPECT_EQ(down.copy, 0u);
  const uint64_t download_value = d->copy_submissions();
  ASSERT_TRUE((*exe)->run({b.get()}, {out->get()}, {}).ok());
  // b's upload came before the download: the run waits for the download, which still reads the
  // `out` it is about to overwrite (and so for b's upload as well).
  EXPECT_GT(download_value, tb);
  EXPECT_EQ(d->last_compute_waits().copy, download_value);
  expect_twice(d.get(), out->get(), xb);
  // a's memory goes back to the pool and comes out again as the next buffer of its size class.
  a.reset();
  auto again = d->alloc(n * 4);
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(*d->upload_value(again->get()), ta);
  ASSERT_TRUE(d->synchronize().ok());
  EXPECT_TRUE(d->validation_messages().empty());
}

// Polls `done` for up to ten seconds (the GPU finishing work the host does not wait for).
template <typename F>
bool eventually(F done) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

// Devices with copy engines, the validation layer on, and out = x * 2 loaded; copies held back by
// a test are let go however it ends.
class HeldCopies : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    d = device_with("", /*validation=*/true, &why);
    if (!d) GTEST_SKIP() << "no Vulkan device: " << why;
    if (!d->has_copy_queue()) GTEST_SKIP() << "the device has no copy-engine queue";
    Twice t(n);
    auto e = compile_and_load(d.get(), t.b.program(), t.b.rendered());
    ASSERT_TRUE(e.ok()) << e.status();
    exe = *std::move(e);
  }
  void TearDown() override {
    if (d) (void)d->open_copies();
  }
  const int64_t n = 4096;
  std::unique_ptr<runtime::vk::VulkanDevice> d;
  std::unique_ptr<runtime::Executable> exe;
};

// With copy engines: an upload held back on the copy queue does not hold up a run of other
// buffers (it finishes while the copy timeline has not reached the upload); a run whose input it
// is cannot finish before it, and sees its data once it is let go.
TEST_F(HeldCopies, AnUploadHoldsUpOnlyItsReaders) {
  auto out_a = d->alloc(n * 4), out_c = d->alloc(n * 4);
  ASSERT_TRUE(out_a.ok() && out_c.ok());
  const std::vector<float> xa = iota_floats(n, 1), xc = iota_floats(n, 3);
  auto a = upload(d.get(), xa);
  ASSERT_TRUE(d->hold_copies().ok());
  auto c = upload(d.get(), xc);
  const uint64_t tc = *d->upload_value(c.get());
  ASSERT_TRUE(exe->run({a.get()}, {out_a->get()}, {}).ok());
  const uint64_t run_a = d->submissions();
  EXPECT_TRUE(eventually([&] { return d->compute_completed() >= run_a; }));
  EXPECT_LT(d->copies_completed(), tc);  // the held upload is still pending
  ASSERT_TRUE(exe->run({c.get()}, {out_c->get()}, {}).ok());
  const uint64_t run_c = d->submissions();
  EXPECT_EQ(d->last_compute_waits().copy, tc);
  EXPECT_LT(d->compute_completed(), run_c);  // it waits for the held copy
  ASSERT_TRUE(d->open_copies().ok());
  expect_twice(d.get(), out_a->get(), xa);
  expect_twice(d.get(), out_c->get(), xc);
  EXPECT_GE(d->copies_completed(), tc);
  EXPECT_TRUE(d->validation_messages().empty());
}

// With copy engines: a download held back on the copy queue (the host thread reading it waits)
// does not hold up later kernels that leave its buffer alone: they finish first. A kernel that
// overwrites the buffer waits for the download, which reads the values from before it.
TEST_F(HeldCopies, ADownloadOverlapsLaterKernels) {
  const std::vector<float> xa = iota_floats(n, 1), xb = iota_floats(n, 9);
  auto a = upload(d.get(), xa);
  auto b = upload(d.get(), xb);
  auto out = d->alloc(n * 4), other = d->alloc(n * 4);
  ASSERT_TRUE(out.ok() && other.ok());
  ASSERT_TRUE(exe->run({a.get()}, {out->get()}, {}).ok());
  ASSERT_TRUE(d->synchronize().ok());
  ASSERT_TRUE(d->hold_copies().ok());
  const uint64_t copies0 = d->copy_submissions();
  std::vector<float> read(size_t(n), 0.0f);
  std::thread reader([&] { ASSERT_TRUE(d->download(out->get(), read.data(), n * 4).ok()); });
  ASSERT_TRUE(eventually([&] { return d->copy_submissions() > copies0; }));  // the download is queued
  const uint64_t download_value = d->copy_submissions();
  ASSERT_TRUE(exe->run({b.get()}, {other->get()}, {}).ok());  // leaves `out` alone
  const uint64_t run_other = d->submissions();
  EXPECT_TRUE(eventually([&] { return d->compute_completed() >= run_other; }));
  EXPECT_LT(d->copies_completed(), download_value);  // finished while the download is held
  ASSERT_TRUE(exe->run({b.get()}, {out->get()}, {}).ok());  // overwrites `out`
  const uint64_t run_out = d->submissions();
  EXPECT_EQ(d->last_compute_waits().copy, download_value);
  EXPECT_LT(d->compute_completed(), run_out);
  ASSERT_TRUE(d->open_copies().ok());
  reader.join();
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(read[size_t(i)], 2 * xa[size_t(i)]) << "at " << i;
  expect_twice(d.get(), out->get(), xb);
  expect_twice(d.get(), other->get(), xb);
  EXPECT_TRUE(d->validation_messages().empty());
}

}  // namespace
}  // namespace kiln::vktest

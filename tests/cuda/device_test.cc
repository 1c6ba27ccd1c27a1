// The CUDA device through kiln's API on a GPU: replay, output safety, the warm start, errors.
// Skips where there is no CUDA device. (The op and fusion suites run on "cuda" too, through
// their own ctest entries.)
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "backends/cuda/context.h"
#include "backends/cuda/memory.h"
#include "frontend/lazy.h"
#include "kiln/kiln.h"
#include "replay/compile_or_replay.h"
#include "testing/reference.h"

namespace kiln {
namespace {

class CudaDeviceTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = Device::get("cuda");
    if (!d.ok()) GTEST_SKIP() << d.status().message();
    dev_ = std::make_unique<Device>(*d);
  }
  std::unique_ptr<Device> dev_;
};

std::vector<float> values(int n, float seed) {
  std::vector<float> v(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) v[size_t(i)] = std::sin(seed + 0.01f * float(i));
  return v;
}

TEST_F(CudaDeviceTest, ResultHeldFromTheFirstRealizeSurvivesTheReplay) {
  const int n = 1 << 16;
  auto f = [](const Tensor& x) { return (x * 2.0 + 1.0).tanh() * x.sigmoid(); };
  std::vector<float> x1 = values(n, 0.5f), x2 = values(n, -3.0f);
  Tensor y1 = f(from_vector(x1, {n}, *dev_));
  y1.realize();
  const Stats before = stats();
  Tensor y2 = f(from_vector(x2, {n}, *dev_));
  y2.realize();
  EXPECT_EQ(stats().executable_cache_hits - before.executable_cache_hits, 1) << "the second realize should replay";
  std::vector<float> r1 = y1.to_vector<float>(), r2 = y2.to_vector<float>();
  for (int i = 0; i < n; i += 257) {
    const float want1 = std::tanh(x1[size_t(i)] * 2 + 1) / (1 + std::exp(-x1[size_t(i)])) * 1.0f;
    const float want2 = std::tanh(x2[size_t(i)] * 2 + 1) / (1 + std::exp(-x2[size_t(i)]));
    ASSERT_NEAR(r1[size_t(i)], want1, 1e-5) << "the first result was overwritten at " << i;
    ASSERT_NEAR(r2[size_t(i)], want2, 1e-5) << i;
  }
}

TEST_F(CudaDeviceTest, MatchesTheReferenceOnAFusedGraph) {
  Tensor x = testing::random_tensor({64, 1000}, float32, 7).to(*dev_);
  Tensor w = testing::random_tensor({1000}, float32, 8).to(*dev_);
  Tensor y = (x * w).softmax(1) + x.mean({1}, true);
  EXPECT_MATCHES_REFERENCE({y});
}

TEST_F(CudaDeviceTest, WarmStartCompilesNothing) {
  auto build = [&] {
    Tensor a = testing::random_tensor({300, 77}, float32, 3).to(*dev_);
    return (a.exp() - a.max({1}, true)).sum({1});
  };
  build().realize();  // compiled, or loaded from the disk cache of an earlier test run
  replay::clear_executable_cache();
  const Stats before = stats();
  std::vector<float> r = build().to_vector<float>();
  const Stats after = stats();
  EXPECT_EQ(after.kernels_compiled - before.kernels_compiled, 0) << "a warm start compiled kernels";
  EXPECT_GT(after.kernel_disk_cache_hits - before.kernel_disk_cache_hits, 0);
  EXPECT_EQ(r.size(), 300u);
}

TEST_F(CudaDeviceTest, OutOfMemoryIsAnErrorAndTheProcessContinues) {
  Tensor huge = full({int64_t(1) << 40}, 1.0, float32, *dev_) * 2.0;  // 4 TiB
  try {
    huge.realize();
    ADD_FAILURE() << "a 4 TiB tensor was realized";
  } catch (const Error& e) {
    EXPECT_EQ(e.status().code(), absl::StatusCode::kResourceExhausted) << e.what();
  }
  Tensor small = full({16}, 3.0, float32, *dev_) * 2.0;
  EXPECT_EQ(small.to_vector<float>()[5], 6.0f);
}

TEST_F(CudaDeviceTest, UploadDownloadRoundTrip) {
  std::vector<float> v = values(12345, 1.0f);
  Tensor t = from_vector(v, {12345}, *dev_);
  EXPECT_EQ(t.to_vector<float>(), v);
}

// Uploads go to the copy stream: one issued while kernels are still running completes before
// them (the kernels queued first are a chain of 24 f32 4096^3 matmuls, ~0.17 s on an H100: long
// against a 16 MiB upload even when the staging ring is first allocated then; a chain of 8 once
// finished first on a fresh machine), and a run that reads the uploaded buffer waits for its
// copy and sees its values.
TEST_F(CudaDeviceTest, UploadOverlapsKernelsQueuedBeforeIt) {
  const int64_t n = 4096;
  Tensor a = randn({n, n}, 1, float32, *dev_), w = randn({n, n}, 2, float32, *dev_) * (1.0 / 64);
  auto chain = [&](Tensor x) {
    for (int i = 0; i < 24; ++i) x = matmul(x, w);
    return x;
  };
  chain(a).realize();  // compiled now, so the realize below only launches
  dev_->synchronize();
  Tensor busy = chain(a);
  busy.realize();  // queued: the GPU works on it for a while
  runtime::Device* d = detail::impl_of(*dev_);
  const int64_t count = 4 << 20;  // 16 MiB of floats
  std::vector<float> host = values(int(count), 0.25f);
  auto buf = d->alloc(count * 4);
  ASSERT_TRUE(buf.ok()) << buf.status();
  ASSERT_TRUE(d->upload(buf->get(), host.data(), count * 4).ok());
  auto* uploaded = static_cast<runtime::cuda::CudaBuffer*>(buf->get());
  ASSERT_NE(uploaded->upload, nullptr);
  ASSERT_TRUE(uploaded->upload->wait().ok());
  auto* result = static_cast<runtime::cuda::CudaBuffer*>(detail::node_of(busy)->buffer.get());
  ASSERT_NE(result->writer, nullptr);
  EXPECT_FALSE(result->writer->complete()) << "the upload waited for the kernels queued before it";
  // A run reading the uploaded data sees it.
  Tensor x = detail::from_buffer(*buf, float32, {count});
  std::vector<float> doubled = (x * 2.0).to_vector<float>();
  for (int64_t i = 0; i < count; i += 4099) ASSERT_EQ(doubled[size_t(i)], 2 * host[size_t(i)]) << i;
  std::vector<float> back(static_cast<size_t>(count));
  ASSERT_TRUE(d->download(buf->get(), back.data(), count * 4).ok());
  EXPECT_EQ(back, host);
}

// Several downloads through the staging ring at once: small ones share a staging buffer, a large
// one spans several; each destination gets its own buffer's bytes, and a download of a buffer a
// still-running kernel writes waits for that kernel only.
TEST_F(CudaDeviceTest, SeveralDownloadsShareTheStagingRing) {
  runtime::Device* d = detail::impl_of(*dev_);
  std::vector<std::vector<float>> want = {values(1000, 0.5f), values(3, 1.5f), values(5 << 20, 2.5f), values(77, 3.5f)};
  std::vector<std::shared_ptr<runtime::Buffer>> bufs;
  for (const auto& w : want) {
    auto b = d->alloc(int64_t(w.size() * 4));
    ASSERT_TRUE(b.ok()) << b.status();
    ASSERT_TRUE(d->upload(b->get(), w.data(), int64_t(w.size() * 4)).ok());
    bufs.push_back(*b);
  }
  Tensor x = randn({1 << 20}, 3, float32, *dev_);
  Tensor y = (x * 3.0).exp();
  y.realize();  // queued; downloaded with the others below
  std::vector<std::vector<float>> got(want.size() + 1);
  std::vector<runtime::Device::Download> all;
  for (size_t i = 0; i < want.size(); ++i) {
    got[i].assign(want[i].size(), -1.0f);
    all.push_back({bufs[i].get(), got[i].data(), int64_t(want[i].size() * 4)});
  }
  got.back().assign(size_t(1) << 20, -1.0f);
  all.push_back({detail::node_of(y)->buffer.get(), got.back().data(), int64_t(4) << 20});
  ASSERT_TRUE(d->download_many(all).ok());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(got[i], want[i]) << "buffer " << i;
  EXPECT_EQ(got.back(), y.to_vector<float>());
}

}  // namespace
}  // namespace kiln

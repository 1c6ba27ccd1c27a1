// Vulkan sub-allocation (backends/vulkan/memory_blocks.h): ten thousand live buffers share a few
// VkDeviceMemory blocks, each keeps its own contents, a buffer over half a block gets a block of
// its own, and every block is returned when the device goes away.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "kiln/stats.h"
#include "testing/scoped_env.h"
#include "vulkan/vulkan_fixture.h"

namespace kiln {
namespace {

TEST(VulkanMemory, ManyBuffersShareFewBlocksAndAllAreReturned) {
  const Stats before = stats();
  {
    std::string why;
    auto d = vktest::make_device(vktest::fresh_dir("memory"), &why);
    if (!d) GTEST_SKIP() << why;
    constexpr int kBuffers = 10000;  // well above the 4096-allocation cap drivers often have
    std::vector<std::shared_ptr<runtime::Buffer>> bufs;
    for (int i = 0; i < kBuffers; ++i) bufs.push_back(vktest::upload(d.get(), std::vector<float>(256 + i % 7, float(i))));
    const Stats mid = stats();
    // Device buffers in one 64 MiB block; upload staging and readback memory in one or two more.
    EXPECT_LE(mid.memory_blocks - before.memory_blocks, 4) << mid.to_string();
    EXPECT_GE(mid.memory_block_used_bytes - before.memory_block_used_bytes, int64_t(kBuffers) * 1024);
    EXPECT_LE(mid.memory_block_used_bytes, mid.memory_block_bytes);
    for (int i = 0; i < kBuffers; i += 97) {
      std::vector<float> v = vktest::download(d.get(), bufs[size_t(i)].get(), 256);
      EXPECT_EQ(v.front(), float(i));
      EXPECT_EQ(v.back(), float(i));
    }
    // 40 MiB: more than half a block, so a block of its own.
    const Stats pre_big = stats();
    auto big = vktest::upload(d.get(), std::vector<float>(size_t(10) << 20, 1.5f));
    const Stats with_big = stats();
    EXPECT_GE(with_big.memory_blocks, pre_big.memory_blocks + 1);
    EXPECT_GE(with_big.memory_block_bytes - pre_big.memory_block_bytes, int64_t(40) << 20);
    EXPECT_EQ(vktest::download(d.get(), big.get(), 4)[3], 1.5f);
  }
  const Stats end = stats();
  EXPECT_EQ(end.memory_blocks, before.memory_blocks) << end.to_string();
  EXPECT_EQ(end.memory_block_bytes, before.memory_block_bytes);
  EXPECT_EQ(end.memory_block_used_bytes, before.memory_block_used_bytes);
}

// A freed device buffer goes back to the device's pool and comes out again for the next buffer of
// its size class (stream-ordered reuse: no device allocation in a replay loop), unless
// KILN_VULKAN_REUSE_BYTES is smaller than it.
TEST(VulkanMemory, FreedBuffersAreReusedWithinTheReuseBudget) {
  for (const char* budget : {"", "1M"}) {
    SCOPED_TRACE(::testing::Message() << "KILN_VULKAN_REUSE_BYTES=" << budget);
    std::string why;
    std::unique_ptr<runtime::vk::VulkanDevice> d;
    {
      testing::ScopedEnv env({{"KILN_VULKAN_REUSE_BYTES", budget}});
      d = vktest::make_device(vktest::fresh_dir("reuse"), &why);
    }
    if (!d) GTEST_SKIP() << why;
    const int64_t bytes = int64_t(4) << 20;  // over the 1M budget
    auto a = d->alloc(bytes);
    ASSERT_TRUE(a.ok());
    a->reset();
    const int64_t allocated = stats().bytes_allocated;
    auto b = d->alloc(bytes);
    ASSERT_TRUE(b.ok());
    EXPECT_EQ(stats().bytes_allocated - allocated, *budget == 0 ? 0 : bytes) << "4 MiB allocated again or not";
  }
}

// Several downloads go in one command buffer and one submission: the host waits once, and the
// copies run together; the values are those of one download each.
TEST(VulkanTransfers, SeveralDownloadsAreOneSubmission) {
  std::string why;
  auto d = vktest::make_device(vktest::fresh_dir("download_many"), &why);
  if (!d) GTEST_SKIP() << why;
  std::vector<std::shared_ptr<runtime::Buffer>> bufs;
  std::vector<std::vector<float>> want;
  for (int i = 0; i < 3; ++i) {
    want.push_back(std::vector<float>(size_t(1000 + 500 * i), float(i) + 0.25f));
    bufs.push_back(vktest::upload(d.get(), want.back()));
  }
  want.push_back(std::vector<float>(size_t(10) << 20, 2.5f));  // 40 MiB: two staging pieces
  bufs.push_back(vktest::upload(d.get(), want.back()));
  std::vector<std::vector<float>> got(want.size());
  std::vector<runtime::Device::Download> all;
  for (size_t i = 0; i < want.size(); ++i) {
    got[i].assign(want[i].size(), -1.0f);
    all.push_back({bufs[i].get(), got[i].data(), int64_t(want[i].size() * sizeof(float))});
  }
  // Downloads go to the copy queue where uploads do (a device with copy engines).
  auto queue_submissions = [&] { return d->copy_timeline_on() ? d->copy_submissions() : d->submissions(); };
  const uint64_t before = queue_submissions();
  ASSERT_TRUE(d->download_many(all).ok());
  EXPECT_EQ(queue_submissions() - before, 1u);
  EXPECT_EQ(got, want);
  // One at a time: a submission (and a host wait) each.
  const uint64_t before_single = queue_submissions();
  for (size_t i = 0; i < 3; ++i) EXPECT_EQ(vktest::download(d.get(), bufs[i].get(), want[i].size()), want[i]);
  EXPECT_EQ(queue_submissions() - before_single, 3u);
  // A request larger than its buffer is refused before anything is queued.
  std::vector<float> small(8);
  all = {{bufs[0].get(), small.data(), int64_t(1) << 30}};
  EXPECT_EQ(d->download_many(all).code(), absl::StatusCode::kOutOfRange);
}

}  // namespace
}  // namespace kiln

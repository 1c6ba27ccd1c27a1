// Vulkan sub-allocation (backends/vulkan/memory_blocks.h): thousands of live buffers share a few
// VkDeviceMemory blocks, each keeps its own contents, a buffer over half a block gets a block of
// its own, and every block is returned when the device goes away.
#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "kiln/stats.h"
#include "vulkan/vulkan_fixture.h"

namespace kiln {
namespace {

TEST(VulkanMemory, ManyBuffersShareFewBlocksAndAllAreReturned) {
  const Stats before = stats();
  {
    std::string why;
    auto d = vktest::make_device(vktest::fresh_dir("memory"), &why);
    if (!d) GTEST_SKIP() << why;
    constexpr int kBuffers = 3000;  // above the 4096-allocation cap once staging is counted too
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

}  // namespace
}  // namespace kiln

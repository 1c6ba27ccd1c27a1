// The sub-allocator's placement rules (backends/vulkan/memory_blocks.h), on a real VkDevice: ranges
// at the requested alignment, neighbours coalesced on free so a range as large as the block fits
// again, a block returned as soon as nothing lives in it, a buffer over half a block in a block of
// its own, and memory for shader-addressed buffers kept apart from memory allocated without
// VK_MEMORY_ALLOCATE_DEVICE_ADDRESS_BIT (one memory type serves both on lavapipe and integrated
// GPUs: a device buffer bound to a staging block is a validation error).
#include <gtest/gtest.h>

#include "backends/vulkan/context.h"
#include "backends/vulkan/memory_blocks.h"
#include "vulkan/vulkan_fixture.h"

namespace kiln {
namespace {

using runtime::vk::MemoryBlocks;

class MemoryBlocksTest : public vktest::VulkanTest {
 protected:
  void SetUp() override {
    VulkanTest::SetUp();
    if (!dev_) return;
    runtime::vk::Context& ctx = dev_->context_for_tests();
    device_ = ctx.device;
    // A host-visible type: staging and (on unified memory) device buffers both come from such.
    for (uint32_t i = 0; i < ctx.memory_properties.memoryTypeCount; ++i)
      if (ctx.memory_properties.memoryTypes[i].propertyFlags & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT) {
        type_ = i;
        break;
      }
  }
  void TearDown() override {
    if (dev_) blocks_.free_all(device_);
    VulkanTest::TearDown();
  }
  MemoryBlocks::Range take(VkDeviceSize size, VkDeviceSize align = 256, bool address = true) {
    auto r = blocks_.allocate(device_, type_, size, align, kBlock, /*host_visible=*/true, address);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : MemoryBlocks::Range{};
  }
  static constexpr VkDeviceSize kBlock = VkDeviceSize(1) << 20;
  VkDevice device_ = VK_NULL_HANDLE;
  uint32_t type_ = 0;
  MemoryBlocks blocks_;
};

TEST_F(MemoryBlocksTest, RangesAreAlignedAndShareABlock) {
  MemoryBlocks::Range a = take(100), b = take(1000, 4096), c = take(10, 64);
  EXPECT_EQ(a.block, b.block);
  EXPECT_EQ(b.block, c.block);
  EXPECT_EQ(b.offset % 4096, 0u);
  EXPECT_EQ(c.offset % 64, 0u);
  EXPECT_GE(b.offset, a.offset + a.size);  // no overlap
  EXPECT_GE(c.offset, 100u);
  EXPECT_EQ(blocks_.stats().blocks, 1);
  EXPECT_EQ(blocks_.stats().used_bytes, 1110);
  EXPECT_NE(a.mapped, nullptr);  // host-visible blocks are mapped
}

TEST_F(MemoryBlocksTest, FreedNeighboursCoalesceAndAnEmptyBlockIsReturned) {
  MemoryBlocks::Range a = take(kBlock / 4), b = take(kBlock / 4), c = take(kBlock / 4);
  ASSERT_EQ(blocks_.stats().blocks, 1);
  blocks_.free(device_, a);
  blocks_.free(device_, b);
  // a and b merged: half a block fits where they were, still in the one block.
  MemoryBlocks::Range d = take(kBlock / 2);
  EXPECT_EQ(d.block, c.block);
  EXPECT_EQ(d.offset, 0u);
  blocks_.free(device_, c);
  blocks_.free(device_, d);
  EXPECT_EQ(blocks_.stats().blocks, 0);  // empty: its memory went back to the driver
  EXPECT_EQ(blocks_.stats().block_bytes, 0);
}

TEST_F(MemoryBlocksTest, ABufferOverHalfABlockGetsItsOwn) {
  MemoryBlocks::Range small = take(1024), big = take(kBlock / 2 + 1);
  EXPECT_NE(small.block, big.block);
  EXPECT_EQ(big.offset, 0u);
  MemoryBlocks::Range next = take(1024);  // never placed beside the big one
  EXPECT_EQ(next.block, small.block);
  EXPECT_EQ(blocks_.stats().block_bytes, int64_t(kBlock + kBlock / 2 + 1));
}

TEST_F(MemoryBlocksTest, AddressedBuffersNeverLandInBlocksWithoutAddresses) {
  MemoryBlocks::Range staging = take(4096, 256, /*address=*/false);
  MemoryBlocks::Range device = take(4096, 256, /*address=*/true);
  EXPECT_NE(staging.block, device.block);
  // A buffer without addresses may use either kind.
  MemoryBlocks::Range more_staging = take(4096, 256, /*address=*/false);
  EXPECT_TRUE(more_staging.block == staging.block || more_staging.block == device.block);
  MemoryBlocks::Range more_device = take(4096, 256, /*address=*/true);
  EXPECT_EQ(more_device.block, device.block);
}

}  // namespace
}  // namespace kiln

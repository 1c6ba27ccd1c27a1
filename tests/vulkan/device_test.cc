// Device selection, TargetInfo, and the unavailable paths.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "runtime/device.h"
#include "runtime/registry.h"
#include "testing/scoped_env.h"
#include "vulkan/vulkan_fixture.h"

namespace kiln::vktest {
namespace {

using DeviceTest = VulkanTest;

using testing::ScopedEnv;

TEST_F(DeviceTest, TargetInfoComesFromTheDevice) {
  const ir::TargetInfo& t = dev_->target();
  EXPECT_EQ(t.name, "vulkan");
  EXPECT_EQ(dev_->name(), "vulkan");
  EXPECT_GE(t.subgroup_size, 1);
  EXPECT_EQ(t.subgroup_size & (t.subgroup_size - 1), 0) << "subgroup size " << t.subgroup_size;
  EXPECT_GE(t.max_workgroup, 128);
  EXPECT_GE(t.shared_memory, 16 * 1024);
  EXPECT_GT(t.max_buffer_range, 0);
  EXPECT_GE(t.parallelism, 1);
  EXPECT_EQ(t.max_fused_row, 8192);
  EXPECT_TRUE(t.has_i64);
  EXPECT_EQ(t.is_gpu, !dev_->is_emulated());
  EXPECT_NE(dev_->description().find("validation on"), std::string::npos) << dev_->description();
}

TEST_F(DeviceTest, LavapipeIsNeverTheDefaultDevice) {
  if (!dev_->is_emulated()) GTEST_SKIP() << "a GPU Vulkan device: " << dev_->description();
  // With nothing else in the build (no CPU backend) the emulated device is the only choice.
  bool other = false;
  for (const std::string& name : runtime::known_device_names()) other |= name != "vulkan" && runtime::get_device(name).ok();
  if (!other) GTEST_SKIP() << "no device but lavapipe in this build";
  runtime::Device* best = runtime::best_device();
  ASSERT_NE(best, nullptr);
  EXPECT_NE(best->name(), "vulkan") << best->description();
}

TEST_F(DeviceTest, DeviceIndexOverride) {
  {
    ScopedEnv idx({{"KILN_VULKAN_DEVICE", "0"}});
    std::string why;
    auto d = make_device(fresh_dir("idx"), &why);
    ASSERT_NE(d, nullptr) << why;
    EXPECT_NE(d->description().find("device 0"), std::string::npos) << d->description();
  }
  {
    ScopedEnv idx({{"KILN_VULKAN_DEVICE", "97"}});
    auto d = runtime::vk::VulkanDevice::create();
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.status().code(), absl::StatusCode::kUnavailable);
    EXPECT_NE(d.status().message().find("KILN_VULKAN_DEVICE=97 but there are only"), std::string::npos) << d.status();
  }
  {
    ScopedEnv idx({{"KILN_VULKAN_DEVICE", "gpu"}});
    auto d = runtime::vk::VulkanDevice::create();
    ASSERT_FALSE(d.ok());
    EXPECT_EQ(d.status().code(), absl::StatusCode::kInvalidArgument);
    EXPECT_NE(d.status().message().find("KILN_VULKAN_DEVICE=gpu is not an integer"), std::string::npos) << d.status();
  }
}

TEST(VulkanUnavailable, NoDriverIsAnUnavailableStatus) {
  // The loader finds no ICD: vkCreateInstance fails or enumerates no device.
  ScopedEnv a({{"VK_DRIVER_FILES", "/nonexistent/kiln_no_icd.json"}});
  ScopedEnv b({{"VK_ICD_FILENAMES", "/nonexistent/kiln_no_icd.json"}});
  ScopedEnv c({{"KILN_VULKAN_VALIDATION", "0"}});
  auto d = runtime::vk::VulkanDevice::create();
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kUnavailable) << d.status();
  EXPECT_NE(d.status().message().find("vulkan: no physical device"), std::string::npos) << d.status();
}

TEST(VulkanUnavailable, NoLoaderIsAnUnavailableStatus) {
  // The loader is opened once per process, so this runs in a fresh one (the binary re-executed
  // for this test alone), without KILN_DEVICE so that nothing opens the loader before the body.
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  ScopedEnv loader({{"KILN_VULKAN_LOADER", "/nonexistent/libvulkan.so.1"}});
  ScopedEnv device({{"KILN_DEVICE", ""}});
  EXPECT_EXIT(
      {
        auto d = runtime::vk::VulkanDevice::create();
        std::fprintf(stderr, "%d %s\n", int(d.status().code()), std::string(d.status().message()).c_str());
        std::exit(d.ok() ? 1 : 0);
      },
      ::testing::ExitedWithCode(0), "14 vulkan: no Vulkan loader \\(/nonexistent/libvulkan.so.1\\)");
}

}  // namespace
}  // namespace kiln::vktest

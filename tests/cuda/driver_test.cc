// How the CUDA backend reports an unusable driver, checked without a GPU: child processes load a
// stand-in libcuda.so.1 (tests/cuda/fake_driver) through LD_LIBRARY_PATH.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "runtime/device.h"
#include "runtime/registry.h"

namespace kiln {
namespace {

// Runs this test binary's ChildReportsCudaStatus in a fresh process (the driver is loaded once
// per process) and returns what it printed.
std::string child_output(const std::string& env) {
  std::string cmd = env + " KILN_CUDA_DRIVER_CHILD=1 /proc/" + std::to_string(::getpid()) +
                    "/exe --gtest_filter=CudaDriver.ChildReportsCudaStatus 2>&1";
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return "popen failed";
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) out.append(buf, n);
  ::pclose(p);
  return out;
}

TEST(CudaDriver, ChildReportsCudaStatus) {
  if (!std::getenv("KILN_CUDA_DRIVER_CHILD")) GTEST_SKIP() << "runs as a child of the other CudaDriver tests";
  auto d = runtime::get_device("cuda");
  std::printf("CUDA STATUS: %s\n", d.ok() ? "available" : std::string(d.status().message()).c_str());
}

bool have_fake_driver() {
  return std::filesystem::exists(KILN_FAKE_CUDA_DIR "/libcuda.so.1");
}

TEST(CudaDriver, NoDeviceIsReported) {
  if (!have_fake_driver()) GTEST_SKIP() << "the stand-in driver is not built here (a bundle?)";
  std::string out = child_output("LD_LIBRARY_PATH=" KILN_FAKE_CUDA_DIR " KILN_FAKE_CUDA_MODE=nodevice");
  EXPECT_NE(out.find("CUDA STATUS: cuda: no CUDA device"), std::string::npos) << out;
}

TEST(CudaDriver, OldDriverIsReported) {
  if (!have_fake_driver()) GTEST_SKIP() << "the stand-in driver is not built here (a bundle?)";
  std::string out = child_output("LD_LIBRARY_PATH=" KILN_FAKE_CUDA_DIR " KILN_FAKE_CUDA_MODE=old");
  EXPECT_NE(out.find("CUDA STATUS: cuda: the driver supports CUDA 12.4; this kiln build needs a driver for CUDA 13.0"),
            std::string::npos)
      << out;
}

TEST(CudaDriver, MalformedDeviceIndexIsAnError) {
  // Checked before the driver is loaded: the same error with a driver, without one, or with none.
  std::string out = child_output("KILN_CUDA_DEVICE=first");
  EXPECT_NE(out.find("CUDA STATUS: KILN_CUDA_DEVICE=first is not an integer"), std::string::npos) << out;
}

TEST(CudaDriver, MissingDriverIsReported) {
  // An empty folder first on the search path does not hide a real driver: only check where
  // there is none.
  if (runtime::get_device("cuda").ok()) GTEST_SKIP() << "this machine has a CUDA driver";
  std::string out = child_output("LD_LIBRARY_PATH=/nonexistent");
  EXPECT_NE(out.find("CUDA STATUS: cuda: no driver (libcuda.so.1 not found)"), std::string::npos) << out;
}

}  // namespace
}  // namespace kiln

// Linked into every kiln_test binary: when KILN_DEVICE names a device this machine lacks (cuda
// without a GPU, say), every test of the run is skipped with the reason, instead of silently
// running on the fallback device. ctest reports those entries as skipped.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>

#include "runtime/device.h"
#include "runtime/registry.h"

namespace {

class RequireDevice : public ::testing::Environment {
 public:
  void SetUp() override {
    const char* name = std::getenv("KILN_DEVICE");
    if (!name || !*name) return;
    auto d = kiln::runtime::get_device(name);
    if (d.ok()) return;
    // gtest reports tests skipped by an environment as passed; this line makes ctest's
    // SKIP_REGULAR_EXPRESSION (tests/CMakeLists.txt) report the entry as skipped.
    std::printf("[  SKIPPED ] KILN_DEVICE=%s is not available here: %s\n", name, std::string(d.status().message()).c_str());
    std::fflush(stdout);
    GTEST_SKIP() << "KILN_DEVICE=" << name << " is not available here";
  }
};

[[maybe_unused]] ::testing::Environment* const kRequireDevice =
    ::testing::AddGlobalTestEnvironment(new RequireDevice);

}  // namespace

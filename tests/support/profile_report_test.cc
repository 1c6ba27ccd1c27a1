// The roofline classes and the launch-overhead report (support/profile_report.h) on made-up
// runs, where every number is known.
#include <gtest/gtest.h>

#include "support/profile_report.h"

namespace kiln::support {
namespace {

Peaks gpu() {
  Peaks p;
  p.bytes_per_s = 1e12;          // 1 TB/s
  p.flops_per_s = 1e13;          // 10 TFLOP/s: ridge at 10 flops per byte
  p.matrix_flops_per_s = 1e14;   // 100 TFLOP/s for 16-bit matrix math
  p.launch_floor_us = 10;
  return p;
}

TEST(Roofline, ClassesFollowIntensityAndTheLaunchFloor) {
  Roofline m = roofline(int64_t(1e9), int64_t(1e9), false, 1000, gpu());
  EXPECT_EQ(m.bound, "memory-bound");
  EXPECT_NEAR(m.gbps, 1000, 1e-6);
  EXPECT_NEAR(m.roof_fraction, 1.0, 1e-9);
  Roofline c = roofline(int64_t(1e6), int64_t(1e10), false, 2000, gpu());
  EXPECT_EQ(c.bound, "compute-bound");
  EXPECT_NEAR(c.roof_fraction, 0.5, 1e-9);
  // The same intensity on the matrix peak: the ridge moves to 100 flops per byte.
  EXPECT_EQ(roofline(int64_t(1e6), int64_t(5e7), false, 100, gpu()).bound, "compute-bound");
  EXPECT_EQ(roofline(int64_t(1e6), int64_t(5e7), true, 100, gpu()).bound, "memory-bound");
  Roofline l = roofline(16 << 10, 4 << 10, false, 4, gpu());
  EXPECT_EQ(l.bound, "launch-bound");
  // Short but near its roof: not launch-bound.
  EXPECT_EQ(roofline(int64_t(8e6), 0, false, 9, gpu()).bound, "memory-bound");
  Peaks none;
  EXPECT_EQ(roofline(10 << 20, 0, false, 50, none).bound, "unknown");
  EXPECT_EQ(roofline(16 << 10, 0, false, 4, none).bound, "launch-bound");
}

RunRecord run_of(uint64_t exe, double host_us, std::vector<std::pair<double, double>> kernels, int64_t bytes) {
  RunRecord r;
  r.executable = exe;
  r.device = "gpu";
  r.kernels_per_run = int(kernels.size());
  r.host_us = host_us;
  for (size_t i = 0; i < kernels.size(); ++i) {
    ReportKernel k;
    k.run.name = "k" + std::to_string(i) + "_add";
    k.run.kernel = int(i);
    k.run.start_us = kernels[i].first;
    k.run.dur_us = kernels[i].second;
    k.run.bytes = bytes;
    k.bound = roofline(bytes, bytes / 4, false, kernels[i].second, gpu()).bound;
    r.kernels.push_back(k);
  }
  return r;
}

TEST(ProfileReport, CountsRunsKernelsAndIdleTime) {
  ExecutableRecord e;
  e.executable = 7;
  e.kernels = {"k0_add", "k1_add"};
  e.compile_us = 1500;
  std::vector<RunRecord> runs;
  // Kernels of 100 us and 50 us with 30 us between them; 20 us of host time per run.
  for (int i = 0; i < 3; ++i) runs.push_back(run_of(7, 20, {{1000.0 * i, 100}, {1000.0 * i + 130, 50}}, int64_t(1e8)));
  const std::string r = profile_report({e}, runs, 10000);
  EXPECT_NE(r.find("totals: 3 runs (graphs realized), 1 executables compiled (1.500 ms compiling), 6 kernels launched"),
            std::string::npos) << r;
  EXPECT_NE(r.find("graph #7 (2 kernels: k0_add, k1_add) on gpu, compiled in 1.500 ms"), std::string::npos) << r;
  EXPECT_NE(r.find("runs 3, kernels per run 2, host 20.0 us per run (10.0 us per kernel)"), std::string::npos) << r;
  EXPECT_NE(r.find("device busy 150.0 us per run, idle between kernels 30.0 us per run"), std::string::npos) << r;
  EXPECT_NE(r.find("66.7% of device time"), std::string::npos) << r;
  EXPECT_NE(r.find("none: nothing stood out"), std::string::npos) << r;
}

TEST(ProfileReport, RecommendsJitForALoopOfTinyRealizesAndNamesLaunchBoundKernels) {
  std::vector<RunRecord> runs;
  // 64 realizes of a one-kernel graph: 4 us of device work (16 KiB), 30 us of host time each.
  for (int i = 0; i < 64; ++i) runs.push_back(run_of(3, 30, {{100.0 * i, 4}}, 16 << 10));
  const std::string r = profile_report({}, runs, 5000);
  EXPECT_NE(r.find("graph #3 on gpu (compiled before the profile began)"), std::string::npos) << r;
  EXPECT_NE(r.find("64 realizes ran graphs of at most 2 kernels each, spending 1920.0 us on the host against 256.0 us"),
            std::string::npos) << r;
  EXPECT_NE(r.find("kiln::jit"), std::string::npos) << r;
  EXPECT_NE(r.find("kernel k0_add (graph #3) is launch-bound: 4.0 us for 16.0 KiB"),
            std::string::npos) << r;
  EXPECT_NE(r.find("the host spends 30.0 us per run to launch 4.0 us of device work"), std::string::npos) << r;
}

TEST(ProfileReport, SaysWhenCompilingDominatesAndWhenTheDeviceIdles) {
  ExecutableRecord e;
  e.executable = 1;
  e.kernels = {"k0_add", "k1_add"};
  e.compile_us = 9000;
  std::vector<RunRecord> runs = {run_of(1, 5, {{0, 20}, {80, 20}}, int64_t(4e7))};
  const std::string r = profile_report({e}, runs, 10000);
  EXPECT_NE(r.find("compiling took 9.000 of the profile's 10.000 ms"), std::string::npos) << r;
  EXPECT_NE(r.find("graph #1: the device idles 60.0 us per run between its kernels (60% of the run)"), std::string::npos) << r;
}

}  // namespace
}  // namespace kiln::support

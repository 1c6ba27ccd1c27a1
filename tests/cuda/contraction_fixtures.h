// Shared by the CUDA contraction tests (gemm_sm90, gemm_sm80, autotune_sm90): example targets, the
// Program some tensors plan into, and fixtures for tests that need a default device to hold their
// inputs (compile checks, no GPU) or a CUDA GPU to run on (made the default device meanwhile).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "backends/cuda/target.h"
#include "kiln/kiln.h"
#include "testing/planned.h"

namespace kiln::cudatest {

inline const ir::TargetInfo& h100() {
  static const ir::TargetInfo t = runtime::cuda::cuda_target_info(132, 232448, 90);
  return t;
}
inline const ir::TargetInfo& a100() {
  static const ir::TargetInfo t = runtime::cuda::cuda_target_info(108, 166912, 80);
  return t;
}
inline const ir::TargetInfo& l4() {
  static const ir::TargetInfo t = runtime::cuda::cuda_target_info(58, 101376, 89);
  return t;
}

using testing::NeedsDefaultDevice;
using testing::planned;

// Skips without a CUDA GPU (or, for OnSm90Gpu, without one of compute capability 9.0).
class OnCudaGpu : public ::testing::Test {
 protected:
  void SetUp() override { start(false); }
  void TearDown() override {
    if (!prev_.empty()) (void)set_default_device(prev_);
  }
  void start(bool sm90_only) {
    auto d = Device::get("cuda");
    if (!d.ok()) GTEST_SKIP() << d.status().message();
    if (sm90_only && d->description().find("sm_90") == std::string::npos)
      GTEST_SKIP() << "not a compute capability 9.0 GPU";
    prev_ = default_device().name();
    ASSERT_TRUE(set_default_device("cuda").ok());
  }
  std::string prev_;
};

class OnSm90Gpu : public OnCudaGpu {
 protected:
  void SetUp() override { start(true); }
};

}  // namespace kiln::cudatest

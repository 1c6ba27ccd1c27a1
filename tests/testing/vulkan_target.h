// A Vulkan 1.3 GPU as a target profile written by hand (nothing read from a device): for tests
// that compile or render for Vulkan without one.
#pragma once

#include "ir/target_info.h"

namespace kiln::testing {

// `coop_n` > 0 adds f16 cooperative matrices of 16 x coop_n x 16 (NVIDIA's shapes).
inline ir::TargetInfo handwritten_vulkan_target(int coop_n = 0) {
  ir::TargetInfo t;
  t.name = "vulkan";
  t.is_gpu = true;
  t.parallelism = 64;
  t.subgroup_size = 32;
  t.max_workgroup = 1024;
  t.shared_memory = 48 * 1024;
  t.vector_width = 4;
  t.max_fused_row = 8192;
  t.spirv_1_6 = true;
  t.scalar_layout = true;
  t.preserve_inf_nan32 = true;
  if (coop_n > 0) t.coop_m = t.coop_k = 16, t.coop_n = coop_n;
  return t;
}

}  // namespace kiln::testing

// What the passes, the renderers and the device-free compilers know about a target: sizes and
// features, never device APIs. A device fills one in from what it reads off the hardware; a
// Compiler is made from one alone (runtime/device.h), so everything that changes generated
// code is here.
#pragma once

#include <cstdint>
#include <string>

namespace kiln::ir {

struct TargetInfo {
  std::string name = "cpu";
  int parallelism = 1;            // CPU threads, or GPU multiprocessors
  int subgroup_size = 1;          // SIMD lanes that cooperate (warp / subgroup); 1 on the CPU
  int max_workgroup = 1;          // threads per workgroup
  int64_t shared_memory = 0;      // bytes per workgroup
  int vector_width = 8;           // f32 lanes of the widest convenient vector
  int64_t max_fused_row = 1 << 20;  // longest reduce axis a row-wise normalization fuses over
  int64_t max_buffer_range = INT64_MAX;  // largest bytes one binding can address
  bool has_f16 = true, has_f64 = true, has_i64 = true, has_i8 = true;
  bool is_gpu = false;
  bool f32_denormals = true;  // f32 subnormals survive arithmetic (false: the device flushes them)
  int compute_capability = 0;  // CUDA: major*10+minor (90 = sm_90); 0 elsewhere
  // A flash-attention kernel renders the attention op (CUDA sm_80+; passes/attention.h).
  bool fused_attention = false;

  // CPU: the LLVM CPU name and feature string code is generated for ("" = the build machine's
  // host CPU, as LLVM detects it).
  std::string cpu_name, cpu_features;
  // Vulkan: SPIR-V 1.6 for Vulkan 1.3 (else SPIR-V 1.5 for Vulkan 1.2); scalarBlockLayout; the
  // float-controls execution modes the device can honour (f32 denormals: f32_denormals above).
  bool spirv_1_6 = false;
  bool scalar_layout = false;
  bool preserve_inf_nan16 = false, preserve_inf_nan32 = false, preserve_inf_nan64 = false;
  // Vulkan: the shape (rows x columns x depth) of the subgroup-scope cooperative matrices
  // (VK_NV_cooperative_matrix) that multiply f16 operands into f32 accumulators; 0 = none.
  int coop_m = 0, coop_n = 0, coop_k = 0;
};

}  // namespace kiln::ir

// The Metal TargetInfo and target key (target.h).
#include "backends/metal/target.h"

#include "absl/strings/str_cat.h"

namespace kiln::runtime::metal {

ir::TargetInfo metal_target_info(const std::string& chip, int cores) {
  ir::TargetInfo t;
  t.name = "metal";
  t.cpu_name = chip;
  t.parallelism = cores;
  t.subgroup_size = 32;       // every Apple GPU family's SIMD-group
  t.max_workgroup = 1024;
  t.shared_memory = 32768;    // threadgroup memory of Apple GPUs
  t.vector_width = 4;         // 16-byte loads and stores of f32 (float4)
  t.max_fused_row = 16384;    // as CUDA: a row a threadgroup of 1024 threads keeps in registers
  t.has_f16 = t.has_i64 = t.has_i8 = true;
  t.has_f64 = false;          // MSL has no double
  t.is_gpu = true;
  t.f32_denormals = false;    // the kernels do not rely on f32 subnormals surviving arithmetic
  return t;
}

std::string target_key(const ir::TargetInfo& t) { return absl::StrCat("msl3.0-simd", t.subgroup_size); }

}  // namespace kiln::runtime::metal

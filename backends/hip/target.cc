// The HIP TargetInfo and target key (target.h).
#include "backends/hip/target.h"

namespace kiln::runtime::hip {

ir::TargetInfo hip_target_info(const std::string& gfx, int compute_units) {
  ir::TargetInfo t;
  t.name = "hip";
  t.cpu_name = gfx;
  t.parallelism = compute_units;
  // gfx9 (GCN, CDNA) runs 64-wide wavefronts; gfx10 and later compile for wave32 by default.
  t.subgroup_size = gfx.rfind("gfx9", 0) == 0 || gfx.rfind("gfx8", 0) == 0 ? 64 : 32;
  t.max_workgroup = 1024;
  t.shared_memory = 65536;
  t.vector_width = 4;         // 16-byte loads and stores of f32
  t.max_fused_row = 16384;    // as CUDA: a row a block of 1024 threads keeps in registers
  t.has_f16 = t.has_f64 = t.has_i64 = t.has_i8 = true;
  t.is_gpu = true;
  t.f32_denormals = true;     // HIP's default: f32 denormals are kept
  return t;
}

std::string target_key(const ir::TargetInfo& t) { return t.cpu_name; }

}  // namespace kiln::runtime::hip

// The CUDA TargetInfo and target key (target.h).
#include "backends/cuda/target.h"

#include "absl/strings/str_cat.h"

namespace kiln::runtime::cuda {

ir::TargetInfo cuda_target_info(int sm_count, int64_t shared_optin, int compute_capability) {
  ir::TargetInfo t;
  t.compute_capability = compute_capability;
  t.fused_attention = compute_capability >= 80;  // mma.sync m16n8k16 bf16 (codegen/c_family/attention_cuda.cc)
  t.name = "cuda";
  t.parallelism = sm_count;
  t.subgroup_size = 32;
  t.max_workgroup = 1024;
  t.shared_memory = shared_optin;
  t.vector_width = 4;           // 16-byte loads and stores of f32
  t.max_fused_row = 16384;      // a row a block of 1024 threads keeps in registers (16 per thread)
  t.has_f16 = t.has_f64 = t.has_i64 = t.has_i8 = true;
  t.is_gpu = true;
  return t;
}

std::string target_key(const ir::TargetInfo& t) { return absl::StrCat("sm_", t.compute_capability); }

bool runs_ptx_of(const ir::TargetInfo& t, const std::string& key) {
  if (key.size() < 4 || key.compare(0, 3, "sm_") != 0) return false;
  int cc = 0;
  for (size_t i = 3; i < key.size(); ++i) {
    if (key[i] < '0' || key[i] > '9' || cc > 10000) return false;  // "sm_90a": arch-specific
    cc = cc * 10 + (key[i] - '0');
  }
  return cc > 0 && cc <= t.compute_capability;
}

bool accepts_key(const ir::TargetInfo& t, const std::string& key) {
  return key == target_key(t) || (t.compute_capability == 90 && key == "sm_90a");
}

support::Peaks cuda_peaks(int cc, int sms, double clock_khz, double memory_clock_khz, int bus_bits) {
  support::Peaks p;
  p.bytes_per_s = 2.0 * memory_clock_khz * 1e3 * double(bus_bits) / 8.0;
  const double sm_hz = double(sms) * clock_khz * 1e3;
  const int lanes = cc >= 86 ? 128 : 64;
  p.flops_per_s = sm_hz * lanes * 2;
  int matrix = 0;  // dense 16-bit tensor-core FLOP per SM per clock
  switch (cc) {
    case 70: case 72: case 75: matrix = 1024; break;
    case 80: matrix = 2048; break;
    case 86: case 87: case 89: matrix = 512; break;
    case 90: matrix = 4096; break;
    case 100: case 103: matrix = 8192; break;
    default: break;
  }
  p.matrix_flops_per_s = sm_hz * matrix;
  p.launch_floor_us = 10;
  p.source = absl::StrCat("sm_", cc, ", ", sms, " SMs at ", int(clock_khz / 1000), " MHz, memory ",
                          int(memory_clock_khz / 1000), " MHz x ", bus_bits, " bits (driver attributes)");
  return support::with_peak_overrides(p);
}

}  // namespace kiln::runtime::cuda

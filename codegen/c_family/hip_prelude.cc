// HIP without headers (dialect_cuda.cc, HIP flavor): kiln's kernels compile with comgr and
// -nogpuinc, so neither the HIP headers nor clang's resource headers are needed at run time. The
// few runtime names the kernels use are defined here on AMDGPU builtins and on the ROCm device
// libraries comgr links (ockl for the work-item geometry, ocml for math).
#include <string>

#include "codegen/c_family/dialect.h"

namespace kiln::codegen::gpu {

std::string hip_prelude() {
  std::string p = R"(#define __global__ __attribute__((global))
#define __device__ __attribute__((device))
#define __shared__ __attribute__((shared))
#define __align__(n) __attribute__((aligned(n)))
#define __forceinline__ inline __attribute__((always_inline))
#define __launch_bounds__(n) __attribute__((amdgpu_flat_work_group_size(1, n)))
#define KILN_HIP static __device__ __forceinline__
extern "C" __device__ unsigned long __ockl_get_local_id(unsigned);
extern "C" __device__ unsigned long __ockl_get_group_id(unsigned);
extern "C" __device__ unsigned long __ockl_get_num_groups(unsigned);
KILN_HIP void __syncthreads() {
  __builtin_amdgcn_fence(__ATOMIC_RELEASE, "workgroup");
  __builtin_amdgcn_s_barrier();
  __builtin_amdgcn_fence(__ATOMIC_ACQUIRE, "workgroup");
}
// Chained kernels (chain.cc): a device-wide fence and a ticket counter.
KILN_HIP void __threadfence() { __builtin_amdgcn_fence(__ATOMIC_SEQ_CST, "agent"); }
KILN_HIP unsigned atomicAdd(unsigned* p, unsigned v) { return __atomic_fetch_add(p, v, __ATOMIC_RELAXED); }
KILN_HIP unsigned __float_as_uint(float x) { return __builtin_bit_cast(unsigned, x); }
KILN_HIP float __uint_as_float(unsigned x) { return __builtin_bit_cast(float, x); }
KILN_HIP float __int_as_float(int x) { return __builtin_bit_cast(float, x); }
KILN_HIP double __longlong_as_double(long long x) { return __builtin_bit_cast(double, x); }
struct __attribute__((aligned(16))) float4 { float x, y, z, w; };
// MFMA operands and accumulators (contraction_units.cc): 4 f16 / bf16 bits / f32 per lane.
typedef _Float16 kiln_mfma_h4 __attribute__((ext_vector_type(4)));
typedef short kiln_mfma_s4 __attribute__((ext_vector_type(4)));
typedef float kiln_mfma_f4 __attribute__((ext_vector_type(4)));
KILN_HIP float4 make_float4(float x, float y, float z, float w) { float4 v = {x, y, z, w}; return v; }
// Butterfly exchange across the wavefront (ds_bpermute addresses lanes in bytes).
KILN_HIP int kiln_lane() { return (int)__builtin_amdgcn_mbcnt_hi(~0u, __builtin_amdgcn_mbcnt_lo(~0u, 0u)); }
KILN_HIP int __shfl_xor(int v, int m) { return __builtin_amdgcn_ds_bpermute((kiln_lane() ^ m) << 2, v); }
KILN_HIP unsigned __shfl_xor(unsigned v, int m) { return (unsigned)__shfl_xor((int)v, m); }
KILN_HIP float __shfl_xor(float v, int m) { return __builtin_bit_cast(float, __shfl_xor(__builtin_bit_cast(int, v), m)); }
KILN_HIP long long __shfl_xor(long long v, int m) {
  unsigned lo = (unsigned)__shfl_xor((int)(unsigned)v, m), hi = (unsigned)__shfl_xor((int)(unsigned)((unsigned long long)v >> 32), m);
  return (long long)(((unsigned long long)hi << 32) | lo);
}
KILN_HIP double __shfl_xor(double v, int m) { return __builtin_bit_cast(double, __shfl_xor(__builtin_bit_cast(long long, v), m)); }
)";
  // Math on ocml: name##f for f32, name for f64, as CUDA spells them.
  const char* unary[][2] = {{"exp", "exp"},   {"log", "log"},     {"sqrt", "sqrt"}, {"rsqrt", "rsqrt"},
                            {"fabs", "fabs"}, {"sin", "sin"},     {"cos", "cos"},   {"tanh", "tanh"},
                            {"erf", "erf"},   {"floor", "floor"}, {"ceil", "ceil"}};
  for (const auto& u : unary) {
    const std::string name = u[0], f = u[1];
    p += "extern \"C\" __device__ float __ocml_" + f + "_f32(float);\n";
    p += "extern \"C\" __device__ double __ocml_" + f + "_f64(double);\n";
    p += "KILN_HIP float " + name + "f(float x) { return __ocml_" + f + "_f32(x); }\n";
    p += "KILN_HIP double " + name + "(double x) { return __ocml_" + f + "_f64(x); }\n";
  }
  for (const char* f : {"pow", "fmax", "fmin"}) {
    const std::string n = f;
    p += "extern \"C\" __device__ float __ocml_" + n + "_f32(float, float);\n";
    p += "extern \"C\" __device__ double __ocml_" + n + "_f64(double, double);\n";
    p += "KILN_HIP float " + n + "f(float x, float y) { return __ocml_" + n + "_f32(x, y); }\n";
    p += "KILN_HIP double " + n + "(double x, double y) { return __ocml_" + n + "_f64(x, y); }\n";
  }
  return p;
}

}  // namespace kiln::codegen::gpu

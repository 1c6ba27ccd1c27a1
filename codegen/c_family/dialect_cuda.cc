// CUDA C (NVRTC) and HIP C (hiprtc): one dialect, two flavors.
#include <cmath>
#include <cstdio>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "codegen/c_family/dialect.h"

namespace kiln::codegen::gpu {

std::string c_float_literal(double v, bool is_double, const std::string& float_suffix) {
  char buf[64];
  std::snprintf(buf, sizeof buf, is_double ? "%.17g" : "%.9g", v);
  std::string s = buf;
  if (s.find_first_of(".en") == std::string::npos) s += ".0";
  return is_double ? s : s + float_suffix;
}

namespace {

class CudaDialect : public DialectOps {
 public:
  explicit CudaDialect(bool hip) : hip_(hip) {}
  Dialect kind() const override { return hip_ ? Dialect::kHip : Dialect::kCuda; }

  std::string type(DType t) const override {
    switch (t) {
      case DType::kBool: return "bool";
      case DType::kUInt8: return "unsigned char";
      case DType::kInt8: return "signed char";
      case DType::kInt32: return "int";
      case DType::kInt64: return "long long";
      case DType::kInt16: return "short";
      case DType::kUInt16: return "unsigned short";
      case DType::kUInt32: return "unsigned";
      case DType::kFloat64: return "double";
      default: return "float";
    }
  }
  std::string index_type(bool wide) const override { return wide ? "long long" : "int"; }
  std::string index_cast(const std::string& e, bool wide) const override {
    return absl::StrCat("((", index_type(wide), ")(", e, "))");
  }
  std::string index_literal(int64_t v, bool wide) const override {
    return wide ? absl::StrCat(v, "LL") : absl::StrCat(v);
  }

  std::string literal(DType t, const Scalar& s) const override {
    if (t == DType::kBool) return s.as_int() ? "true" : "false";
    if (is_float(t)) {
      bool dbl = t == DType::kFloat64;
      double v = s.as_double();
      if (std::isnan(v)) return dbl ? "__longlong_as_double(0x7ff8000000000000LL)" : "__int_as_float(0x7fc00000)";
      if (std::isinf(v)) {
        if (dbl) return v > 0 ? "__longlong_as_double(0x7ff0000000000000LL)" : "__longlong_as_double(0xfff0000000000000LL)";
        return v > 0 ? "__int_as_float(0x7f800000)" : "__int_as_float(0xff800000)";
      }
      return c_float_literal(dbl ? v : double(float(v)), dbl, "f");
    }
    int64_t v = s.as_int();
    switch (t) {
      case DType::kInt64:
        if (v == INT64_MIN) return "(-9223372036854775807LL - 1LL)";
        return absl::StrCat("(", v, "LL)");
      case DType::kInt32:
        if (v == INT32_MIN) return "(-2147483647 - 1)";
        return absl::StrCat("(", v, ")");
      case DType::kInt8: return absl::StrCat("((signed char)", v, ")");
      case DType::kUInt8: return absl::StrCat("((unsigned char)", v, ")");
      case DType::kInt16: return absl::StrCat("((short)", v, ")");
      case DType::kUInt16: return absl::StrCat("((unsigned short)", v, ")");
      case DType::kUInt32: return absl::StrCat("(", uint32_t(v), "u)");
      default: return absl::StrCat(v);
    }
  }

  std::string preamble(const Features&) const override {
    std::string p = hip_ ? hip_prelude() : "";
    p += float_rounding_helpers() + storage_word_helpers();
    p += R"(__device__ __forceinline__ float kiln_maxf(float a, float b) { return (a != a || b != b) ? a + b : fmaxf(a, b); }
__device__ __forceinline__ float kiln_minf(float a, float b) { return (a != a || b != b) ? a + b : fminf(a, b); }
__device__ __forceinline__ float kiln_tanh_bf(float x) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 750
  float r;
  asm("tanh.approx.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
#else
  return tanhf(x);
#endif
}
__device__ __forceinline__ double kiln_maxd(double a, double b) { return (a != a || b != b) ? a + b : fmax(a, b); }
__device__ __forceinline__ double kiln_mind(double a, double b) { return (a != a || b != b) ? a + b : fmin(a, b); }
__device__ __forceinline__ int kiln_sat_i32(double v) { return v != v ? 0 : v >= 2147483647.0 ? 2147483647 : v <= -2147483648.0 ? (-2147483647 - 1) : (int)v; }
__device__ __forceinline__ long long kiln_sat_i64(double v) { return v != v ? 0LL : v >= 9.2233720368547758e18 ? 9223372036854775807LL : v <= -9.2233720368547758e18 ? (-9223372036854775807LL - 1LL) : (long long)v; }
__device__ __forceinline__ unsigned kiln_udiv(unsigned x, unsigned y) { return y == 0u ? 0u : x / y; }
__device__ __forceinline__ unsigned kiln_urem(unsigned x, unsigned y) { return y == 0u ? 0u : x % y; }
__device__ __forceinline__ int kiln_idiv(int x, int y) { return y == 0 ? 0 : y == -1 ? (int)(0u - (unsigned)x) : x / y; }
__device__ __forceinline__ int kiln_irem(int x, int y) { return y == 0 || y == -1 ? 0 : x % y; }
__device__ __forceinline__ long long kiln_ldiv(long long x, long long y) { return y == 0 ? 0LL : y == -1 ? (long long)(0ull - (unsigned long long)x) : x / y; }
__device__ __forceinline__ long long kiln_lrem(long long x, long long y) { return y == 0 || y == -1 ? 0LL : x % y; }
)";
    p += saturating_casts({DType::kInt8, DType::kUInt8, DType::kInt16, DType::kUInt16, DType::kUInt32}, DType::kFloat64);
    return p;
  }

  std::string kernel_open(const std::string& name, const std::vector<BufferParam>& bufs, const std::vector<int>& scalars, int,
                          int block, const std::string& shared_decls) const override {
    std::vector<std::string> params;
    for (const BufferParam& b : bufs)
      params.push_back(absl::StrCat(b.written ? "" : "const ", b.coherent ? "volatile " : "", storage_type(b.dtype),
                                    b.aliased ? "* " : "* __restrict__ ", buffer_name(b.id)));
    for (int slot : scalars) params.push_back(param_arg(slot));
    return absl::StrCat("extern \"C\" __global__ void __launch_bounds__(", block, ") ", name, "(",
                        absl::StrJoin(params, ", "), ") {\n", shared_decls);
  }
  std::string shared_decl(const std::string& type, const std::string& name, int64_t n) const override {
    return absl::StrCat("  __shared__ __align__(16) ", type, " ", name, "[", n, "];\n");  // 16-byte reads of aligned runs
  }

  // --- storage primitives (dialect.h)
  std::string half_word_type() const override { return "unsigned short"; }
  std::string convert(const std::string& type, const std::string& e) const override {
    return absl::StrCat("(", type, ")(", e, ")");
  }
  std::string float_to_bits(const std::string& e) const override { return absl::StrCat("__float_as_uint(", e, ")"); }
  std::string bits_to_float(const std::string& e) const override { return absl::StrCat("__uint_as_float(", e, ")"); }
  std::string bits_to_double(const std::string& e) const override { return absl::StrCat("__longlong_as_double((long long)(", e, "))"); }
  std::string f16_to_f32_body() const override {
    return hip_ ? "return (float)__builtin_bit_cast(_Float16, x);"
                : "float f; asm(\"cvt.f32.f16 %0, %1;\" : \"=f\"(f) : \"h\"(x)); return f;";
  }
  std::string f32_to_f16_body() const override {
    return hip_ ? "return __builtin_bit_cast(unsigned short, (_Float16)f);"
                : "unsigned short h; asm(\"cvt.rn.f16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f)); return h;";
  }
  // sm_80 and newer round f32 to bf16 in one instruction (cvt.rn.bf16.f32: ties to even, a NaN
  // becomes the canonical NaN); older targets and HIP use the portable bit arithmetic.
  std::string bf16_round_body() const override {
    if (hip_) return bf16_round_portable_body();
    return absl::StrCat("#if __CUDA_ARCH__ >= 800\n",
                        "  unsigned short h; asm(\"cvt.rn.bf16.f32 %0, %1;\" : \"=h\"(h) : \"f\"(f)); ",
                        "return __uint_as_float((unsigned)h << 16);\n#else\n", bf16_round_portable_body(), "#endif\n");
  }
  std::string helper_prefix() const override { return "__device__ __forceinline__ "; }
  std::string element(const std::string& buffer, const std::string& index) const override {
    return absl::StrCat(buffer, "[", index, "]");
  }
  std::string device_fence() const override { return "__threadfence();"; }
  std::string take_ticket(int buf, const std::string& index) const override {
    return absl::StrCat("atomicAdd((unsigned*)&", buffer_name(buf), "[", index, "], 1u)");
  }
  std::string vec4_type() const override { return "float4"; }
  std::string vec4_ctor() const override { return "make_float4"; }
  std::string vec4_view(int buf, bool write) const override {
    return absl::StrCat("reinterpret_cast<", write ? "" : "const ", vec4_type(), "*>(", buffer_name(buf), ")");
  }

  // HIP: the wavefront (64 on CDNA / GCN, 32 on RDNA's wave32).
  int warp_size(const ir::TargetInfo& t) const override { return hip_ ? t.subgroup_size : 32; }
  bool can_shuffle(DType t) const override { return t != DType::kBool; }
  std::string shuffle_xor(DType t, const std::string& v, int mask) const override {
    const bool narrow = dtype_size(t) < 4 && !is_float(t);  // 8- and 16-bit integers shuffle as int
    std::string x = narrow ? absl::StrCat("(int)(", v, ")") : v;
    std::string call = hip_ ? absl::StrCat("__shfl_xor(", x, ", ", mask, ")")
                            : absl::StrCat("__shfl_xor_sync(0xffffffffu, ", x, ", ", mask, ")");
    if (narrow) return absl::StrCat("(", type(t), ")", call);
    return call;
  }

  std::string local_id() const override { return hip_ ? "(int)__ockl_get_local_id(0)" : "(int)threadIdx.x"; }
  std::string group_id() const override { return hip_ ? "(long long)__ockl_get_group_id(0)" : "(long long)blockIdx.x"; }
  std::string num_groups() const override { return hip_ ? "(long long)__ockl_get_num_groups(0)" : "(long long)gridDim.x"; }
  std::string barrier() const override { return "__syncthreads();"; }

  std::string op(ir::Op o, DType t, const std::vector<std::string>& a) const override { return c_like_op(o, t, a); }
  std::string math(ir::Op o, DType t) const override {
    const bool d = t == DType::kFloat64;
    auto fn = [&](const char* name) { return absl::StrCat(name, d ? "" : "f"); };
    switch (o) {
      case ir::Op::kExp: return fn("exp");
      case ir::Op::kLog: return fn("log");
      case ir::Op::kSqrt: return fn("sqrt");
      case ir::Op::kRsqrt: return fn("rsqrt");
      case ir::Op::kAbs: return fn("fabs");
      case ir::Op::kSin: return fn("sin");
      case ir::Op::kCos: return fn("cos");
      // A bf16 tanh (GELU's tanh form) is one MUFU instruction on sm_75+: its error (2^-11
      // relative) is a quarter of the bf16 rounding that follows.
      case ir::Op::kTanh: return !hip_ && t == DType::kBFloat16 ? "kiln_tanh_bf" : fn("tanh");
      case ir::Op::kErf: return fn("erf");
      case ir::Op::kFloor: return fn("floor");
      case ir::Op::kCeil: return fn("ceil");
      case ir::Op::kPow: return fn("pow");
      case ir::Op::kMax: return d ? "kiln_maxd" : "kiln_maxf";
      case ir::Op::kMin: return d ? "kiln_mind" : "kiln_minf";
      default: return "";
    }
  }

  std::string cast(DType from, DType to, const std::string& v) const override {
    if (from == to) return v;
    if (to == DType::kBool) return is_float(from) ? absl::StrCat("(", v, " != 0.0)") : absl::StrCat("(", v, " != 0)");
    if (from == DType::kBool) return absl::StrCat("(", type(to), ")(", v, " ? 1 : 0)");
    if (is_float(from) && is_float(to)) {
      std::string r = absl::StrCat("(", type(to), ")(", v, ")");
      if (to == DType::kFloat16 || to == DType::kBFloat16) return round_to(to, r);
      return r;
    }
    if (is_float(from)) {
      return absl::StrCat("kiln_sat_", dtype_name(to), "((double)(", v, "))");
    }
    return absl::StrCat("(", type(to), ")(", v, ")");
  }

  std::string is_nan(DType, const std::string& v) const override { return absl::StrCat("(", v, " != ", v, ")"); }
  std::string u32() const override { return "unsigned"; }
  std::string u32_literal(uint32_t v) const override { return absl::StrCat(v, "u"); }
  std::string u32_to_float(const std::string& v, DType t) const override {
    return t == DType::kFloat64 ? absl::StrCat("((double)(", v, " >> 8) * 5.9604644775390625e-08)")
                                : absl::StrCat("((float)(", v, " >> 8) * 5.9604644775390625e-08f)");
  }
  std::string index_to_u32(const std::string& v, int shift) const override {
    return shift ? absl::StrCat("(unsigned)((unsigned long long)(", v, ") >> ", shift, ")")
                 : absl::StrCat("(unsigned)(", v, ")");
  }

 private:
  bool hip_;
};

}  // namespace

std::unique_ptr<DialectOps> make_cuda_dialect(bool hip) { return std::make_unique<CudaDialect>(hip); }

}  // namespace kiln::codegen::gpu

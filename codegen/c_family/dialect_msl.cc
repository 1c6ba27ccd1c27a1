// Metal Shading Language (MSL 3.0) kernels for Apple GPUs. MSL is C++14 with address spaces, so
// most spellings are CUDA's; what differs is listed in dialect.h's table and here:
//
//   | | CUDA | MSL |
//   | --- | --- | --- |
//   | buffers | one pointer argument each | one argument block at [[buffer(0)]]: a struct of a device pointer per buffer, then the params' 64-bit patterns (gpu_program.h) |
//   | thread geometry | threadIdx / blockIdx / gridDim | attributes of the kernel's arguments ([[thread_position_in_threadgroup]], ...) |
//   | warp | 32 lanes, __shfl_xor_sync | a SIMD-group (32 on Apple GPUs), simd_shuffle_xor |
//   | shared memory | __shared__ | threadgroup (32 KiB per threadgroup) |
//   | float64 | yes | none: the compiler refuses such programs before rendering |
//   | math | libdevice, exact by default | metal::precise:: (the fast forms are the default of MSL's compiler); erf and C's pow written here |
//   | bit casts | __float_as_uint | as_type<uint> |
//   | f16 | cvt PTX | half |
//
// Chained reductions (device-wide fences and tickets) need MSL 3.2's thread_scope_device fence;
// the passes do not chain for Metal targets (passes/pipeline.cc), so kernels target MSL 3.0.
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "codegen/c_family/dialect.h"

namespace kiln::codegen::gpu {
namespace {

// Helpers every MSL module defines (after the storage helpers): NaN-propagating min/max, C's
// pow and erf (MSL has no erf, and its pow leaves x < 0 undefined), a log that reads f32
// subnormals from their bits (Apple GPUs may flush them), saturating float -> integer casts of
// the 32- and 64-bit widths, and integer division with op.h's defined cases.
const char* kMslHelpers = R"(inline float kiln_maxf(float a, float b) { return (isnan(a) || isnan(b)) ? a + b : fmax(a, b); }
inline float kiln_minf(float a, float b) { return (isnan(a) || isnan(b)) ? a + b : fmin(a, b); }
inline float kiln_log(float x) {
  uint u = as_type<uint>(x);
  if ((u & 0x7f800000u) == 0u && (u & 0x7fffffu) != 0u && (u >> 31) == 0u) return precise::log(float(u)) - 103.27892990343185f;
  return precise::log(x);
}
inline float kiln_erf(float x) {
  float ax = fabs(x);
  float x2 = x * x;
  float s = x * (1.1283791671f + x2 * (-0.3761263890f + x2 * (0.1128379167f + x2 * (-0.0268661706f + x2 * (0.0052239776f
           + x2 * (-0.0008548327f + x2 * (0.0001205533f + x2 * (-0.0000149253f + x2 * (0.0000016462f + x2 * (-0.0000001637f
           + x2 * 0.0000000148f))))))))));
  float t = 1.0f / (1.0f + 0.5f * ax);
  float p = -1.26551223f + t * (1.00002368f + t * (0.37409196f + t * (0.09678418f + t * (-0.18628806f + t * (0.27886807f
           + t * (-1.13520398f + t * (1.48851587f + t * (-0.82215223f + t * 0.17087277f))))))));
  float l = 1.0f - t * precise::exp(-ax * ax + p);
  float r = ax < 1.0f ? s : (x < 0.0f ? -l : l);
  return isnan(x) ? x : r;
}
inline float kiln_pow(float x, float y) {
  if (y == 0.0f || x == 1.0f) return 1.0f;
  if (isnan(x) || isnan(y)) return as_type<float>(0x7fc00000u);
  uint ub = as_type<uint>(x) & 0x7fffffffu;
  float ax = as_type<float>(ub);
  if (isinf(y)) return ub == 0x3f800000u ? 1.0f : ((ub > 0x3f800000u) == (y > 0.0f) ? as_type<float>(0x7f800000u) : 0.0f);
  bool yint = floor(y) == y;
  bool neg = (as_type<uint>(x) >> 31) != 0u;
  if (neg && ub != 0u && !yint) return as_type<float>(0x7fc00000u);
  bool odd = yint && fabs(y) < 16777216.0f && fmod(fabs(y), 2.0f) == 1.0f;
  float r = ub == 0u ? (y > 0.0f ? 0.0f : as_type<float>(0x7f800000u))
          : ub == 0x7f800000u ? (y > 0.0f ? as_type<float>(0x7f800000u) : 0.0f)
          : ub < 0x00800000u ? precise::exp(y * kiln_log(ax)) : precise::pow(ax, y);
  return (neg && odd) ? -r : r;
}
inline int kiln_sat_i32(float v) { return isnan(v) ? 0 : v >= 2147483648.0f ? 2147483647 : v <= -2147483648.0f ? (-2147483647 - 1) : int(v); }
inline long kiln_sat_i64(float v) { return isnan(v) ? 0L : v >= 9.2233720368547758e18f ? 9223372036854775807L : v <= -9.2233720368547758e18f ? (-9223372036854775807L - 1L) : long(v); }
inline uint kiln_udiv(uint x, uint y) { return y == 0u ? 0u : x / y; }
inline uint kiln_urem(uint x, uint y) { return y == 0u ? 0u : x % y; }
inline int kiln_idiv(int x, int y) { return y == 0 ? 0 : y == -1 ? int(0u - uint(x)) : x / y; }
inline int kiln_irem(int x, int y) { return y == 0 || y == -1 ? 0 : x % y; }
inline long kiln_ldiv(long x, long y) { return y == 0L ? 0L : y == -1L ? long(0UL - ulong(x)) : x / y; }
inline long kiln_lrem(long x, long y) { return y == 0L || y == -1L ? 0L : x % y; }
)";

class MslDialect : public DialectOps {
 public:
  Dialect kind() const override { return Dialect::kMsl; }

  std::string type(DType t) const override {
    switch (t) {
      case DType::kBool: return "bool";
      case DType::kUInt8: return "uchar";
      case DType::kInt8: return "char";  // signed in MSL
      case DType::kInt32: return "int";
      case DType::kInt64: return "long";  // 64 bits in MSL
      case DType::kInt16: return "short";
      case DType::kUInt16: return "ushort";
      case DType::kUInt32: return "uint";
      case DType::kFloat64: return "double";  // not in MSL: programs with float64 are refused before rendering
      default: return "float";
    }
  }
  std::string index_type(bool wide) const override { return wide ? "long" : "int"; }
  std::string index_cast(const std::string& e, bool wide) const override {
    return absl::StrCat("((", index_type(wide), ")(", e, "))");
  }
  std::string index_literal(int64_t v, bool wide) const override { return wide ? absl::StrCat(v, "L") : absl::StrCat(v); }

  std::string literal(DType t, const Scalar& s) const override {
    if (t == DType::kBool) return s.as_int() ? "true" : "false";
    if (is_float(t)) {
      const float f = float(s.as_double());
      if (std::isnan(f)) return "as_type<float>(0x7fc00000u)";
      if (std::isinf(f)) return f > 0 ? "as_type<float>(0x7f800000u)" : "as_type<float>(0xff800000u)";
      return c_float_literal(double(f), false, "f");
    }
    const int64_t v = s.as_int();
    switch (t) {
      case DType::kInt64:
        if (v == INT64_MIN) return "(-9223372036854775807L - 1L)";
        return absl::StrCat("(", v, "L)");
      case DType::kInt32:
        if (v == INT32_MIN) return "(-2147483647 - 1)";
        return absl::StrCat("(", v, ")");
      case DType::kInt8: return absl::StrCat("((char)", v, ")");
      case DType::kUInt8: return absl::StrCat("((uchar)", v, ")");
      case DType::kInt16: return absl::StrCat("((short)", v, ")");
      case DType::kUInt16: return absl::StrCat("((ushort)", v, ")");
      case DType::kUInt32: return absl::StrCat(uint32_t(v), "u");
      default: return absl::StrCat(v);
    }
  }

  std::string preamble(const Features&) const override {
    std::string p = "#include <metal_stdlib>\n#include <metal_simdgroup_matrix>\nusing namespace metal;\n";
    p += float_rounding_helpers() + storage_word_helpers() + kMslHelpers;
    p += saturating_casts({DType::kInt8, DType::kUInt8, DType::kInt16, DType::kUInt16, DType::kUInt32}, DType::kFloat32);
    return p;
  }

  // The argument block (gpu_program.h): a struct named after the kernel, read through
  // [[buffer(0)]], whose fields are named as the kernel body names its buffers and params (so
  // that canonical_text sees kernels equal up to their bindings as one text: twins).
  std::string kernel_open(const std::string& name, const std::vector<BufferParam>& bufs, const std::vector<int>& params, int,
                          int block, const std::string& shared_decls) const override {
    std::string s = absl::StrCat("struct ", name, "_args {\n");
    auto pointer = [&](const BufferParam& b) {
      return absl::StrCat(b.coherent ? "volatile " : "", "device ", b.written ? "" : "const ", storage_type(b.dtype), "*");
    };
    for (const BufferParam& b : bufs) absl::StrAppend(&s, "  ", pointer(b), " ", buffer_name(b.id), ";\n");
    for (int slot : params) absl::StrAppend(&s, "  ulong ", param_name(slot), ";\n");
    absl::StrAppend(&s, "};\n[[max_total_threads_per_threadgroup(", block, ")]]\nkernel void ", name, "(constant ", name,
                    "_args& kiln_args [[buffer(0)]], uint3 kiln_lid3 [[thread_position_in_threadgroup]], "
                    "uint3 kiln_gid3 [[threadgroup_position_in_grid]], uint3 kiln_ngr3 [[threadgroups_per_grid]], "
                    "uint kiln_lane [[thread_index_in_simdgroup]], uint kiln_sgid [[simdgroup_index_in_threadgroup]]) {\n",
                    shared_decls);
    for (const BufferParam& b : bufs)
      absl::StrAppend(&s, "  ", pointer(b), " ", buffer_name(b.id), " = kiln_args.", buffer_name(b.id), ";\n");
    for (int slot : params) absl::StrAppend(&s, "  ulong ", param_name(slot), " = kiln_args.", param_name(slot), ";\n");
    return s;
  }
  std::string param_arg(int) const override { return ""; }  // params come from the argument block
  std::string shared_decl(const std::string& type, const std::string& name, int64_t n) const override {
    return absl::StrCat("  threadgroup ", type, " ", name, "[", n, "];\n");
  }

  // --- storage primitives (dialect.h)
  std::string half_word_type() const override { return "ushort"; }
  std::string convert(const std::string& type, const std::string& e) const override {
    return absl::StrCat("((", type, ")(", e, "))");
  }
  std::string float_to_bits(const std::string& e) const override { return absl::StrCat("as_type<uint>(", e, ")"); }
  std::string bits_to_float(const std::string& e) const override { return absl::StrCat("as_type<float>(", e, ")"); }
  // (float64 never reaches an MSL kernel: see type())
  std::string bits_to_double(const std::string& e) const override { return absl::StrCat("as_type<double>((ulong)(", e, "))"); }
  std::string f16_to_f32_body() const override { return "return float(as_type<half>(x));"; }
  // MSL converts float to half rounding to nearest even.
  std::string f32_to_f16_body() const override { return "return as_type<ushort>(half(f));"; }
  std::string helper_prefix() const override { return "inline "; }
  std::string element(const std::string& buffer, const std::string& index) const override {
    return absl::StrCat(buffer, "[", index, "]");
  }
  std::string vec4_type() const override { return "float4"; }
  std::string vec4_view(int buf, bool write) const override {
    return absl::StrCat("((device ", write ? "" : "const ", "float4*)(", buffer_name(buf), "))");
  }

  // SIMD-groups: 32 lanes on Apple GPUs (the runtime checks the pipeline's execution width).
  int warp_size(const ir::TargetInfo& t) const override { return t.subgroup_size >= 16 ? t.subgroup_size : 0; }
  bool can_shuffle(DType t) const override { return t == DType::kFloat32 || t == DType::kInt32 || t == DType::kUInt32; }
  std::string shuffle_xor(DType, const std::string& v, int mask) const override {
    return absl::StrCat("simd_shuffle_xor(", v, ", (ushort)", mask, ")");
  }
  std::string lane_of(const std::string&, int) const override { return "int(kiln_lane)"; }
  std::string warp_of(const std::string&, int) const override { return "int(kiln_sgid)"; }

  std::string local_id() const override { return "int(kiln_lid3.x)"; }
  std::string group_id() const override { return "long(kiln_gid3.x)"; }
  std::string num_groups() const override { return "long(kiln_ngr3.x)"; }
  std::string barrier() const override { return "threadgroup_barrier(mem_flags::mem_threadgroup);"; }
  // MSL 3.2; never rendered for Metal targets today (see the top of this file).
  std::string device_fence() const override {
    return "atomic_thread_fence(mem_flags::mem_device, memory_order_seq_cst, thread_scope_device);";
  }
  std::string take_ticket(int buf, const std::string& index) const override {
    return absl::StrCat("atomic_fetch_add_explicit((volatile device atomic_uint*)&", buffer_name(buf), "[", index,
                        "], 1u, memory_order_relaxed)");
  }

  std::string op(ir::Op o, DType t, const std::vector<std::string>& a) const override { return c_like_op(o, t, a); }
  std::string wide_unsigned() const override { return "ulong"; }
  // metal::precise's functions (MSL compiles the plain names as fast math by default); kiln's own
  // erf (MSL has none), pow (C's cases) and log (f32 subnormals).
  std::string math(ir::Op o, DType) const override {
    switch (o) {
      case ir::Op::kExp: return "precise::exp";
      case ir::Op::kLog: return "kiln_log";
      case ir::Op::kSqrt: return "precise::sqrt";
      case ir::Op::kRsqrt: return "precise::rsqrt";
      case ir::Op::kAbs: return "fabs";
      case ir::Op::kSin: return "precise::sin";
      case ir::Op::kCos: return "precise::cos";
      case ir::Op::kTanh: return "precise::tanh";
      case ir::Op::kErf: return "kiln_erf";
      case ir::Op::kFloor: return "floor";
      case ir::Op::kCeil: return "ceil";
      case ir::Op::kPow: return "kiln_pow";
      case ir::Op::kMax: return "kiln_maxf";
      case ir::Op::kMin: return "kiln_minf";
      default: return "";
    }
  }

  std::string cast(DType from, DType to, const std::string& v) const override {
    if (from == to) return v;
    if (to == DType::kBool) return is_float(from) ? absl::StrCat("(", v, " != 0.0f)") : absl::StrCat("(", v, " != 0)");
    if (from == DType::kBool) return absl::StrCat("((", type(to), ")(", v, " ? 1 : 0))");
    if (is_float(from) && is_float(to)) {
      const std::string r = absl::StrCat("((", type(to), ")(", v, "))");
      return to == DType::kFloat16 || to == DType::kBFloat16 ? round_to(to, r) : r;
    }
    if (is_float(from)) return absl::StrCat("kiln_sat_", dtype_name(to), "(float(", v, "))");
    return absl::StrCat("((", type(to), ")(", v, "))");
  }

  std::string is_nan(DType, const std::string& v) const override { return absl::StrCat("isnan(", v, ")"); }
  std::string u32() const override { return "uint"; }
  std::string u32_literal(uint32_t v) const override { return absl::StrCat(v, "u"); }
  std::string u32_to_float(const std::string& v, DType) const override {
    return absl::StrCat("(float(", v, " >> 8) * 5.9604644775390625e-08f)");
  }
  std::string index_to_u32(const std::string& v, int shift) const override {
    return shift ? absl::StrCat("uint(ulong(", v, ") >> ", shift, ")") : absl::StrCat("uint(", v, ")");
  }
};

}  // namespace

std::unique_ptr<DialectOps> make_msl_dialect() { return std::make_unique<MslDialect>(); }

}  // namespace kiln::codegen::gpu

// GLSL 4.60 compute shaders for Vulkan: memory through buffer device addresses (see
// gpu_program.h for the address-table contract).
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "codegen/c_family/dialect.h"

namespace kiln::codegen::gpu {
namespace {

// GLSL has no double-precision exp/log/sin/cos/tanh/pow/erf: these keep float64 results
// accurate to ~1e-15 (range reduction + polynomials / series).
const char* kDoubleMath = R"(double kiln_max(double a, double b) { return (isnan(a) || isnan(b)) ? a + b : max(a, b); }
double kiln_min(double a, double b) { return (isnan(a) || isnan(b)) ? a + b : min(a, b); }
int kiln_sat_i32(double v) { return isnan(v) ? 0 : v >= 2147483647.0lf ? 2147483647 : v <= -2147483648.0lf ? (-2147483647 - 1) : int(v); }
int64_t kiln_sat_i64(double v) { return isnan(v) ? 0l : v >= 9.2233720368547758e18lf ? 9223372036854775807l : v <= -9.2233720368547758e18lf ? (-9223372036854775807l - 1l) : int64_t(v); }
double kiln_inf_d() { return packDouble2x32(uvec2(0u, 0x7ff00000u)); }
double kiln_nan_d() { return packDouble2x32(uvec2(0u, 0x7ff80000u)); }
double kiln_exp_d(double x) {
  if (isnan(x)) return x;
  if (x > 709.782712893384lf) return kiln_inf_d();
  if (x < -745.1332191019412lf) return 0.0lf;
  double n = round(x * 1.4426950408889634lf);
  double r = (x - n * 0.6931471803691238lf) - n * 1.9082149292705877e-10lf;
  double p = 1.0lf / 6227020800.0lf;
  p = p * r + 1.0lf / 479001600.0lf; p = p * r + 1.0lf / 39916800.0lf; p = p * r + 1.0lf / 3628800.0lf;
  p = p * r + 1.0lf / 362880.0lf; p = p * r + 1.0lf / 40320.0lf; p = p * r + 1.0lf / 5040.0lf;
  p = p * r + 1.0lf / 720.0lf; p = p * r + 1.0lf / 120.0lf; p = p * r + 1.0lf / 24.0lf;
  p = p * r + 1.0lf / 6.0lf; p = p * r + 0.5lf; p = p * r + 1.0lf; p = p * r + 1.0lf;
  int ni = int(n);
  return ldexp(ldexp(p, ni / 2), ni - ni / 2);
}
double kiln_expm1_small_d(double x) {  // |x| <= 0.5
  double t = x, s = x;
  for (int k = 2; k <= 18; ++k) { t *= x / double(k); s += t; }
  return s;
}
double kiln_log_d(double x) {
  if (isnan(x) || x < 0.0lf) return kiln_nan_d();
  if (x == 0.0lf) return -kiln_inf_d();
  if (isinf(x)) return x;
  int e;
  double m = frexp(x, e);
  if (m < 0.70710678118654752lf) { m *= 2.0lf; e -= 1; }
  double f = m - 1.0lf;
  double s = f / (2.0lf + f), s2 = s * s, t = s, acc = s;
  for (int k = 3; k <= 27; k += 2) { t *= s2; acc += t / double(k); }
  return 2.0lf * acc + double(e) * 0.6931471805599453lf;
}
double kiln_sin_poly_d(double r) {
  double r2 = r * r, t = r, s = r;
  for (int k = 1; k <= 10; ++k) { t *= -r2 / double((2 * k) * (2 * k + 1)); s += t; }
  return s;
}
double kiln_cos_poly_d(double r) {
  double r2 = r * r, t = 1.0lf, s = 1.0lf;
  for (int k = 1; k <= 10; ++k) { t *= -r2 / double((2 * k - 1) * (2 * k)); s += t; }
  return s;
}
// x = q * pi/2 + r with |r| <= pi/4 (three-part Cody-Waite constants).
double kiln_reduce_d(double x, out int q) {
  double n = round(x * 0.6366197723675814lf);
  q = int(mod(n, 4.0lf));
  return ((x - n * 1.5707963267341256lf) - n * 6.077100506303966e-11lf) - n * 2.0222662487959506e-21lf;
}
double kiln_sin_d(double x) {
  if (isnan(x) || isinf(x)) return kiln_nan_d();
  int q; double r = kiln_reduce_d(x, q);
  double v = (q == 0) ? kiln_sin_poly_d(r) : (q == 1) ? kiln_cos_poly_d(r) : (q == 2) ? -kiln_sin_poly_d(r) : -kiln_cos_poly_d(r);
  return v;
}
double kiln_cos_d(double x) {
  if (isnan(x) || isinf(x)) return kiln_nan_d();
  int q; double r = kiln_reduce_d(x, q);
  return (q == 0) ? kiln_cos_poly_d(r) : (q == 1) ? -kiln_sin_poly_d(r) : (q == 2) ? -kiln_cos_poly_d(r) : kiln_sin_poly_d(r);
}
double kiln_tanh_d(double x) {
  if (isnan(x)) return x;
  double ax = abs(x), r;
  if (ax < 0.5lf) { double e = kiln_expm1_small_d(2.0lf * ax); r = e / (e + 2.0lf); }
  else { double e = kiln_exp_d(-2.0lf * ax); r = (1.0lf - e) / (1.0lf + e); }
  return x < 0.0lf ? -r : r;
}
double kiln_erf_d(double x) {
  if (isnan(x)) return x;
  double ax = abs(x), r;
  if (ax < 2.0lf) {
    double x2 = ax * ax, t = ax, s = ax;
    for (int n = 1; n < 60; ++n) { t *= -x2 / double(n); s += t / double(2 * n + 1); }
    r = s * 1.1283791670955126lf;
  } else if (ax > 6.0lf) {
    r = 1.0lf;
  } else {
    // erfc by its continued fraction (modified Lentz), then erf = 1 - erfc.
    double tiny = 1e-300lf, f = ax, C = ax, D = 0.0lf;
    for (int n = 1; n < 80; ++n) {
      double a = double(n) * 0.5lf;
      D = ax + a * D; D = abs(D) < tiny ? tiny : D; D = 1.0lf / D;
      C = ax + a / C; C = abs(C) < tiny ? tiny : C;
      f *= C * D;
    }
    r = 1.0lf - kiln_exp_d(-ax * ax) / (f * 1.7724538509055160lf);
  }
  return x < 0.0lf ? -r : r;
}
double kiln_pow_d(double x, double y) {
  // C's pow: GLSL leaves pow undefined for x <= 0 and NaN, and has no double pow at all.
  if (y == 0.0lf || x == 1.0lf) return 1.0lf;
  if (isnan(x) || isnan(y)) return kiln_nan_d();
  double ax = abs(x);
  if (isinf(y)) return ax == 1.0lf ? 1.0lf : ((ax > 1.0lf) == (y > 0.0lf) ? kiln_inf_d() : 0.0lf);
  bool yint = floor(y) == y;
  if (x < 0.0lf && !yint) return kiln_nan_d();
  bool odd = yint && abs(y) < 9.0e15lf && mod(abs(y), 2.0lf) == 1.0lf;
  double r = ax == 0.0lf ? (y > 0.0lf ? 0.0lf : kiln_inf_d())
           : isinf(ax) ? (y > 0.0lf ? kiln_inf_d() : 0.0lf)
           : kiln_exp_d(y * kiln_log_d(ax));
  bool neg = (unpackDouble2x32(x).y >> 31) != 0u;
  return (neg && odd) ? -r : r;
}
)";

class GlslDialect : public DialectOps {
 public:
  Dialect kind() const override { return Dialect::kGlsl; }

  std::string type(DType t) const override {
    switch (t) {
      case DType::kBool: return "bool";
      case DType::kUInt8: return "uint8_t";
      case DType::kInt8: return "int8_t";
      case DType::kInt32: return "int";
      case DType::kInt64: return "int64_t";
      case DType::kInt16: return "int16_t";
      case DType::kUInt16: return "uint16_t";
      case DType::kUInt32: return "uint";
      case DType::kFloat64: return "double";
      default: return "float";
    }
  }
  // Name of the buffer_reference block type holding elements of dtype t.
  static const char* block(DType t) {
    switch (t) {
      case DType::kBool:
      case DType::kUInt8: return "BufU8";
      case DType::kInt8: return "BufI8";
      case DType::kInt32: return "BufI32";
      case DType::kInt64: return "BufI64";
      case DType::kInt16: return "BufI16";
      case DType::kUInt32: return "BufU32";
      case DType::kUInt16:
      case DType::kFloat16:
      case DType::kBFloat16: return "BufU16";
      case DType::kFloat64: return "BufF64";
      default: return "BufF32";
    }
  }
  std::string index_type(bool wide) const override { return wide ? "int64_t" : "int"; }
  std::string index_cast(const std::string& e, bool wide) const override {
    return absl::StrCat(index_type(wide), "(", e, ")");
  }
  std::string index_literal(int64_t v, bool wide) const override {
    return wide ? absl::StrCat(v, "l") : absl::StrCat(v);
  }

  std::string literal(DType t, const Scalar& s) const override {
    if (t == DType::kBool) return s.as_int() ? "true" : "false";
    if (is_float(t)) {
      bool dbl = t == DType::kFloat64;
      double v = s.as_double();
      if (dbl) {
        uint64_t bits;
        std::memcpy(&bits, &v, 8);
        if (!std::isfinite(v))
          return absl::StrCat("packDouble2x32(uvec2(", uint32_t(bits), "u, ", uint32_t(bits >> 32), "u))");
        return c_float_literal(v, true, "") + "lf";
      }
      float f = float(v);
      if (!std::isfinite(f)) {
        uint32_t bits;
        std::memcpy(&bits, &f, 4);
        if (std::isnan(f)) bits = 0x7fc00000u;
        return absl::StrCat("uintBitsToFloat(", bits, "u)");
      }
      return c_float_literal(double(f), false, "");
    }
    int64_t v = s.as_int();
    switch (t) {
      case DType::kInt64:
        if (v == INT64_MIN) return "(-9223372036854775807l - 1l)";
        return absl::StrCat("int64_t(", v, "l)");
      case DType::kInt32:
        if (v == INT32_MIN) return "(-2147483647 - 1)";
        return absl::StrCat("(", v, ")");
      case DType::kInt8: return absl::StrCat("int8_t(", v, ")");
      case DType::kUInt8: return absl::StrCat("uint8_t(", v, ")");
      case DType::kInt16: return absl::StrCat("int16_t(", v, ")");
      case DType::kUInt16: return absl::StrCat("uint16_t(", v, ")");
      case DType::kUInt32: return absl::StrCat(uint32_t(v), "u");
      default: return absl::StrCat(v);
    }
  }

  std::string preamble(const Features& f) const override {
    // 8- and 16-bit types only when the kernel touches them: devices may lack those features.
    std::string p = R"(#version 460
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
#extension GL_KHR_shader_subgroup_basic : require
#extension GL_KHR_shader_subgroup_shuffle : require
)";
    if (f.i8)
      p += "#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require\n#extension GL_EXT_shader_8bit_storage : require\n";
    if (f.f16_storage)
      p += "#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require\n#extension GL_EXT_shader_16bit_storage : require\n";
    if (f.coop)
      p += "#extension GL_KHR_memory_scope_semantics : require\n#extension GL_NV_cooperative_matrix : require\n"
           "#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require\n#extension GL_EXT_control_flow_attributes : require\n";
    p += "layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Table { uint64_t a[]; };\n";
    // The table's address, then the table index of each of the kernel's bindings in argument
    // order (buffers, then params; gpu_program.h), pushed before each dispatch.
    absl::StrAppend(&p, "layout(push_constant) uniform PC { uint64_t table; uint ids[", kGlslPushedIds, "]; } pc;\n");
    // Each block type twice: as written buffers see it, and readonly restrict (suffix R) for the
    // buffers a kernel only reads and shares with no other binding (CUDA's const __restrict__):
    // the driver may then cache and reorder their loads.
    auto blocks = [&p](const char* name, int align, const char* elem) {
      absl::StrAppend(&p, "layout(buffer_reference, std430, buffer_reference_align = ", align, ") buffer ", name, " { ", elem,
                      " v[]; };\n");
      absl::StrAppend(&p, "layout(buffer_reference, std430, buffer_reference_align = ", align, ") readonly restrict buffer ",
                      name, "R { ", elem, " v[]; };\n");
      // And coherent (suffix C) for a chained kernel's partials and tickets, which other
      // workgroups of the same dispatch read back (BufferParam::coherent).
      absl::StrAppend(&p, "layout(buffer_reference, std430, buffer_reference_align = ", align, ") coherent buffer ", name,
                      "C { ", elem, " v[]; };\n");
    };
    blocks("BufF32", 4, "float");
    blocks("BufI32", 4, "int");
    blocks("BufV4", 16, "vec4");
    blocks("BufI64", 8, "int64_t");
    blocks("BufU32", 4, "uint");
    if (f.i8) {
      blocks("BufU8", 1, "uint8_t");
      blocks("BufI8", 1, "int8_t");
    }
    if (f.f16_storage) {
      blocks("BufU16", 2, "uint16_t");
      blocks("BufI16", 2, "int16_t");
    }
    if (f.coop) blocks("BufQ", 16, "uvec4");  // 16-byte pieces of 16-bit operands
    if (f.f64) blocks("BufF64", 8, "double");
    // Half values live in float registers: rounding helpers work on 32-bit patterns, and the
    // 16-bit conversions exist only when 16-bit storage is declared.
    p += float_rounding_helpers();
    p += R"(// log of f32 subnormals from their bits: devices that flush denormals would give -inf.
float kiln_log(float x) {
  uint u = floatBitsToUint(x);
  if ((u & 0x7f800000u) == 0u && (u & 0x7fffffu) != 0u && (u >> 31) == 0u) return log(float(u)) - 103.27892990343185;
  return log(x);
}
)";
    if (f.f16_storage) p += storage_word_helpers();
    p += R"(float kiln_max(float a, float b) { return (isnan(a) || isnan(b)) ? a + b : max(a, b); }
float kiln_min(float a, float b) { return (isnan(a) || isnan(b)) ? a + b : min(a, b); }
float kiln_tanh(float x) {
  float ax = abs(x);
  float e = exp(-2.0 * ax);
  float big = (1.0 - e) / (1.0 + e);
  float x2 = x * x;
  float small = ax * (1.0 + x2 * (-0.333333333 + x2 * (0.133333333 + x2 * (-0.0539682540 + x2 * 0.0218694885))));
  float r = ax < 0.125 ? small : big;
  return isnan(x) ? x : (x < 0.0 ? -r : r);
}
float kiln_erf(float x) {
  float ax = abs(x);
  float x2 = x * x;
  float s = x * (1.1283791671 + x2 * (-0.3761263890 + x2 * (0.1128379167 + x2 * (-0.0268661706 + x2 * (0.0052239776
           + x2 * (-0.0008548327 + x2 * (0.0001205533 + x2 * (-0.0000149253 + x2 * (0.0000016462 + x2 * (-0.0000001637
           + x2 * 0.0000000148))))))))));
  float t = 1.0 / (1.0 + 0.5 * ax);
  float p = -1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 + t * (-0.18628806 + t * (0.27886807
           + t * (-1.13520398 + t * (1.48851587 + t * (-0.82215223 + t * 0.17087277))))))));
  float l = 1.0 - t * exp(-ax * ax + p);
  float r = ax < 1.0 ? s : (x < 0.0 ? -l : l);
  return isnan(x) ? x : r;
}
float kiln_pow(float x, float y) {
  // C's pow: GLSL's pow is undefined for x <= 0 and NaN. |x| is taken from the bits, and a
  // subnormal |x| goes through kiln_log: devices that flush f32 denormals would read it as 0.
  if (y == 0.0 || x == 1.0) return 1.0;
  if (isnan(x) || isnan(y)) return uintBitsToFloat(0x7fc00000u);
  uint ub = floatBitsToUint(x) & 0x7fffffffu;
  float ax = uintBitsToFloat(ub);
  if (isinf(y)) return ub == 0x3f800000u ? 1.0 : ((ub > 0x3f800000u) == (y > 0.0) ? uintBitsToFloat(0x7f800000u) : 0.0);
  bool yint = floor(y) == y;
  if ((floatBitsToUint(x) >> 31) != 0u && ub != 0u && !yint) return uintBitsToFloat(0x7fc00000u);
  bool odd = yint && abs(y) < 16777216.0 && mod(abs(y), 2.0) == 1.0;
  float r = ub == 0u ? (y > 0.0 ? 0.0 : uintBitsToFloat(0x7f800000u))
          : ub == 0x7f800000u ? (y > 0.0 ? uintBitsToFloat(0x7f800000u) : 0.0)
          : ub < 0x00800000u ? exp(y * kiln_log(ax)) : pow(ax, y);
  return ((floatBitsToUint(x) >> 31) != 0u && odd) ? -r : r;
}
int64_t kiln_sext64(int x) { return packInt2x32(ivec2(x, x >> 31)); }
int64_t kiln_zext64(int x) { return packInt2x32(ivec2(x, 0)); }
int kiln_sat_i32(float v) { return isnan(v) ? 0 : v >= 2147483648.0 ? 2147483647 : v <= -2147483648.0 ? (-2147483647 - 1) : int(v); }
int64_t kiln_sat_i64(float v) { return isnan(v) ? 0l : v >= 9.2233720368547758e18 ? 9223372036854775807l : v <= -9.2233720368547758e18 ? (-9223372036854775807l - 1l) : int64_t(v); }
int kiln_idiv(int x, int y) {
  if (y == 0) return 0;
  uint q = (x < 0 ? 0u - uint(x) : uint(x)) / (y < 0 ? 0u - uint(y) : uint(y));
  return (x < 0) != (y < 0) ? int(0u - q) : int(q);
}
int kiln_irem(int x, int y) { return y == 0 ? 0 : x - kiln_idiv(x, y) * y; }
uint kiln_udiv(uint x, uint y) { return y == 0u ? 0u : x / y; }
uint kiln_urem(uint x, uint y) { return y == 0u ? 0u : x % y; }
int64_t kiln_ldiv(int64_t x, int64_t y) {
  if (y == 0l) return 0l;
  uint64_t q = (x < 0l ? 0ul - uint64_t(x) : uint64_t(x)) / (y < 0l ? 0ul - uint64_t(y) : uint64_t(y));
  return (x < 0l) != (y < 0l) ? int64_t(0ul - q) : int64_t(q);
}
int64_t kiln_lrem(int64_t x, int64_t y) { return y == 0l ? 0l : x - kiln_ldiv(x, y) * y; }
)";
    if (f.f64) p += kDoubleMath;
    // Saturating float -> narrow integer conversions, for the widths the kernel uses.
    std::vector<DType> narrow = {DType::kUInt32};
    if (f.f16_storage) narrow.insert(narrow.end(), {DType::kInt16, DType::kUInt16});
    if (f.i8) narrow.insert(narrow.end(), {DType::kInt8, DType::kUInt8});
    for (DType t : narrow) {
      p += saturating_casts({t}, DType::kFloat32);
      if (f.f64) p += saturating_casts({t}, DType::kFloat64);
    }
    return p;
  }

  std::string kernel_open(const std::string&, const std::vector<BufferParam>& bufs, const std::vector<int>& params,
                          int param_base, int block, const std::string& shared_decls) const override {
    std::string s = absl::StrCat("layout(local_size_x = ", block, ") in;\n", shared_decls, "void main() {\n");
    s += "  Table kiln_tbl = Table(pc.table);\n";
    // Table indices from the push constants where they fit, so that kernels equal up to their
    // bindings have one text (twins); baked into the text otherwise.
    const bool pushed = pushes_ids(bufs.size() + params.size());
    auto entry = [&](size_t position, int index) {
      return pushed ? absl::StrCat("kiln_tbl.a[pc.ids[", position, "]]") : absl::StrCat("kiln_tbl.a[", index, "]");
    };
    for (size_t j = 0; j < params.size(); ++j)
      absl::StrAppend(&s, "  uint64_t ", param_name(params[j]), " = ", entry(bufs.size() + j, param_base + params[j]), ";\n");
    for (size_t j = 0; j < bufs.size(); ++j) {
      const BufferParam& b = bufs[j];
      const std::string ro = b.coherent ? "C" : !b.written && !b.aliased ? "R" : "";
      const std::string type = block_name(b.dtype) + ro;
      absl::StrAppend(&s, "  ", type, " ", buffer_name(b.id), " = ", type, "(", entry(j, b.id), ");\n");
      if (vec4_capable(b.dtype) && !b.coherent)
        absl::StrAppend(&s, "  BufV4", ro, " ", vec4_view(b.id, false), " = BufV4", ro, "(uint64_t(", buffer_name(b.id), "));\n");
    }
    return s;
  }
  static std::string block_name(DType t) { return block(t); }
  std::string shared_decl(const std::string& type, const std::string& name, int64_t n) const override {
    return absl::StrCat("shared ", type, " ", name, "[", n, "];\n");
  }

  // --- storage primitives (dialect.h). 16-bit words are uint16_t, declared only when a kernel
  // touches 16-bit buffers (a device feature): casts round with kiln_round_h / kiln_round_bf.
  std::string half_word_type() const override { return "uint16_t"; }
  std::string convert(const std::string& type, const std::string& e) const override {
    return absl::StrCat(type, "(", e, ")");
  }
  std::string float_to_bits(const std::string& e) const override { return absl::StrCat("floatBitsToUint(", e, ")"); }
  std::string bits_to_float(const std::string& e) const override { return absl::StrCat("uintBitsToFloat(", e, ")"); }
  std::string bits_to_double(const std::string& e) const override { return absl::StrCat("uint64BitsToDouble(uint64_t(", e, "))"); }
  std::string param_arg(int) const override { return ""; }  // params come from the table
  std::string f16_to_f32_body() const override { return "return unpackHalf2x16(uint(x)).x;"; }
  // f32 -> f16 rounds in integer arithmetic (to nearest, ties to even; overflow to inf, NaN stays
  // NaN, results below 2^-14 to multiples of 2^-24): NVIDIA's driver was seen (H100, 580) to drop
  // an unpackHalf2x16(packHalf2x16(f)) round trip in some kernels, and GLSL leaves
  // packHalf2x16's rounding open, so a stored f16 is packed from an already rounded value, whose
  // conversion is exact under any rounding mode.
  std::string f32_to_f16_body() const override { return "return uint16_t(packHalf2x16(vec2(kiln_round_h(f), 0.0)) & 0xffffu);"; }
  std::string f16_round_body() const override {
    return "uint u = floatBitsToUint(f); uint a = u & 0x7fffffffu; uint s = u & 0x80000000u;\n"
           "  if (a >= 0x7f800000u) return f;\n"
           "  if (a >= 0x477ff000u) return uintBitsToFloat(s | 0x7f800000u);\n"
           "  if (a < 0x38800000u) return uintBitsToFloat(s | floatBitsToUint(roundEven(uintBitsToFloat(a) * 16777216.0) * 5.9604644775390625e-08));\n"
           "  a += 0xfffu + ((a >> 13) & 1u);\n"
           "  return uintBitsToFloat(s | (a & 0xffffe000u));";
  }
  bool half_words_optional() const override { return true; }
  // GLSL indexes arrays with 32-bit integers: element indices go through uint (buffers of up
  // to 2^32 elements; 64-bit loop indices stay 64-bit until here).
  std::string element(const std::string& buffer, const std::string& index) const override {
    return absl::StrCat(buffer, ".v[uint(", index, ")]");
  }
  // Float32 buffers get a second reference of block type BufV4 (kernel_open).
  std::string vec4_type() const override { return "vec4"; }
  std::string vec4_view(int buf, bool) const override { return absl::StrCat(buffer_name(buf), "v"); }

  // Subgroup shuffles when the device's subgroups are wide (NVIDIA: 32); narrow ones (lavapipe:
  // 8) reduce through shared memory. The size is fixed at pipeline creation by the runtime.
  int warp_size(const ir::TargetInfo& t) const override { return t.subgroup_size >= 16 ? t.subgroup_size : 0; }
  bool can_shuffle(DType t) const override { return t == DType::kFloat32 || t == DType::kInt32; }
  std::string shuffle_xor(DType, const std::string& v, int mask) const override {
    return absl::StrCat("subgroupShuffleXor(", v, ", ", mask, "u)");
  }

  std::string lane_of(const std::string&, int) const override { return "int(gl_SubgroupInvocationID)"; }
  std::string warp_of(const std::string&, int) const override { return "int(gl_SubgroupID)"; }

  std::string local_id() const override { return "int(gl_LocalInvocationID.x)"; }
  std::string group_id() const override { return "int64_t(gl_WorkGroupID.x)"; }
  std::string num_groups() const override { return "int64_t(gl_NumWorkGroups.x)"; }
  std::string barrier() const override { return "memoryBarrierShared(); barrier();"; }
  std::string device_fence() const override { return "memoryBarrierBuffer();"; }
  std::string take_ticket(int buf, const std::string& index) const override {
    return absl::StrCat("atomicAdd(", buffer_name(buf), ".v[uint(", index, ")], 1u)");
  }

  std::string op(ir::Op o, DType t, const std::vector<std::string>& a) const override {
    bool f = is_float(t), d = t == DType::kFloat64;
    std::string one = d ? "1.0lf" : "1.0";
    auto call = [&](const char* name) { return absl::StrCat(name, "(", a[0], ")"); };
    const bool native = f || t == DType::kInt32 || t == DType::kInt64 || t == DType::kUInt32;
    auto bin = [&](const char* sym) {
      if (native) return absl::StrCat("(", a[0], " ", sym, " ", a[1], ")");
      return absl::StrCat(type(t), "(", a[0], " ", sym, " ", a[1], ")");
    };
    // GLSL's transcendentals are float-only: doubles use kiln's double versions.
    auto fcall = [&](const char* name) {
      if (!d) return std::string(name) == "log" ? call("kiln_log") : call(name);
      return absl::StrCat("kiln_", name, "_d(", a[0], ")");
    };
    switch (o) {
      case ir::Op::kNeg: return native ? absl::StrCat("(-", a[0], ")") : absl::StrCat(type(t), "(-", a[0], ")");
      case ir::Op::kExp: return fcall("exp");
      case ir::Op::kLog: return fcall("log");
      case ir::Op::kSqrt: return call("sqrt");
      case ir::Op::kRsqrt: return call("inversesqrt");
      case ir::Op::kAbs:
        if (f) return call("abs");
        if (!is_signed(t)) return a[0];
        return absl::StrCat("(", a[0], " < ", literal(t, Scalar::from_int(0)), " ? ", op(ir::Op::kNeg, t, a), " : ", a[0], ")");
      case ir::Op::kSin: return fcall("sin");
      case ir::Op::kCos: return fcall("cos");
      case ir::Op::kTanh: return d ? call("kiln_tanh_d") : call("kiln_tanh");
      case ir::Op::kErf: return d ? call("kiln_erf_d") : call("kiln_erf");
      case ir::Op::kFloor: return call("floor");
      case ir::Op::kCeil: return call("ceil");
      case ir::Op::kSigmoid:
        return d ? absl::StrCat("(1.0lf / (1.0lf + kiln_exp_d(-", a[0], ")))")
                 : absl::StrCat("(1.0 / (1.0 + exp(-", a[0], ")))");
      case ir::Op::kRecip: return absl::StrCat("(", one, " / ", a[0], ")");
      case ir::Op::kNot: return absl::StrCat("(!", a[0], ")");
      case ir::Op::kAdd: return bin("+");
      case ir::Op::kSub: return bin("-");
      case ir::Op::kMul: return bin("*");
      case ir::Op::kDiv: return absl::StrCat("(", a[0], " / ", a[1], ")");
      case ir::Op::kPow:
        return d ? absl::StrCat("kiln_pow_d(", a[0], ", ", a[1], ")") : absl::StrCat("kiln_pow(", a[0], ", ", a[1], ")");
      case ir::Op::kMax:
        if (f) return absl::StrCat("kiln_max(", a[0], ", ", a[1], ")");
        if (t == DType::kBool) return absl::StrCat("(", a[0], " || ", a[1], ")");
        return absl::StrCat("(", a[0], " > ", a[1], " ? ", a[0], " : ", a[1], ")");
      case ir::Op::kMin:
        if (f) return absl::StrCat("kiln_min(", a[0], ", ", a[1], ")");
        if (t == DType::kBool) return absl::StrCat("(", a[0], " && ", a[1], ")");
        return absl::StrCat("(", a[0], " < ", a[1], " ? ", a[0], " : ", a[1], ")");
      case ir::Op::kLt:
        if (t == DType::kBool) return absl::StrCat("(int(", a[0], ") < int(", a[1], "))");
        return absl::StrCat("(", a[0], " < ", a[1], ")");
      case ir::Op::kLe:
        if (t == DType::kBool) return absl::StrCat("(int(", a[0], ") <= int(", a[1], "))");
        return absl::StrCat("(", a[0], " <= ", a[1], ")");
      case ir::Op::kEq: return absl::StrCat("(", a[0], " == ", a[1], ")");
      case ir::Op::kNe: return absl::StrCat("(", a[0], " != ", a[1], ")");
      case ir::Op::kAnd: return absl::StrCat("(", a[0], " && ", a[1], ")");
      case ir::Op::kOr: return absl::StrCat("(", a[0], " || ", a[1], ")");
      // (op.h's defined cases, through unsigned magnitudes: GLSL leaves / by 0 and % of negative
      // operands undefined; 8- and 16-bit operands divide as int and wrap back)
      case ir::Op::kIntDiv:
      case ir::Op::kIntRem: {
        const bool div = o == ir::Op::kIntDiv;
        if (t == DType::kInt64) return absl::StrCat(div ? "kiln_ldiv(" : "kiln_lrem(", a[0], ", ", a[1], ")");
        if (t == DType::kInt32) return absl::StrCat(div ? "kiln_idiv(" : "kiln_irem(", a[0], ", ", a[1], ")");
        if (t == DType::kUInt32) return absl::StrCat(div ? "kiln_udiv(" : "kiln_urem(", a[0], ", ", a[1], ")");
        return absl::StrCat(type(t), "(", div ? "kiln_idiv(int(" : "kiln_irem(int(", a[0], "), int(", a[1], ")))");
      }
      default: return "0";
    }
  }

  std::string cast(DType from, DType to, const std::string& v) const override {
    if (from == to) return v;
    if (to == DType::kBool) return absl::StrCat("(", v, " != ", literal(from, Scalar::from_int(0).cast_to(from)), ")");
    if (from == DType::kBool) return absl::StrCat(type(to), "(", v, ")");
    if (is_float(from) && is_float(to)) {
      std::string r = absl::StrCat(type(to), "(", v, ")");
      if (to == DType::kFloat16 || to == DType::kBFloat16) return round_to(to, r);
      return r;
    }
    if (is_float(from)) {
      return absl::StrCat("kiln_sat_", dtype_name(to), "(", v, ")");
    }
    // Widening to int64 through packInt2x32 instead of int64_t(x): Mesa 22's lavapipe gets
    // `c < int64_t(x)` (constant c) wrong, answering `int64_t(x) < c` (kiln_fuzz found it).
    if (to == DType::kInt64) return absl::StrCat(is_signed(from) ? "kiln_sext64(int(" : "kiln_zext64(int(", v, "))");
    return absl::StrCat(type(to), "(", v, ")");
  }

  std::string is_nan(DType, const std::string& v) const override { return absl::StrCat("isnan(", v, ")"); }
  std::string u32() const override { return "uint"; }
  std::string u32_literal(uint32_t v) const override { return absl::StrCat(v, "u"); }
  std::string u32_to_float(const std::string& v, DType t) const override {
    return t == DType::kFloat64 ? absl::StrCat("(double(", v, " >> 8) * 5.9604644775390625e-08lf)")
                                : absl::StrCat("(float(", v, " >> 8) * 5.9604644775390625e-08)");
  }
  std::string index_to_u32(const std::string& v, int shift) const override {
    return shift ? absl::StrCat("uint(uint64_t(", v, ") >> ", shift, ")") : absl::StrCat("uint(", v, ")");
  }
};

}  // namespace

std::unique_ptr<DialectOps> make_glsl_dialect() { return std::make_unique<GlslDialect>(); }

}  // namespace kiln::codegen::gpu

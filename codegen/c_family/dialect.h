// What differs between the C-family GPU languages (CUDA, HIP, GLSL, MSL): type names, literals,
// memory access, thread builtins, barriers, math functions. The renderer (renderer.cc) writes
// the same kernel structure for every dialect and asks this interface for the pieces.
//
// Storage conversions live once, here in DialectOps (defined in renderer.cc), for every dialect:
//   - a bool is stored as a uint8 byte: written as select(v, literal(u8, 1), literal(u8, 0)),
//     read back with cast(u8 -> bool);
//   - f16 and bf16 are stored as 16-bit words and computed in f32 through kiln_h2f / kiln_f2h /
//     kiln_bf2f / kiln_f2bf; a cast to f16/bf16 rounds the f32 value to that precision. The
//     helpers' definitions are written here too (the bf16 rounding, the functions' shapes); only
//     the f16 conversion itself is the dialect's intrinsic;
//   - float32 buffers are also read and written 16 bytes at a time (vec4_load / vec4_store).
// A dialect (HIP and MSL included) provides only these primitive spellings for them:
//
//   primitive              CUDA / HIP                       GLSL                     MSL (expected)
//   type, literal, select, as for compute values            (same)                   (same)
//     cast, u32            (unsigned char, unsigned, ...)   (uint8_t, uint, ...)     (uchar, uint)
//   half_word_type         unsigned short                   uint16_t                 ushort
//   convert(T, e)          (T)(e)                           T(e)                     T(e)
//   float_to_bits(e)       __float_as_uint(e)               floatBitsToUint(e)       as_type<uint>(e)
//   bits_to_float(e)       __uint_as_float(e)               uintBitsToFloat(e)       as_type<float>(e)
//   f16_to_f32_body        asm cvt.f32.f16 / HIP _Float16   unpackHalf2x16           as_type<half>(x)
//   f32_to_f16_body        asm cvt.rn.f16.f32 / _Float16    packHalf2x16             as_type<ushort>(half(f))
//   helper_prefix          __device__ __forceinline__       (none)                   (none)
//   element(buffer, i)     b3[i]                            b3.v[uint(i)]            b3[i]
//   vec4_type, vec4_ctor   float4, make_float4              vec4, vec4               float4, float4
//   vec4_view(buf, write)  reinterpret_cast<const float4*>  b3v (a BufV4 reference)  a cast pointer
//                          (b3), without const to write
//   half_words_optional    false                            true: 16-bit types are a false
//                                                           device feature, so casts
//                                                           round with kiln_round_h
//                                                           (f16_round_body) and
//                                                           kiln_round_bf instead
#pragma once

#include <memory>
#include <set>
#include <string>
#include <vector>

#include "codegen/c_family/gpu_program.h"
#include "ir/op.h"
#include "kiln/dtype.h"
#include "ir/target_info.h"

namespace kiln::codegen::gpu {

struct BufferParam {
  int id;        // ir::Program buffer id
  DType dtype;   // element dtype (storage follows from it)
  bool written;  // the kernel stores into it
  bool aliased = false;  // shares bytes with another buffer of the kernel (in place): no __restrict__
  // Read back by other workgroups of the same launch (a chained kernel's partials and tickets,
  // ir::Kernel::finish): its loads and stores must not stop in a multiprocessor's own cache
  // (CUDA/HIP: volatile; GLSL: a coherent block). 4- and 8-byte elements only.
  bool coherent = false;
};

// Storage element kinds that need declarations (GLSL buffer_reference block types, ...).
struct Features {
  std::set<DType> storage;  // dtypes of buffers used
  bool f64 = false, i64 = false, i8 = false, f16_storage = false;
  bool shared = false;
  bool subgroup = false;
  bool coop = false;  // GLSL: cooperative matrices (GL_NV_cooperative_matrix, float16_t, uvec4 buffers)
};

class DialectOps {
 public:
  virtual ~DialectOps() = default;
  virtual Dialect kind() const = 0;

  // --- types and literals
  virtual std::string type(DType t) const = 0;  // compute type of a value of dtype t
  virtual std::string index_type(bool wide) const = 0;
  virtual std::string literal(DType t, const Scalar& v) const = 0;
  virtual std::string index_literal(int64_t v, bool wide) const = 0;
  // Converts an integer expression to the index type.
  virtual std::string index_cast(const std::string& e, bool wide) const = 0;

  // --- program structure
  // Helper functions every kernel may call (conversions, erf, safe tanh, saturating casts).
  virtual std::string preamble(const Features& f) const = 0;
  // Text before and after a kernel body. `block` is the workgroup size (baked into GLSL/MSL).
  // `params` are the param slots the kernel reads (ir/params.h), each the variable
  // param_name(slot) holding its 64-bit pattern: a kernel argument (CUDA/HIP, param_arg), or read
  // from the address table at param_base + slot (GLSL).
  virtual std::string kernel_open(const std::string& name, const std::vector<BufferParam>& bufs, const std::vector<int>& params,
                                  int param_base, int block, const std::string& shared_decls) const = 0;
  static std::string param_name(int slot) { return "kiln_p" + std::to_string(slot); }
  // The kernel-argument declaration of a param (CUDA/HIP: `unsigned long long kiln_p<slot>`).
  virtual std::string param_arg(int slot) const { return "unsigned long long " + param_name(slot); }
  virtual std::string kernel_close() const { return "}\n"; }
  // A shared-memory array declaration (placed by kernel_open).
  virtual std::string shared_decl(const std::string& type, const std::string& name, int64_t n) const = 0;

  // --- memory (shared, defined in renderer.cc): `index` is an element index expression of
  // index type. Buffer `id` is the variable buffer_name(id) in every dialect.
  static std::string buffer_name(int id) { return "b" + std::to_string(id); }
  // The type a buffer of dtype t holds: bools as bytes, f16/bf16 as 16-bit words.
  std::string storage_type(DType t) const;
  // A stored element `e` of dtype t as a compute value, and a compute value `v` as stored.
  std::string from_storage(DType t, const std::string& e) const;
  std::string to_storage(DType t, const std::string& v) const;
  // An f32 compute value rounded to the precision of t (kFloat16 / kBFloat16).
  std::string round_to(DType t, const std::string& v) const;
  std::string load(int buf, DType dt, const std::string& index) const;
  std::string store(int buf, DType dt, const std::string& index, const std::string& value) const;
  // Helper functions the conversions above call: float_rounding_helpers() (kiln_round_bf, and
  // kiln_round_h where half_words_optional()) uses 32-bit types only; storage_word_helpers()
  // (kiln_h2f, kiln_f2h, kiln_bf2f, kiln_f2bf) uses the 16-bit word type and needs the former.
  std::string float_rounding_helpers() const;
  std::string storage_word_helpers() const;
  // kiln_sat_<dtype name>(F v) for each integer dtype in `to`, F the type of `from` (f32 or f64):
  // the saturating conversion casts call (NaN -> 0, values past the range -> its ends).
  std::string saturating_casts(std::initializer_list<DType> to, DType from) const;

  // --- 16-byte float32 access (shared; 4 consecutive elements at element index 4*index)
  static bool vec4_capable(DType t) { return t == DType::kFloat32; }
  std::string vec4_load(int buf, const std::string& index) const;
  std::string vec4_store(int buf, const std::string& index, const std::vector<std::string>& lanes) const;
  virtual std::string vec4_type() const = 0;
  virtual std::string vec4_lane(const std::string& v, int lane) const {
    static const char* names[] = {".x", ".y", ".z", ".w"};
    return v + names[lane];
  }

  // --- storage primitives (see the table above)
  virtual std::string half_word_type() const = 0;
  // Explicit conversion of expression e to the type named T.
  virtual std::string convert(const std::string& type, const std::string& e) const = 0;
  // The bits of an f32 as u32() and back.
  virtual std::string float_to_bits(const std::string& e) const = 0;
  virtual std::string bits_to_float(const std::string& e) const = 0;
  // A 64-bit unsigned expression's bits as an f64.
  virtual std::string bits_to_double(const std::string& e) const = 0;
  // Bodies of `float kiln_h2f(<half word> x)` and `<half word> kiln_f2h(float f)` (round to
  // nearest even), and, where half_words_optional(), of `float kiln_round_h(float f)`.
  virtual std::string f16_to_f32_body() const = 0;
  virtual std::string f32_to_f16_body() const = 0;
  virtual std::string f16_round_body() const { return "return kiln_h2f(kiln_f2h(f));"; }
  // The body of `float kiln_round_bf(float f)`: round to the nearest bf16, ties to even, NaN
  // stays NaN. The portable one works on the f32 bits; a dialect may use an instruction.
  virtual std::string bf16_round_body() const { return bf16_round_portable_body(); }
  std::string bf16_round_portable_body() const;
  // Text before a helper function's return type.
  virtual std::string helper_prefix() const { return ""; }
  // The element at `index` of `buffer` (buffer_name(id), or a vec4_view) as an lvalue.
  virtual std::string element(const std::string& buffer, const std::string& index) const = 0;
  // Float32 buffer `buf` seen as an array of vec4_type(), for reading or for writing.
  virtual std::string vec4_view(int buf, bool write) const = 0;
  virtual std::string vec4_ctor() const { return vec4_type(); }
  // Whether the 16-bit word type exists only in kernels that touch 16-bit buffers (GLSL: a
  // device feature); casts to f16/bf16 then round with 32-bit helpers.
  virtual bool half_words_optional() const { return false; }

  // --- cooperation inside a warp / subgroup. warp_size() <= 0: no shuffles, use shared memory.
  virtual int warp_size(const ir::TargetInfo& t) const = 0;
  virtual bool can_shuffle(DType t) const = 0;
  virtual std::string shuffle_xor(DType t, const std::string& v, int mask) const = 0;
  // Lane within the warp / warp within the workgroup of local thread `lid`.
  virtual std::string lane_of(const std::string& lid, int ws) const { return "(" + lid + " % " + std::to_string(ws) + ")"; }
  virtual std::string warp_of(const std::string& lid, int ws) const { return "(" + lid + " / " + std::to_string(ws) + ")"; }

  // --- threads
  virtual std::string local_id() const = 0;
  virtual std::string group_id() const = 0;
  virtual std::string num_groups() const = 0;
  virtual std::string barrier() const = 0;
  // --- chained kernels (ir::Kernel::finish): a statement making this thread's earlier stores to
  // coherent buffers visible to every workgroup before its later ones (and, after a ticket, the
  // others' stores visible to its later loads); and an expression adding 1 to element `index`
  // of the coherent uint32 buffer `buf` atomically, giving the value before.
  virtual std::string device_fence() const = 0;
  virtual std::string take_ticket(int buf, const std::string& index) const = 0;

  // --- arithmetic
  // A math or arithmetic op on compute-typed operands of dtype t (the operand dtype; comparison
  // results are the dialect's bool).
  virtual std::string op(ir::Op op, DType t, const std::vector<std::string>& a) const = 0;
  // The C-like dialects' op (CUDA, HIP, MSL; dialect_c_like.cc): spelled with the primitives
  // (type, convert, u32, wide_unsigned, literal) and math()'s function names.
  std::string c_like_op(ir::Op op, DType t, const std::vector<std::string>& a) const;
  // C-like dialects: the function computing math op `op` (exp .. ceil, abs, pow, max, min) on
  // compute values of dtype t, and the 64-bit unsigned type.
  virtual std::string math(ir::Op op, DType t) const {
    (void)op, (void)t;
    return "";
  }
  virtual std::string wide_unsigned() const { return "unsigned long long"; }
  virtual std::string cast(DType from, DType to, const std::string& v) const = 0;
  virtual std::string select(const std::string& c, const std::string& a, const std::string& b) const {
    return "(" + c + " ? " + a + " : " + b + ")";
  }
  virtual std::string is_nan(DType t, const std::string& v) const = 0;
  // Bit-exact 32-bit unsigned arithmetic type (random numbers).
  virtual std::string u32() const = 0;
  virtual std::string u32_literal(uint32_t v) const = 0;
  virtual std::string u32_to_float(const std::string& v, DType t) const = 0;
  virtual std::string index_to_u32(const std::string& v, int shift) const = 0;
};

std::unique_ptr<DialectOps> make_dialect(Dialect d);

// The HIP flavor's preamble head: the runtime names kiln's kernels use, defined without any
// header (hip_prelude.cc).
std::string hip_prelude();

// Shared pieces of C-like dialects.
std::string c_float_literal(double v, bool is_double, const std::string& float_suffix);

}  // namespace kiln::codegen::gpu

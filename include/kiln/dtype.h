// Element types, shapes and scalar values shared by the public API and the IR.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace kiln {

enum class DType : uint8_t {
  kBool,
  kUInt8,
  kInt8,
  kInt32,
  kInt64,
  kFloat16,
  kBFloat16,
  kFloat32,
  kFloat64,
  // Appended (the numbering is stored in compiled programs).
  kInt16,
  kUInt16,
  kUInt32,
};

inline constexpr DType bool_ = DType::kBool;
inline constexpr DType uint8 = DType::kUInt8;
inline constexpr DType int8 = DType::kInt8;
inline constexpr DType int32 = DType::kInt32;
inline constexpr DType int64 = DType::kInt64;
inline constexpr DType float16 = DType::kFloat16;
inline constexpr DType bfloat16 = DType::kBFloat16;
inline constexpr DType float32 = DType::kFloat32;
inline constexpr DType float64 = DType::kFloat64;
inline constexpr DType int16 = DType::kInt16;
inline constexpr DType uint16 = DType::kUInt16;
inline constexpr DType uint32 = DType::kUInt32;

inline constexpr int kNumDTypes = 12;

// Size of one element in device memory (bool is stored as one byte).
int64_t dtype_size(DType t);
bool is_float(DType t);
bool is_int(DType t);  // integer types, excluding bool
bool is_signed(DType t);
// Short name used in IR text and messages: f32, f16, bf16, f64, i64, i32, i16, i8, u32, u16, u8,
// bool. (No uint64: kiln's scalars and its reference interpreter hold integers as int64.)
const char* dtype_name(DType t);
// Inverse of dtype_name; returns false when the name is unknown.
bool dtype_from_name(const std::string& name, DType* out);
// NumPy/PyTorch promotion of two tensor dtypes.
DType promote_types(DType a, DType b);
// The smallest and largest value of an integer dtype (bool: 0 and 1; float dtypes: int64's range),
// and `v` wrapped to an integer dtype (two's complement; bool: v != 0; others: unchanged).
int64_t int_lowest(DType t);
int64_t int_highest(DType t);
int64_t wrap_int(DType t, int64_t v);

using Shape = std::vector<int64_t>;

// Number of elements; 1 for a scalar shape []. Returns -1 on int64 overflow.
int64_t shape_numel(const Shape& s);
// "[2,3]" style text used in messages and IR.
std::string shape_str(const Shape& s);

// A scalar that keeps integers exact: integers (and bool) hold `i`, floats hold `f`.
struct Scalar {
  bool is_int = false;
  int64_t i = 0;
  double f = 0.0;

  Scalar() = default;
  static Scalar from_double(double v) { Scalar s; s.f = v; return s; }
  static Scalar from_int(int64_t v) { Scalar s; s.is_int = true; s.i = v; s.f = double(v); return s; }
  double as_double() const { return is_int ? double(i) : f; }
  int64_t as_int() const;
  // Converts to the representation of `t`, applying the dtype's rounding/wrapping.
  Scalar cast_to(DType t) const;
  // Bitwise on floats: NaN == NaN, 0.0 != -0.0 (inline: recording compares constants per op).
  bool operator==(const Scalar& o) const {
    if (is_int != o.is_int) return false;
    if (is_int) return i == o.i;
    return __builtin_memcmp(&f, &o.f, sizeof f) == 0;
  }
};

}  // namespace kiln

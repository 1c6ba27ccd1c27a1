#include <cmath>
#include <cstring>
#include <climits>
#include <limits>

#include "kiln/dtype.h"

namespace kiln {

int64_t dtype_size(DType t) {
  switch (t) {
    case DType::kBool:
    case DType::kUInt8:
    case DType::kInt8: return 1;
    case DType::kInt16:
    case DType::kUInt16:
    case DType::kFloat16:
    case DType::kBFloat16: return 2;
    case DType::kInt32:
    case DType::kUInt32:
    case DType::kFloat32: return 4;
    case DType::kInt64:
    case DType::kFloat64: return 8;
  }
  return 0;
}

bool is_float(DType t) {
  return t == DType::kFloat16 || t == DType::kBFloat16 || t == DType::kFloat32 ||
         t == DType::kFloat64;
}

bool is_int(DType t) {
  switch (t) {
    case DType::kUInt8:
    case DType::kInt8:
    case DType::kInt16:
    case DType::kUInt16:
    case DType::kInt32:
    case DType::kUInt32:
    case DType::kInt64: return true;
    default: return false;
  }
}

bool is_signed(DType t) {
  return t != DType::kUInt8 && t != DType::kUInt16 && t != DType::kUInt32 && t != DType::kBool;
}

const char* dtype_name(DType t) {
  switch (t) {
    case DType::kBool: return "bool";
    case DType::kUInt8: return "u8";
    case DType::kInt8: return "i8";
    case DType::kInt32: return "i32";
    case DType::kInt64: return "i64";
    case DType::kFloat16: return "f16";
    case DType::kBFloat16: return "bf16";
    case DType::kFloat32: return "f32";
    case DType::kFloat64: return "f64";
    case DType::kInt16: return "i16";
    case DType::kUInt16: return "u16";
    case DType::kUInt32: return "u32";
  }
  return "?";
}

bool dtype_from_name(const std::string& name, DType* out) {
  for (int i = 0; i < kNumDTypes; ++i) {
    if (name == dtype_name(DType(i))) {
      *out = DType(i);
      return true;
    }
  }
  return false;
}

namespace {
int int_bits(DType t) {
  switch (t) {
    case DType::kUInt8:
    case DType::kInt8: return 8;
    case DType::kInt16:
    case DType::kUInt16: return 16;
    case DType::kInt32:
    case DType::kUInt32: return 32;
    case DType::kInt64: return 64;
    default: return 0;
  }
}
}  // namespace

DType promote_types(DType a, DType b) {
  if (a == b) return a;
  if (a == DType::kBool) return b;
  if (b == DType::kBool) return a;
  bool fa = is_float(a), fb = is_float(b);
  if (fa && !fb) return a;
  if (fb && !fa) return b;
  if (fa && fb) {
    if (a == DType::kFloat64 || b == DType::kFloat64) return DType::kFloat64;
    if (a == DType::kFloat32 || b == DType::kFloat32) return DType::kFloat32;
    return DType::kFloat32;  // f16 with bf16
  }
  // Both integers.
  bool sa = is_signed(a), sb = is_signed(b);
  int ba = int_bits(a), bb = int_bits(b);
  if (sa == sb) return ba >= bb ? a : b;
  // Mixed signedness, as NumPy and PyTorch: the signed type when it is wider, else the signed
  // type of twice the unsigned one's width (u8 + i8 -> i16, u32 + i32 -> i64).
  DType s = sa ? a : b;
  int bs = sa ? ba : bb, bu = sa ? bb : ba;
  if (bs > bu) return s;
  return bu == 8 ? DType::kInt16 : bu == 16 ? DType::kInt32 : DType::kInt64;
}

int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) {
    if (d < 0) return -1;
    if (d != 0 && n > std::numeric_limits<int64_t>::max() / d) return -1;
    n *= d;
  }
  return n;
}

std::string shape_str(const Shape& s) {
  std::string r = "[";
  for (size_t i = 0; i < s.size(); ++i) {
    if (i) r += ",";
    r += std::to_string(s[i]);
  }
  return r + "]";
}

int64_t int_lowest(DType t) {
  switch (t) {
    case DType::kInt8: return INT8_MIN;
    case DType::kInt16: return INT16_MIN;
    case DType::kInt32: return INT32_MIN;
    case DType::kBool:
    case DType::kUInt8:
    case DType::kUInt16:
    case DType::kUInt32: return 0;
    default: return INT64_MIN;
  }
}

int64_t int_highest(DType t) {
  switch (t) {
    case DType::kBool: return 1;
    case DType::kUInt8: return UINT8_MAX;
    case DType::kInt8: return INT8_MAX;
    case DType::kInt16: return INT16_MAX;
    case DType::kUInt16: return UINT16_MAX;
    case DType::kInt32: return INT32_MAX;
    case DType::kUInt32: return UINT32_MAX;
    default: return INT64_MAX;
  }
}

int64_t wrap_int(DType t, int64_t v) {
  const uint64_t u = uint64_t(v);
  switch (t) {
    case DType::kBool: return v != 0;
    case DType::kUInt8: return int64_t(uint8_t(u));
    case DType::kInt8: return int64_t(int8_t(uint8_t(u)));
    case DType::kInt16: return int64_t(int16_t(uint16_t(u)));
    case DType::kUInt16: return int64_t(uint16_t(u));
    case DType::kInt32: return int64_t(int32_t(uint32_t(u)));
    case DType::kUInt32: return int64_t(uint32_t(u));
    default: return v;
  }
}

int64_t Scalar::as_int() const {
  if (is_int) return i;
  if (std::isnan(f)) return 0;
  if (f >= 9.2233720368547758e18) return std::numeric_limits<int64_t>::max();
  if (f <= -9.2233720368547758e18) return std::numeric_limits<int64_t>::min();
  return int64_t(f);
}

Scalar Scalar::cast_to(DType t) const {
  if (is_float(t)) {
    double v = as_double();
    if (t == DType::kFloat32) v = double(float(v));
    // f16/bf16 rounding is applied by the consumers that store them; keep the f64 value.
    return from_double(v);
  }
  if (t == DType::kBool) return from_int(is_int ? (i != 0) : (f != 0.0));
  int64_t v = as_int();
  if (!is_int) {
    // float -> int saturates to the target range (NaN -> 0): kiln's defined cast semantics.
    const int64_t lo = int_lowest(t), hi = int_highest(t);
    return from_int(v < lo ? lo : v > hi ? hi : v);
  }
  return from_int(wrap_int(t, v));
}

}  // namespace kiln

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
    case DType::kFloat16:
    case DType::kBFloat16: return 2;
    case DType::kInt32:
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
  return t == DType::kUInt8 || t == DType::kInt8 || t == DType::kInt32 || t == DType::kInt64;
}

bool is_signed(DType t) { return t != DType::kUInt8 && t != DType::kBool; }

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
    case DType::kInt32: return 32;
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
  // Mixed signedness: u8 with a signed type. u8 + i8 needs 16 bits; we have no i16, use i32.
  DType s = sa ? a : b;
  int bs = sa ? ba : bb;
  if (bs > 8) return s;
  return DType::kInt32;
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
    int64_t lo = t == DType::kUInt8 ? 0 : t == DType::kInt8 ? -128 : t == DType::kInt32 ? INT32_MIN : INT64_MIN;
    int64_t hi = t == DType::kUInt8 ? 255 : t == DType::kInt8 ? 127 : t == DType::kInt32 ? INT32_MAX : INT64_MAX;
    return from_int(v < lo ? lo : v > hi ? hi : v);
  }
  switch (t) {
    case DType::kUInt8: v = int64_t(uint8_t(uint64_t(v))); break;
    case DType::kInt8: v = int64_t(int8_t(uint8_t(uint64_t(v)))); break;
    case DType::kInt32: v = int64_t(int32_t(uint32_t(uint64_t(v)))); break;
    default: break;
  }
  return from_int(v);
}

}  // namespace kiln

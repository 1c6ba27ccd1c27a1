// IEEE binary16 and bfloat16 conversions on the host (round to nearest even).
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>

#include "kiln/dtype.h"

namespace kiln::ir {

inline uint32_t float_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  return u;
}
inline float bits_float(uint32_t u) {
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

inline uint16_t float_to_half(float f) {
  uint32_t x = float_bits(f);
  uint32_t sign = (x >> 16) & 0x8000;
  uint32_t absx = x & 0x7fffffff;
  if (absx >= 0x7f800000) return uint16_t(sign | 0x7c00 | (absx > 0x7f800000 ? 0x200 : 0));
  if (absx >= 0x477ff000) return uint16_t(sign | 0x7c00);  // rounds to >= 65520: inf
  if (absx < 0x38800000) {                                // subnormal or zero in half
    // value = absx_float; half subnormal unit = 2^-24
    float a = bits_float(absx);
    float scaled = a * 16777216.0f;  // exact in float for this range
    uint32_t m = uint32_t(std::nearbyint(scaled));
    return uint16_t(sign | m);
  }
  uint32_t mant = absx & 0x7fffff;
  int32_t exp = int32_t(absx >> 23) - 127 + 15;
  uint32_t h = (uint32_t(exp) << 10) | (mant >> 13);
  uint32_t rem = mant & 0x1fff;
  if (rem > 0x1000 || (rem == 0x1000 && (h & 1))) ++h;
  return uint16_t(sign | h);
}

inline float half_to_float(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000) << 16;
  uint32_t exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
  if (exp == 0) {
    float v = float(mant) * (1.0f / 16777216.0f);
    return sign ? -v : v;
  }
  if (exp == 31) return bits_float(sign | 0x7f800000 | (mant << 13));
  return bits_float(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

inline uint16_t float_to_bf16(float f) {
  uint32_t x = float_bits(f);
  if ((x & 0x7fffffff) > 0x7f800000) return uint16_t((x >> 16) | 0x40);  // quiet NaN
  uint32_t lsb = (x >> 16) & 1;
  x += 0x7fff + lsb;
  return uint16_t(x >> 16);
}

inline float bf16_to_float(uint16_t b) { return bits_float(uint32_t(b) << 16); }

// Round a double through the storage precision of a half type.
inline double round_half(double v) { return half_to_float(float_to_half(float(v))); }
inline double round_bf16(double v) { return bf16_to_float(float_to_bf16(float(v))); }

// The value a constant of dtype t holds: a Scalar keeps its f64 value (ir/dtype.cc), and a half
// constant means that value rounded to its type, as the interpreter reads it (so `x > 0.1` over
// bf16 compares with bf16's 0.10009765625, as PyTorch does).
inline Scalar const_value(DType t, const Scalar& s) {
  if (t == DType::kFloat16) return Scalar::from_double(round_half(s.as_double()));
  if (t == DType::kBFloat16) return Scalar::from_double(round_bf16(s.as_double()));
  return s;
}

}  // namespace kiln::ir

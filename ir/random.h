// kiln's counter-based random numbers: the definition every backend implements.
//
// Element `index` (row-major flat index) of rand(shape, seed) is uniform_from_bits(bits(index));
// of randn(shape, seed) it is the Box-Muller transform of bits(2*index) and bits(2*index+1).
// The two 32-bit keys derive from the seed on the host and are baked into kernels.
#pragma once

#include <cmath>
#include <cstdint>

namespace kiln::ir {

inline uint32_t rng_mix32(uint32_t x) {
  x ^= x >> 16;
  x *= 0x7feb352dU;
  x ^= x >> 15;
  x *= 0x846ca68bU;
  x ^= x >> 16;
  return x;
}

struct RngKey {
  uint32_t k0, k1;
};

inline RngKey rng_key(uint64_t seed) {
  uint32_t k0 = rng_mix32(uint32_t(seed) ^ 0x9e3779b9U);
  uint32_t k1 = rng_mix32(uint32_t(seed >> 32) ^ k0 ^ 0x85ebca6bU);
  return {k0, k1};
}

inline uint32_t rng_bits(RngKey k, uint64_t index) {
  return rng_mix32(rng_mix32(uint32_t(index) ^ k.k0) + (uint32_t(index >> 32) ^ k.k1));
}

// 24 random bits -> [0, 1), exact in float32.
inline double rng_uniform(uint32_t bits) { return double(bits >> 8) * (1.0 / 16777216.0); }

inline double rng_normal(uint32_t bits_a, uint32_t bits_b) {
  double u1 = rng_uniform(bits_a), u2 = rng_uniform(bits_b);
  return std::sqrt(-2.0 * std::log(1.0 - u1)) * std::cos(6.283185307179586 * u2);
}

}  // namespace kiln::ir

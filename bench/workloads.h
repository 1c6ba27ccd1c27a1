// The BENCH.md workloads W1-W6 as kiln graphs, shared by the CPU and GPU benchmark drivers.
#pragma once

#include "kiln/kiln.h"

namespace kiln::bench {

// W1: y = tanh(x*a + b) * sigmoid(x) + exp(-abs(b)) * 0.5 - x*x over 2^24 elements.
inline Tensor w1(const Tensor& x, const Tensor& a, const Tensor& b) {
  return tanh(x * a + b) * sigmoid(x) + exp(-abs(b)) * 0.5 - x * x;
}
// W2: row softmax of 8192 x 8192.
inline Tensor w2(const Tensor& x) { return softmax(x, -1); }
// W3: layer_norm over the last dim of 16384 x 4096 with weight and bias, eps 1e-5.
inline Tensor w3(const Tensor& x, const Tensor& w, const Tensor& b) { return layer_norm(x, w, b, 1e-5); }
// W4a: full sum of 2^26 floats. W4b: mean over axis 0 of 16384 x 4096.
inline Tensor w4a(const Tensor& x) { return x.sum(); }
inline Tensor w4b(const Tensor& x) { return x.mean({0}); }
// W5: MLP block in bf16: x @ W1 + b1 -> gelu(tanh) -> @ W2 + b2.
inline Tensor w5(const Tensor& x, const Tensor& W1, const Tensor& b1, const Tensor& W2, const Tensor& b2) {
  return matmul(gelu(matmul(x, W1) + b1, true), W2) + b2;
}
// W6: 64 dependent elementwise ops on 4096 floats.
inline Tensor w6(Tensor x) {
  for (int i = 0; i < 64; ++i) x = i % 2 == 0 ? x * 1.0001 + 0.001 : tanh(x);
  return x;
}

}  // namespace kiln::bench

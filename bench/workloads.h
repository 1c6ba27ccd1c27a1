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
// W9: causal attention, q/k/v [B, H, S, D] in bf16.
inline Tensor w9(const Tensor& q, const Tensor& k, const Tensor& v) {
  AttentionOptions o;
  o.causal = true;
  return scaled_dot_product_attention(q, k, v, o);
}
// W8: a pre-LayerNorm causal transformer block in bf16: x [B, S, d], heads of 128, MLP 4x with
// GELU (tanh). Weights: ln1 (w, b), Wqkv [d, 3d], Wo [d, d], ln2 (w, b), W1 [d, 4d], W2 [4d, d].
inline Tensor w8(const Tensor& x, const Tensor& ln1w, const Tensor& ln1b, const Tensor& Wqkv, const Tensor& Wo,
                 const Tensor& ln2w, const Tensor& ln2b, const Tensor& W1, const Tensor& W2) {
  const int64_t B = x.shape()[0], S = x.shape()[1], d = x.shape()[2], H = d / 128;
  Tensor qkv = matmul(layer_norm(x, ln1w, ln1b, 1e-5), Wqkv).reshape({B, S, 3, H, 128});
  auto head = [&](int64_t i) { return qkv.slice(2, i, i + 1).reshape({B, S, H, 128}).permute({0, 2, 1, 3}); };
  Tensor a = w9(head(0), head(1), head(2)).permute({0, 2, 1, 3}).reshape({B, S, d});
  Tensor h = x + matmul(a, Wo);
  return h + matmul(gelu(matmul(layer_norm(h, ln2w, ln2b, 1e-5), W1), true), W2);
}
// W6: 64 dependent elementwise ops on 4096 floats.
inline Tensor w6(Tensor x) {
  for (int i = 0; i < 64; ++i) x = i % 2 == 0 ? x * 1.0001 + 0.001 : tanh(x);
  return x;
}

}  // namespace kiln::bench

// Kernel cost estimates (cost.h).
#include "ir/cost.h"

#include <algorithm>
#include <map>

namespace kiln::ir {
namespace {

bool is_16bit_float(DType t) { return t == DType::kFloat16 || t == DType::kBFloat16; }

// Whether a value is 16-bit floats, or was before casts widened it (a bf16 value cast to f32
// for the math).
bool is_16bit_value(const Kernel& k, KNodeId id) {
  while (id >= 0) {
    const KNode& n = k.nodes[size_t(id)];
    if (is_16bit_float(n.dtype)) return true;
    if (n.op != Op::kCast || n.inputs.empty()) return false;
    id = n.inputs[0];
  }
  return false;
}

int64_t attention_flops(const Kernel& k, const KNode& n) {
  const Shape& s = k.shape;
  if (s.size() < 4) return 0;
  const size_t r = s.size();
  int64_t batch = 1;
  for (size_t i = 0; i + 4 < r; ++i) batch *= s[i];
  const int64_t sq = s[r - 4], dv = s[r - 3], sk = s[r - 2], d = s[r - 1];
  int64_t f = 2 * batch * sq * sk * (d + dv);
  if (!n.ints.empty() && n.ints[0] != 0) f /= 2;  // causal: half the scores
  return f;
}

}  // namespace

KernelCost kernel_cost(const Program& p, const Kernel& k) {
  KernelCost c;
  const int64_t outer = k.outer_count(), full = outer * k.reduce_count();
  std::map<int, int64_t> read, written;  // buffer -> elements touched
  auto touch = [&](std::map<int, int64_t>* m, int buffer, int64_t evals) {
    if (buffer < 0 || size_t(buffer) >= p.buffers.size()) return;
    const int64_t n = std::min(shape_numel(p.buffers[size_t(buffer)].shape), evals);
    int64_t& e = (*m)[buffer];
    e = std::max(e, n);
  };
  for (const KNode& n : k.nodes) {
    const int64_t evals = n.inner ? full : outer;
    if (n.op == Op::kLoad) {
      touch(&read, n.buffer, evals);
    } else if (n.op == Op::kAttention) {
      c.flops += attention_flops(k, n);
      if (!n.inputs.empty() && is_16bit_value(k, n.inputs[0])) c.tensor_math = true;
    } else if (is_reduce(n.op)) {
      c.flops += full;
    } else if (is_elementwise(n.op) && n.op != Op::kCast) {
      c.flops += evals;
    }
  }
  for (const Store& s : k.stores) {
    const bool inner = s.value >= 0 && k.nodes[size_t(s.value)].inner;
    touch(&written, s.buffer, inner || k.serial ? full : outer);
  }
  for (const auto& m : {read, written})
    for (const auto& [buffer, elements] : m) c.bytes += elements * int64_t(dtype_size(p.buffers[size_t(buffer)].dtype));
  if (k.contraction.reduce >= 0 &&
      (k.contraction.tf32 || (is_16bit_value(k, k.contraction.lhs) && is_16bit_value(k, k.contraction.rhs))))
    c.tensor_math = true;
  return c;
}

}  // namespace kiln::ir

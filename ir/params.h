// Params: scalars passed to the kernels at run time instead of baked into their code.
//
// A training loop that changes its learning rate, a dropout that draws a new seed each step, or
// a `full(shape, v)` with a new v records a graph that differs from the last one only in those
// values. Baked into the kernels, each such value would compile a new executable; as params they
// are one structure (a `param` node's value is not part of its identity: Node::operator==, hash),
// so they share one executable and each run passes the values (kernel arguments on CUDA, the
// buffer-address table on Vulkan, the argument array on the CPU).
//
// Which values become params (lift_params, applied by the frontend when it realizes tensors):
//   - a floating-point constant (f16, bf16, f32, f64) whose value is finite and not 0, 1 or -1,
//     unless a pass reads its value to choose code: a `pow` exponent (x^2 becomes x*x) or a factor
//     or divisor of a matmul product (the attention recognizer's scale);
//   - the seed of rand / randn, which becomes an i64 param operand (the kernels derive the
//     random keys from it at run time).
// Everything else stays a constant: integers and booleans (index arithmetic, masks), 0, 1 and -1
// (the simplifier folds x*1, x+0), infinities and NaN, and any constant past kMaxParams params.
// Graphs that differ in a value that stayed a constant compile separately, as before.
#pragma once

#include <cstdint>
#include <vector>

#include "ir/graph.h"

namespace kiln::ir {

// The most params of one graph (a CUDA kernel's arguments are limited to 4 KiB).
constexpr int64_t kMaxParams = 128;

// How the host encodes a param for the kernels: 64 bits per slot.
struct ParamDesc {
  DType dtype = DType::kFloat32;
  // The slot holds a random seed's two 32-bit keys (ir::rng_key: k0 in the low half), not the
  // seed: kernels use them as rand/randn's keys.
  bool rng_key = false;
  bool operator==(const ParamDesc& o) const { return dtype == o.dtype && rng_key == o.rng_key; }
};

// The 64-bit pattern of `value` for a param of `d`: f32, f16 and bf16 as the f32 bits of the
// value rounded to the dtype (in the low half), f64 as its bits, integers as their i64 value.
uint64_t encode_param(const ParamDesc& d, const Scalar& value);

// The param descriptors of a graph, by slot (rng_key for a seed operand of rand / randn).
std::vector<ParamDesc> param_descs(const Graph& g);

// The values of a graph's params, by slot.
std::vector<Scalar> param_values(const Graph& g);

// `g` with the values chosen above turned into params (slots in node order). `map[i]` is the
// node of the result that node i of `g` became. A graph without such values comes back equal.
Graph lift_params(const Graph& g, std::vector<NodeId>* map = nullptr);

// `g` with every param turned back into the constant it holds (a random op's seed into its
// attribute): the graph lift_params started from, up to node order (tests compare the two).
Graph bake_params(const Graph& g);

}  // namespace kiln::ir

// A seeded generator of random kiln programs, recorded through the public tensor API.
//
// Each graph starts from random inputs (every dtype; random shapes with size-1 and odd dims;
// never all zeros) and applies a random sequence of ops: elementwise ops with broadcasting and
// type promotion, scalar ops, casts, comparisons and where, movement chains (reshape, permute,
// transpose, expand, slice with negative steps and indices, pad with crops, concat, stack,
// squeeze/unsqueeze/flatten), reductions over random axes with and without keepdim,
// argmax/argmin, matmul (1-D, 2-D, batched with broadcast batch dims) and composites (softmax,
// log_softmax, layer_norm, rms_norm, gelu, silu, linear).
//
// The generator keeps every value numerically sane so that a mismatch means a bug, not rounding:
// it tracks an interval for every tensor and keeps magnitudes bounded (scaling by powers of two,
// which is exact), keeps log/sqrt/division/pow arguments away from zero, and applies the ops
// that are discontinuous in their input (floor, ceil, comparisons, float->int casts, argmax)
// only to values that every device computes bit-exactly (inputs, movement, max/min, ...).
// The differential checker (differential.h) still bounds the error of every node itself.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/kiln.h"

namespace kiln::fuzz {

// The largest integer below which every integer is exact in float dtype `t` (2^53 for f64 and
// for non-float dtypes).
double exact_int_limit(DType t);

struct GenOptions {
  int min_ops = 3;            // ops recorded per graph (a composite counts as one)
  int max_ops = 16;
  int max_rank = 4;
  int64_t max_numel = 2048;   // elements of any one tensor
  int special_percent = 10;   // percent of graphs whose float inputs hold NaN, +-inf and -0
};

struct GeneratedGraph {
  std::vector<Tensor> outputs;
  // The API calls that built the graph, one statement per line (C++), for failure reports.
  std::string program;
};

// Builds graph number `seed` on `device`. The same seed and options give the same graph.
GeneratedGraph generate_graph(uint64_t seed, const Device& device, const GenOptions& opts = {});

// The seed of graph `index` in a run started with `run_seed`.
uint64_t graph_seed(uint64_t run_seed, int64_t index);

}  // namespace kiln::fuzz

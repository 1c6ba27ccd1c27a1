// split_reduce: a large reduction with too few outputs to keep the device busy becomes two
// reductions: partial results over P chunks, then a reduction of the partials. A matmul with few
// output tiles and a long k is split the same way (split-K): partial products over k chunks as a
// batched dot, then their sum.
#pragma once

#include "ir/graph.h"
#include "ir/target_info.h"

namespace kiln::passes {

struct SplitPolicy {
  // A reduction over the trailing axes (each output reads a contiguous row: one workgroup per
  // output does well) is split when it has fewer outputs than this...
  int64_t min_row_outputs = 8;
  // ...a reduction over other axes (one thread per output walks strided memory) when fewer
  // than this.
  int64_t min_column_outputs = 8;
  int64_t min_reduce = 65536;  // never split reductions smaller than this
  int64_t min_chunk = 4096;    // elements each partial reduction keeps at least
  // Split-K: a float32/float64 dot with fewer 64x64 output tiles than this (0: never) and a long
  // k becomes S dots over k chunks of at least `min_dot_chunk` (a batch axis of S partial
  // products, up to four tiles per unit of min_dot_tiles) and a sum over them, so that S times
  // the workgroups share the work. A bf16/f16 dot likewise with 128x64 tiles, float32 partial
  // products of its operands (rounded once, after the sum), at most min_dot_tiles tiles in all,
  // and only where the chunks are whole 16-byte pieces (no padding), of at least `min_half_dot_chunk`.
  int64_t min_dot_tiles = 0;
  // k per chunk at least: float32/float64 products (W10's 64x1024x1024 f32 dot, 16 tiles, on an
  // H100: chunks of 512 42.8 us per trip, of 128 21.5: bench/results/h100-2026-11-26-control, call 7)
  // and 16-bit ones (tensor-core tiles, unmeasured below 512).
  int64_t min_dot_chunk = 128;
  int64_t min_half_dot_chunk = 512;
  // A float32/float64 dot with a k shorter than this stays whole: its few chunks would not pay
  // for the kernel that sums them.
  int64_t min_dot_k = 512;
  // 16-bit products: how many waves of tiles a split may make. CUDA's tensor-core kernels are
  // persistent (one block per multiprocessor walks the tiles): one. Vulkan's cooperative-matrix
  // kernel keeps several workgroups on each multiprocessor: up to four.
  int64_t half_waves = 1;
};

ir::Graph split_reduce(const ir::Graph& g, const SplitPolicy& policy);

}  // namespace kiln::passes

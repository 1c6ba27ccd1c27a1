// Convolution and pooling over [N, C, spatial...] tensors (NCHW, as ONNX and PyTorch), 1 to 3
// spatial dims.
//
// None of them copies its input into windows: the input is padded and viewed as sliding windows
// (one strided view), so a convolution is ONE contraction whose operand reads the padded windows
// in place (implicit GEMM) with its elementwise epilogue (bias, activation) fused, and a pooling
// is ONE reduction over the windows. Shapes and options are checked when the op is recorded.
#pragma once

#include <cstdint>
#include <utility>
#include <vector>

#include "kiln/tensor.h"

namespace kiln {

// Per spatial dim; an empty list means the default for every dim.
struct ConvOptions {
  std::vector<int64_t> strides;                       // default 1
  std::vector<std::pair<int64_t, int64_t>> padding;   // (before, after) zeros; default (0, 0)
  std::vector<int64_t> dilation;                      // default 1
  int64_t groups = 1;                                 // C and C_out are both divisible by it
};

// x [N, C, S...], w [C_out, C / groups, K...] -> [N, C_out, O...] (the promoted dtype; integers
// accumulate in it and wrap, as matmul's do) with
// O = (S + before + after - dilation * (K - 1) - 1) / stride + 1 (rounded down). Depthwise is
// groups = C. Add a bias as `conv(x, w) + reshape(b, {1, C_out, 1, ...})`: it fuses.
Tensor conv(const Tensor& x, const Tensor& w, const ConvOptions& options = {});

struct ConvTransposeOptions {
  std::vector<int64_t> strides;                       // default 1
  std::vector<std::pair<int64_t, int64_t>> padding;   // (before, after) removed from the output
  std::vector<int64_t> dilation;                      // default 1
  int64_t groups = 1;
  std::vector<int64_t> output_padding;                // added after; default 0, < max(stride, dilation)
  // When given (per spatial dim), the output size; it sets output_padding (which must then be
  // left empty) to the difference from the smallest size.
  std::vector<int64_t> output_size;
};

// The gradient of conv with respect to its input: x [N, C_in, S...], w [C_in, C_out / groups,
// K...] -> [N, C_out, O...], O = (S - 1) * stride - before - after + dilation * (K - 1) +
// output_padding + 1.
Tensor conv_transpose(const Tensor& x, const Tensor& w, const ConvTransposeOptions& options = {});

struct PoolOptions {
  std::vector<int64_t> kernel;                        // required, one per spatial dim
  std::vector<int64_t> strides;                       // default 1
  std::vector<std::pair<int64_t, int64_t>> padding;   // (before, after); default (0, 0)
  std::vector<int64_t> dilation;                      // default 1
  // Output sizes rounded up instead of down; a window that would start in the padding after the
  // input is dropped (as PyTorch and ONNX do).
  bool ceil_mode = false;
  // avg_pool only: whether the padding counts in the divisor (never the extra ceil_mode cells).
  bool count_include_pad = false;
};

// x [N, C, S...] -> [N, C, O...]. max_pool takes floats and integers (padding never wins);
// avg_pool and lp_pool ((sum |x|^p)^(1/p), zero padding) take floats.
Tensor max_pool(const Tensor& x, const PoolOptions& options);
Tensor avg_pool(const Tensor& x, const PoolOptions& options);
Tensor lp_pool(const Tensor& x, double p, const PoolOptions& options);

// Where max_pool's values come from: per output, the flat index into x (int64, over [N, C, S...]
// row-major; with spatial_column_major, the spatial dims are numbered column-major, as ONNX's
// storage_order = 1) of the first maximum of its window in window order (padding never counts).
Tensor max_pool_indices(const Tensor& x, const PoolOptions& options, bool spatial_column_major = false);

}  // namespace kiln

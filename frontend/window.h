// Sliding windows over the spatial dims of [N, C, S...] tensors: the shared part of convolution
// and pooling (option checks, output sizes, the padded window view).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "kiln/tensor.h"

namespace kiln::detail {

// Per spatial dim, every list filled in and checked.
struct WindowSpec {
  std::vector<int64_t> kernel, strides, dilation;
  std::vector<std::pair<int64_t, int64_t>> padding;
  bool ceil_mode = false;
  std::vector<int64_t> out;  // output size per spatial dim (set by plan_windows)
};

// Fills the defaults (stride 1, dilation 1, no padding), checks the lists' lengths and values
// against x's spatial rank (1 to 3), and computes the output sizes; throws kiln::Error naming
// `label` (a window larger than the padded input, a zero-sized output, bad ranks).
WindowSpec plan_windows(const std::string& label, const Tensor& x, std::vector<int64_t> kernel,
                        std::vector<int64_t> strides, std::vector<std::pair<int64_t, int64_t>> padding,
                        std::vector<int64_t> dilation, bool ceil_mode);

// [N, C, S...] -> [N, C, O..., K...]: x padded with `value` and viewed as its windows (a window
// node over a pad node: no copy).
Tensor sliding_windows(const std::string& label, const Tensor& x, const WindowSpec& spec, double value);

}  // namespace kiln::detail

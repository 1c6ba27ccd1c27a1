// The reference interpreter: evaluates any graph on the host, the oracle for every backend.
//
// Floats compute in float64 and each node's result is rounded to its dtype's storage precision
// (f32/f16/bf16); integers compute exactly in int64 and wrap to their dtype's width. It shares no
// code with the backends' kernels.
#pragma once

#include <vector>

#include "absl/status/statusor.h"
#include "ir/graph.h"

namespace kiln::ir {

struct HostTensor {
  DType dtype = DType::kFloat32;
  Shape shape;
  std::vector<double> f;   // float dtypes
  std::vector<int64_t> i;  // integer dtypes and bool (0/1)

  int64_t numel() const { return shape_numel(shape); }
  double get(int64_t k) const { return is_float(dtype) ? f[k] : double(i[k]); }
  static HostTensor make(DType dtype, Shape shape);
};

absl::StatusOr<std::vector<HostTensor>> interpret(const Graph& g, const std::vector<HostTensor>& inputs);

}  // namespace kiln::ir

// HostTensor: a tensor value the importer knows on the host (an initializer, a Constant node, a
// shape, or anything folded from those). The bytes use kiln's device layout for the dtype (bool
// as one byte, f16/bf16 as their 16-bit patterns), so a weight is copied once from the protobuf
// and once to the device. Element accessors convert to int64 or double, which is what the
// constant folder and the shape-operand readers (Reshape's shape, Slice's starts, ...) need.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kiln/dtype.h"

namespace kiln::onnx {

struct HostTensor {
  DType dtype = DType::kFloat32;
  Shape shape;
  std::string bytes;  // numel * dtype_size(dtype)

  int64_t numel() const { return shape_numel(shape); }
  int64_t int_at(int64_t i) const;     // integers exactly; floats truncated toward zero
  double double_at(int64_t i) const;
  void set_int(int64_t i, int64_t v);  // stored with the dtype's wrapping (cast_to)
  void set_double(int64_t i, double v);
  // Sets element i from a Scalar (integers exact, floats rounded to the dtype).
  void set(int64_t i, const Scalar& v);
  Scalar at(int64_t i) const;

  std::vector<int64_t> to_ints() const;

  static HostTensor zeros(DType dtype, Shape shape);
  static HostTensor from_ints(const std::vector<int64_t>& v, Shape shape, DType dtype = DType::kInt64);
};

}  // namespace kiln::onnx

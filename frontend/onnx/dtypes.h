// ONNX element types (TensorProto.DataType numbers) <-> kiln dtypes. A type kiln has no dtype
// for (uint16, uint32, uint64, int16, string, complex, ...) is an Unimplemented error naming the
// type and `what` (the tensor, input or attribute it belongs to). Free of protobuf, so op
// handlers (Cast's `to`) use it too.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "kiln/dtype.h"

namespace kiln::onnx {

// ONNX's name of an element type ("FLOAT", "UINT16", ...).
std::string onnx_type_name(int64_t elem_type);
// ONNX element type of a kiln dtype.
int32_t onnx_type_of(DType t);
absl::StatusOr<DType> dtype_from_onnx(int64_t elem_type, const std::string& what);

}  // namespace kiln::onnx

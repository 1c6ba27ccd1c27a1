// TensorProto values -> HostTensors. Every count and size in the protobuf is checked against the
// dims before it is read (a model file is untrusted input); element types go through dtypes.h.
// Tensors stored outside the model (external data, for models over protobuf's 2 GB) are read
// from `base_dir` (the model file's folder), from a relative path that stays inside it.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "frontend/onnx/dtypes.h"
#include "frontend/onnx/host_tensor.h"
#include "kiln_onnx.pb.h"

namespace kiln::onnx {

absl::StatusOr<HostTensor> from_tensor_proto(const onnx_proto::TensorProto& p, const std::string& what,
                                             const std::string& base_dir = "");

}  // namespace kiln::onnx

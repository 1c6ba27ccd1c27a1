// The element-type table of onnx.proto's TensorProto.DataType.
#include "frontend/onnx/dtypes.h"

#include "absl/strings/str_cat.h"

namespace kiln::onnx {
namespace {

constexpr const char* kTypeNames[] = {"UNDEFINED", "FLOAT",  "UINT8",  "INT8",      "UINT16",     "INT16",
                                      "INT32",     "INT64",  "STRING", "BOOL",      "FLOAT16",    "DOUBLE",
                                      "UINT32",    "UINT64", "COMPLEX64", "COMPLEX128", "BFLOAT16"};
enum : int32_t {
  kFloat = 1, kUInt8 = 2, kInt8 = 3, kUInt16 = 4, kInt16 = 5, kInt32 = 6, kInt64 = 7, kBool = 9, kFloat16 = 10, kDouble = 11,
  kUInt32 = 12, kBFloat16 = 16
};

}  // namespace

std::string onnx_type_name(int64_t t) {
  if (t >= 0 && t < int64_t(sizeof kTypeNames / sizeof kTypeNames[0])) return kTypeNames[t];
  return absl::StrCat("type ", t);
}

int32_t onnx_type_of(DType t) {
  switch (t) {
    case DType::kBool: return kBool;
    case DType::kUInt8: return kUInt8;
    case DType::kInt8: return kInt8;
    case DType::kInt32: return kInt32;
    case DType::kInt64: return kInt64;
    case DType::kFloat16: return kFloat16;
    case DType::kBFloat16: return kBFloat16;
    case DType::kFloat32: return kFloat;
    case DType::kFloat64: return kDouble;
    case DType::kInt16: return kInt16;
    case DType::kUInt16: return kUInt16;
    case DType::kUInt32: return kUInt32;
  }
  return 0;
}

absl::StatusOr<DType> dtype_from_onnx(int64_t t, const std::string& what) {
  switch (t) {
    case kFloat: return DType::kFloat32;
    case kUInt8: return DType::kUInt8;
    case kInt8: return DType::kInt8;
    case kInt32: return DType::kInt32;
    case kInt64: return DType::kInt64;
    case kBool: return DType::kBool;
    case kFloat16: return DType::kFloat16;
    case kDouble: return DType::kFloat64;
    case kBFloat16: return DType::kBFloat16;
    case kInt16: return DType::kInt16;
    case kUInt16: return DType::kUInt16;
    case kUInt32: return DType::kUInt32;
    default: break;
  }
  return absl::UnimplementedError(absl::StrCat(what, ": element type ", onnx_type_name(t),
                                               " is not supported (kiln has bool, uint8, uint16, uint32, int8, int16, int32, "
                                               "int64, float16, bfloat16, float32, float64)"));
}

}  // namespace kiln::onnx

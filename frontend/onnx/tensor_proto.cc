// TensorProto -> HostTensor: raw_data (little-endian, ONNX's layout is kiln's) or the typed
// repeated fields, each checked against the element count.
#include "frontend/onnx/tensor_proto.h"

#include <cstring>
#include <filesystem>
#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "ir/half.h"

namespace kiln::onnx {
namespace {

using onnx_proto::TensorProto;

absl::Status count_mismatch(const std::string& what, const char* field, int64_t have, int64_t want) {
  return absl::InvalidArgumentError(absl::StrCat(what, ": ", field, " holds ", have, " values for ", want, " elements"));
}

// The bytes of an external-data tensor: `location` (relative to base_dir), `offset`, `length`.
absl::StatusOr<std::string> read_external(const TensorProto& p, const std::string& what, const std::string& base_dir, int64_t want) {
  if (base_dir.empty())
    return absl::UnimplementedError(absl::StrCat(what, ": its data is stored outside the model (external data); load the model from its file "
                                                       "so that the data file can be found beside it"));
  std::string location;
  int64_t offset = 0, length = -1;
  for (const auto& e : p.external_data()) {
    if (e.key() == "location") location = e.value();
    else if (e.key() == "offset" && !absl::SimpleAtoi(e.value(), &offset)) offset = -1;
    else if (e.key() == "length" && !absl::SimpleAtoi(e.value(), &length)) length = -2;
  }
  if (location.empty()) return absl::InvalidArgumentError(absl::StrCat(what, ": external data without a location"));
  std::filesystem::path rel(location);
  bool escapes = rel.is_absolute();
  for (const auto& part : rel) escapes = escapes || part == "..";
  if (escapes) return absl::InvalidArgumentError(absl::StrCat(what, ": external data location '", location, "' leaves the model's folder"));
  if (offset < 0 || length < -1) return absl::InvalidArgumentError(absl::StrCat(what, ": external data offset or length is not a valid number"));
  std::string path = (std::filesystem::path(base_dir) / rel).string();
  std::ifstream f(path, std::ios::binary | std::ios::ate);
  if (!f) return absl::NotFoundError(absl::StrCat(what, ": cannot open its external data file ", path));
  int64_t size = int64_t(f.tellg());
  if (length < 0) length = size - offset;
  if (offset > size || length > size - offset)
    return absl::InvalidArgumentError(absl::StrCat(what, ": external data [", offset, ", +", length, ") lies outside ", path, " (", size, " bytes)"));
  if (length != want)
    return absl::InvalidArgumentError(absl::StrCat(what, ": external data holds ", length, " bytes for ", want, " expected"));
  std::string bytes(size_t(length), '\0');
  f.seekg(offset);
  if (length && !f.read(bytes.data(), length)) return absl::DataLossError(absl::StrCat(what, ": cannot read ", path));
  return bytes;
}

}  // namespace

absl::StatusOr<HostTensor> from_tensor_proto(const TensorProto& p, const std::string& what, const std::string& base_dir) {
  if (p.has_segment()) return absl::UnimplementedError(absl::StrCat(what, ": segmented tensors are not supported"));
  auto dt = dtype_from_onnx(p.data_type(), what);
  if (!dt.ok()) return dt.status();
  HostTensor t;
  t.dtype = *dt;
  for (int64_t d : p.dims()) {
    if (d < 0) return absl::InvalidArgumentError(absl::StrCat(what, ": negative dimension ", d));
    t.shape.push_back(d);
  }
  int64_t n = shape_numel(t.shape);
  int64_t es = dtype_size(t.dtype);
  if (n < 0 || n > (int64_t(1) << 40) / es)
    return absl::InvalidArgumentError(absl::StrCat(what, ": shape ", shape_str(t.shape), " is too large"));
  if (p.data_location() == TensorProto::EXTERNAL) {
    auto bytes = read_external(p, what, base_dir, n * es);
    if (!bytes.ok()) return bytes.status();
    t.bytes = *std::move(bytes);
    if (t.dtype == DType::kBool)
      for (char& c : t.bytes) c = c != 0;
    return t;
  }
  if (p.has_raw_data()) {
    if (int64_t(p.raw_data().size()) != n * es)
      return absl::InvalidArgumentError(absl::StrCat(what, ": raw_data holds ", p.raw_data().size(), " bytes for ", n,
                                                     " elements of ", onnx_type_name(p.data_type())));
    t.bytes = p.raw_data();
    if (t.dtype == DType::kBool)
      for (char& c : t.bytes) c = c != 0;
    return t;
  }
  // The typed field's count is checked before anything of the claimed size is allocated.
  int64_t have = t.dtype == DType::kFloat32 ? p.float_data_size()
                 : t.dtype == DType::kFloat64 ? p.double_data_size()
                 : t.dtype == DType::kInt64   ? p.int64_data_size()
                 : t.dtype == DType::kUInt32  ? p.uint64_data_size()
                                              : p.int32_data_size();
  const char* field = t.dtype == DType::kFloat32 ? "float_data"
                      : t.dtype == DType::kFloat64 ? "double_data"
                      : t.dtype == DType::kInt64   ? "int64_data"
                      : t.dtype == DType::kUInt32  ? "uint64_data"
                                                   : "int32_data";
  if (have != n) return count_mismatch(what, field, have, n);
  t = HostTensor::zeros(t.dtype, t.shape);
  switch (t.dtype) {
    case DType::kFloat32:
      if (n) std::memcpy(t.bytes.data(), p.float_data().data(), size_t(n) * 4);
      break;
    case DType::kFloat64:
      if (n) std::memcpy(t.bytes.data(), p.double_data().data(), size_t(n) * 8);
      break;
    case DType::kInt64:
      if (n) std::memcpy(t.bytes.data(), p.int64_data().data(), size_t(n) * 8);
      break;
    case DType::kFloat16:
    case DType::kBFloat16:
      // int32_data holds the 16-bit patterns.
      for (int64_t i = 0; i < n; ++i) {
        uint16_t bits = uint16_t(p.int32_data(int(i)));
        std::memcpy(t.bytes.data() + i * 2, &bits, 2);
      }
      break;
    case DType::kUInt32:  // ONNX keeps uint32 values in uint64_data
      for (int64_t i = 0; i < n; ++i) t.set_int(i, int64_t(uint32_t(p.uint64_data(int(i)))));
      break;
    default:  // bool, uint8, int8, int16, uint16, int32: one value per int32_data entry
      for (int64_t i = 0; i < n; ++i) t.set_int(i, p.int32_data(int(i)));
      break;
  }
  return t;
}

}  // namespace kiln::onnx

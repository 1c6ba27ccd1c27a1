// A small, strict NumPy .npy reader and writer for kilnc run: format versions 1.0-3.0,
// little-endian (or byte-order-free) data in C order, and the dtypes kiln has that NumPy has too
// (f4 f2 f8 i4 i8 i1 u1 b1). Anything else (big-endian, Fortran order, object arrays, bfloat16,
// a header that does not parse, data shorter or longer than the shape says) is an
// InvalidArgument naming the file and the problem, never a guess.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "kiln/dtype.h"

namespace kiln::kilnc {

struct NpyArray {
  DType dtype = DType::kFloat32;
  Shape shape;
  std::string data;  // dtype_size * numel bytes, little-endian, C order
};

absl::StatusOr<NpyArray> parse_npy(const std::string& bytes, const std::string& name);
std::string format_npy(const NpyArray& a);  // version 1.0 (2.0 when the header needs it)

absl::StatusOr<NpyArray> read_npy(const std::string& path);
absl::Status write_npy(const std::string& path, const NpyArray& a);

}  // namespace kiln::kilnc

// Segmented reductions: rows of `data` folded per segment, the segments given by run-time
// offsets (CSR row pointers). One primitive, ir segment_reduce; its kernel walks each segment's
// own length, so ragged segments cost their rows and no padding (passes/lower.cc; the CUDA
// strategies in codegen/c_family/segment.cc).
#include "absl/strings/str_cat.h"
#include "frontend/indices.h"
#include "frontend/lazy.h"

namespace kiln {
namespace {

using detail::fail;

Tensor segment(const std::string& label, const Tensor& data, const Tensor& offsets, ir::ScatterMode mode) {
  detail::common_device(label, {data, offsets});
  if (data.ndim() == 0) fail(label, "data must have a row axis, got a scalar");
  if (data.dtype() == DType::kBool) fail(label, "needs numeric data, got bool");
  if (!is_int(offsets.dtype()))
    fail(label, absl::StrCat("offsets must have an integer dtype, got ", dtype_name(offsets.dtype())));
  if (offsets.ndim() != 1 || offsets.shape()[0] < 1)
    fail(label, absl::StrCat("offsets must be 1-D with S + 1 >= 1 entries (segment s is rows offsets[s] to ",
                             "offsets[s + 1]), got ", shape_str(offsets.shape())));
  Shape out = data.shape();
  out[0] = offsets.shape()[0] - 1;
  return detail::record(label, ir::Op::kSegmentReduce, data.dtype(), out, {data, detail::cast_to(offsets, DType::kInt64)},
                        {int64_t(mode)});
}

}  // namespace

Tensor segment_sum(const Tensor& data, const Tensor& offsets) {
  return segment("segment_sum", data, offsets, ir::ScatterMode::kAdd);
}
Tensor segment_prod(const Tensor& data, const Tensor& offsets) {
  return segment("segment_prod", data, offsets, ir::ScatterMode::kMul);
}
Tensor segment_max(const Tensor& data, const Tensor& offsets) {
  return segment("segment_max", data, offsets, ir::ScatterMode::kMax);
}
Tensor segment_min(const Tensor& data, const Tensor& offsets) {
  return segment("segment_min", data, offsets, ir::ScatterMode::kMin);
}

}  // namespace kiln

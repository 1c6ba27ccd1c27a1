// Index-tensor helpers shared by the gathers (gather.cc) and scatters (scatter.cc).
#pragma once

#include <string>

#include "kiln/tensor.h"

namespace kiln::detail {

// Throws "label: indices must have an integer dtype" unless `indices` has one.
void check_indices(const std::string& label, const Tensor& indices);

// `index` as i64 with a negative value counted from the end of an axis of `extent`.
Tensor wrap_index(const Tensor& index, int64_t extent);

// Index tuples (the last dim of `indices`, one entry per dim of `extents`, each wrapped) as a
// row-major flat index into `extents`; a tuple with any entry outside its dim becomes
// shape_numel(extents), itself out of range. Result: indices' shape without its last dim, i64.
Tensor flat_index(const std::string& label, const Tensor& indices, const Shape& extents);

}  // namespace kiln::detail

// The constant folder: ops whose inputs are all known at import (and small: kFoldLimit) are
// evaluated on the host, so shape subgraphs (Shape -> Gather -> Concat -> Reshape, Range,
// ConstantOfShape, arithmetic on shapes) become the static shapes kiln needs. Integers are exact
// (int64 on the host); floats are computed in double and rounded to their dtype per op.
#pragma once

#include "frontend/onnx/context.h"

namespace kiln::onnx {

// Evaluates the node on the host when the folder knows its op; false when it does not (the
// caller then builds it on the device). Only called when every present input has a host value.
bool try_fold(NodeContext& ctx);

}  // namespace kiln::onnx

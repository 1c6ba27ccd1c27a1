// Building a kiln graph from an onnx::Graph: each node, in order, through the op table (ops.h),
// after the constant folder (fold.h) had its chance. check_supported() finds, before anything is
// built, the nodes no handler exists for and the attributes a handler does not know;
// value_inputs() finds the graph inputs whose values decide shapes (they are read on the host at
// each call). build_graph() records kiln ops only (nothing runs); its errors are kiln::Error
// naming the node.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "frontend/onnx/context.h"
#include "frontend/onnx/graph.h"

namespace kiln::onnx {

absl::Status check_supported(const Graph& g);

// One flag per graph input: true when its values feed a shape operand.
std::vector<bool> value_inputs(const Graph& g);

// `initializers` holds a Value per initializer; `inputs` one per graph input (the tensor, and
// for value inputs the host value too). Returns the graph outputs as tensors, checked against
// the dtypes and static shapes the model declares.
std::vector<Tensor> build_graph(const Graph& g, const std::map<std::string, Value>& initializers,
                                const std::vector<Value>& inputs, const Device& device);

}  // namespace kiln::onnx

// For tests and tools: the graph that realizing some tensors would run, with its input buffers.
#pragma once

#include <memory>
#include <vector>

#include "ir/graph.h"
#include "kiln/tensor.h"

namespace kiln::runtime {
class Buffer;
}

namespace kiln::detail {

ir::Graph capture(const std::vector<Tensor>& tensors, std::vector<std::shared_ptr<runtime::Buffer>>* inputs);

}  // namespace kiln::detail

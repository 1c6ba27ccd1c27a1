// The op table: ONNX op type -> the handler that builds it from kiln ops, the attributes the
// handler understands (any other attribute on a node is an Unimplemented error, so an attribute
// kiln ignores can never change an answer silently), and which inputs must be known at import
// (shape operands such as Reshape's shape or Slice's starts: kiln's shapes are static, so a graph
// input feeding one becomes a specialization value, read at each call). Each ops_*.cc file fills
// in one family; ops.cc also knows why the common ops kiln lacks are missing.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "frontend/onnx/context.h"

namespace kiln::onnx {

struct OpDef {
  std::function<void(NodeContext&)> build;
  std::vector<std::string> attributes;
  std::vector<int> host_inputs;
};

using OpTable = std::map<std::string, OpDef>;

// The handler for `op_type` in the default domain, or null.
const OpDef* find_op(const std::string& op_type);
// Why an op without a handler is missing ("kiln has no linear-algebra decompositions"), or "".
std::string missing_reason(const std::string& op_type);
// Every supported op type, sorted (for the README and tests).
std::vector<std::string> supported_ops();

void register_elementwise_ops(OpTable& t);
void register_reduce_ops(OpTable& t);
void register_shape_ops(OpTable& t);
void register_nn_ops(OpTable& t);
void register_generator_ops(OpTable& t);
void register_loss_ops(OpTable& t);
void register_einsum_ops(OpTable& t);
void register_quantize_ops(OpTable& t);
void register_signal_ops(OpTable& t);
void register_control_ops(OpTable& t);
void register_rnn_ops(OpTable& t);
void register_conv_ops(OpTable& t);
void register_gather_ops(OpTable& t);
void register_resize_ops(OpTable& t);
void register_grid_sample_ops(OpTable& t);

}  // namespace kiln::onnx

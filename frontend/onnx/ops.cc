// The op table, filled once from the family files, and the reasons for the ops kiln lacks.
#include "frontend/onnx/ops.h"

namespace kiln::onnx {
namespace {

const OpTable& table() {
  static const OpTable* t = [] {
    auto* m = new OpTable;
    register_elementwise_ops(*m);
    register_reduce_ops(*m);
    register_shape_ops(*m);
    register_nn_ops(*m);
    register_generator_ops(*m);
    register_loss_ops(*m);
    register_einsum_ops(*m);
    register_quantize_ops(*m);
    register_signal_ops(*m);
    register_control_ops(*m);
    register_rnn_ops(*m);
    register_conv_ops(*m);
    register_gather_ops(*m);
    register_resize_ops(*m);
    register_grid_sample_ops(*m);
    return m;
  }();
  return *t;
}

}  // namespace

const OpDef* find_op(const std::string& op_type) {
  auto it = table().find(op_type);
  return it == table().end() ? nullptr : &it->second;
}

std::vector<std::string> supported_ops() {
  std::vector<std::string> r;
  for (const auto& [name, def] : table()) r.push_back(name);
  return r;
}

std::string missing_reason(const std::string& op) {
  static const std::map<std::string, std::string> reasons = {
      {"QLinearConv", "kiln has no requantizing convolution (Conv and ConvInteger are supported)"},
      {"DeformConv", "its sampling at offsets computed at run time is not built"},
      {"MaxRoiPool", "pooling over regions bounded by run-time values is not built"},
      {"RoiAlign", "bilinear sampling over regions bounded by run-time values is not built"},
      {"NonZero", "its output shape depends on the values (kiln's shapes are static)"},
      {"Unique", "its output shape depends on the values (kiln's shapes are static)"},
      {"NonMaxSuppression", "its output shape depends on the values (kiln's shapes are static)"},
      {"Compress", "its output shape depends on the values (kiln's shapes are static)"},
      {"RandomNormal", "random ops cannot reproduce ONNX's values"},
      {"RandomUniform", "random ops cannot reproduce ONNX's values"},
      {"RandomNormalLike", "random ops cannot reproduce ONNX's values"},
      {"RandomUniformLike", "random ops cannot reproduce ONNX's values"},
      {"Multinomial", "random ops cannot reproduce ONNX's values"},
      {"Bernoulli", "random ops cannot reproduce ONNX's values"},
      {"BitwiseAnd", "kiln has no bitwise integer ops yet"},
      {"BitwiseOr", "kiln has no bitwise integer ops yet"},
      {"BitwiseXor", "kiln has no bitwise integer ops yet"},
      {"BitwiseNot", "kiln has no bitwise integer ops yet"},
      {"StringNormalizer", "kiln has no string tensors"},
      {"TfIdfVectorizer", "kiln has no string tensors"},
      {"SequenceConstruct", "sequences are not supported"},
      {"SequenceAt", "sequences are not supported"},
      {"SequenceInsert", "sequences are not supported"},
      {"SequenceErase", "sequences are not supported"},
      {"SequenceLength", "sequences are not supported"},
      {"SequenceEmpty", "sequences are not supported"},
      {"SplitToSequence", "sequences are not supported"},
      {"ConcatFromSequence", "sequences are not supported"},
      {"SequenceMap", "sequences are not supported"},
      {"Optional", "optional values are not supported"},
      {"OptionalHasElement", "optional values are not supported"},
      {"OptionalGetElement", "optional values are not supported"},
  };
  auto it = reasons.find(op);
  return it == reasons.end() ? "" : it->second;
}

}  // namespace kiln::onnx

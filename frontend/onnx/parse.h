// Parsing an ONNX model file: protobuf bytes -> onnx::Graph (graph.h), checked. A file that is
// not a model, names used but never defined, a value produced twice, a cycle, an element type
// kiln lacks: each an error naming the node (name and op type) or the value involved, never a
// crash (the parser is fuzzed: tests/fuzz/onnx). Nothing here knows which ops kiln supports;
// that is the op table's business (ops.h), checked when the graph is built.
#pragma once

#include <string>

#include "absl/status/statusor.h"
#include "frontend/onnx/graph.h"

namespace kiln::onnx {

// The opsets of the default domain kiln imports. The handlers implement each op as of opset 17;
// older models are accepted because an op whose older version differs is told apart by its
// attributes (Squeeze's `axes` attribute, Clip's `min`, `consumed_inputs`, `broadcast`: an
// attribute a handler does not list is refused), checked by the handler (Softmax's 2-D coercion
// before opset 13), or refused below the opset where its meaning last changed (builder.cc).
inline constexpr int64_t kMinOpset = 1;
inline constexpr int64_t kMaxOpset = 17;

// `origin` (the file name, or "<bytes>") prefixes every message; `base_dir` is the model file's
// folder, where external data is looked for ("" for a model from memory: external data is then
// an error).
absl::StatusOr<Graph> parse_model(const std::string& bytes, const std::string& origin, const std::string& base_dir = "");

}  // namespace kiln::onnx

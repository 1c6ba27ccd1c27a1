// The importer's own form of an ONNX model: what parse.cc reads out of the protobuf, checked
// (names defined before use, no cycles, dtypes kiln has) and with the nodes in an order where
// every value is produced before it is read. Everything after parsing works on these structs,
// so only parse.cc and tensor_proto.cc see protobuf, and the fuzzer can drive the parser alone.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "frontend/onnx/host_tensor.h"
#include "kiln/dtype.h"

namespace kiln::onnx {

struct Graph;

struct Attribute {
  enum class Kind { kFloat, kInt, kString, kTensor, kGraph, kFloats, kInts, kStrings, kOther };
  Kind kind = Kind::kOther;
  std::string type_name;  // ONNX's name of the type, for messages ("GRAPH", "SPARSE_TENSOR", ...)
  double f = 0;
  int64_t i = 0;
  std::string s;
  std::vector<double> floats;
  std::vector<int64_t> ints;
  std::vector<std::string> strings;
  std::optional<HostTensor> t;
  absl::Status tensor_error;  // when kind is kTensor but the tensor is not one kiln can hold
  std::shared_ptr<const Graph> g;  // kGraph: a subgraph (If's branches)
};

struct Node {
  std::string name;
  std::string op_type;
  std::string domain;  // "" for the default ONNX domain
  std::vector<std::string> inputs;   // "" marks an omitted optional input
  std::vector<std::string> outputs;  // "" marks an omitted optional output
  std::map<std::string, Attribute> attributes;
  int index = 0;  // position in the file's node list
};

// A graph input or output. Dimensions that are symbolic or unknown are -1.
struct ValueInfo {
  std::string name;
  DType dtype = DType::kFloat32;
  Shape shape;
  bool has_shape = false;
};

// The model's graph, or a subgraph (an attribute of a node): a subgraph's inputs and outputs
// carry names only, and it may read values of the graphs enclosing it (its captures).
struct Graph {
  int64_t opset = 0;  // of the default domain (main graph)
  std::vector<ValueInfo> inputs;   // without the initializers
  std::vector<ValueInfo> outputs;
  std::map<std::string, HostTensor> initializers;
  std::vector<Node> nodes;  // topologically ordered
  std::vector<std::string> captures;  // names of enclosing graphs this graph (or a nested one) reads
};

// "node 'name' (Op)", or "node #3 (Op) producing 'y'" for a node without a name: the prefix of
// every error about a node.
std::string node_label(const Node& n);

}  // namespace kiln::onnx

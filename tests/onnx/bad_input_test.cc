// What a user sees when an ONNX model is malformed or uses what kiln lacks: a kiln::Error with
// a status code (InvalidArgument for a broken model, Unimplemented for a missing feature) whose
// message names the node (name and op type), the value, the attribute or the dtype. Never a
// crash (the parser is also fuzzed: tests/fuzz/onnx).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>

#include "kiln/kiln.h"
#include "kiln/onnx.h"
#include "onnx/model_builder.h"

namespace kiln::testing {
namespace {

using onnx_pb::TensorProto;

struct Failure {
  absl::StatusCode code = absl::StatusCode::kOk;
  std::string message = "no error";
};

Failure load_error(const std::string& bytes) {
  try {
    onnx::load_bytes(bytes, default_device(), "m.onnx");
  } catch (const Error& e) {
    return {e.status().code(), e.what()};
  }
  return {};
}

#define EXPECT_FAILS(bytes, code_, text)                                                            \
  do {                                                                                              \
    Failure f_ = load_error(bytes);                                                                 \
    EXPECT_EQ(f_.code, absl::StatusCode::code_) << f_.message;                                      \
    EXPECT_NE(f_.message.find(text), std::string::npos) << "message: " << f_.message;               \
  } while (0)

ModelBuilder unary_model(const std::string& op, const std::string& name = "n1") {
  ModelBuilder b;
  b.input("x", TensorProto::FLOAT, {2, 3});
  b.node(op, {"x"}, {"y"}, name);
  b.output("y", TensorProto::FLOAT, {2, 3});
  return b;
}

TEST(OnnxBadInput, NotAModel) {
  EXPECT_FAILS(std::string("\xff\xff\xff\xff\xff", 5), kInvalidArgument, "m.onnx: not an ONNX model (the protobuf does not parse)");
  EXPECT_FAILS("", kInvalidArgument, "m.onnx: the model imports no opset of the default ONNX domain");
  ModelBuilder b(17);
  b.proto().clear_graph();
  EXPECT_FAILS(b.bytes(), kInvalidArgument, "the model has no graph");
}

TEST(OnnxBadInput, TruncatedFilesNeverCrash) {
  std::string good = unary_model("Relu").bytes();
  for (size_t n = 0; n < good.size(); ++n) {
    Failure f = load_error(good.substr(0, n));
    EXPECT_NE(f.code, absl::StatusCode::kOk) << "prefix of " << n << " bytes loaded";
  }
}

TEST(OnnxBadInput, MissingInitializerNamesTheNode) {
  ModelBuilder b;
  b.input("x", TensorProto::FLOAT, {2});
  b.node("Add", {"x", "bias"}, {"y"}, "add_bias");
  b.output("y", TensorProto::FLOAT, {2});
  EXPECT_FAILS(b.bytes(), kInvalidArgument,
               "node 'add_bias' (Add): input 'bias' is not defined (no graph input, initializer or node output has that name)");
}

TEST(OnnxBadInput, UnnamedNodesAreNamedByPositionAndOutput) {
  ModelBuilder b;
  b.input("x", TensorProto::FLOAT, {2});
  b.node("Relu", {"x"}, {"a"});
  b.node("Add", {"a", "nowhere"}, {"y"});
  b.output("y", TensorProto::FLOAT, {2});
  EXPECT_FAILS(b.bytes(), kInvalidArgument, "node #1 (Add) producing 'y': input 'nowhere' is not defined");
}

TEST(OnnxBadInput, UnsupportedOpNamesTheNodeAndTheReason) {
  ModelBuilder b;
  b.input("x", TensorProto::FLOAT, {1, 1, 4, 4});
  b.initializer("w", {1, 1, 3, 3}, std::vector<float>(9, 1.0f));
  b.node("DeformConv", {"x", "w"}, {"y"}, "conv1");
  b.output("y", TensorProto::FLOAT, {1, 1, 2, 2});
  EXPECT_FAILS(b.bytes(), kUnimplemented,
               "m.onnx: node 'conv1' (DeformConv): DeformConv is not supported yet (its sampling at offsets computed "
               "at run time is not built)");
  EXPECT_FAILS(unary_model("FancyNewOp", "f").bytes(), kUnimplemented, "node 'f' (FancyNewOp): FancyNewOp is not supported yet");
}

// What kiln's convolution and pooling do not compute is refused by name, never approximated.
TEST(OnnxBadInput, ConvAndPoolGapsAreNamed) {
  auto conv = [](int64_t kh, std::vector<int64_t> pads) {
    ModelBuilder b;
    b.input("x", TensorProto::FLOAT, {1, 1, 4, 4});
    b.initializer("w", {1, 1, kh, 3}, std::vector<float>(size_t(kh * 3), 1.0f));
    ModelBuilder::attr_ints(b.node("Conv", {"x", "w"}, {"y"}, kh == 3 ? "conv1" : "conv2"), "pads", pads);
    b.output("y", TensorProto::FLOAT, {1, 1, 1, 2});
    return b.bytes();
  };
  EXPECT_FAILS(conv(3, {-1, 0, 0, 0}), kUnimplemented, "node 'conv1' (Conv): negative pads");
  EXPECT_FAILS(conv(5, {0, 0, 0, 0}), kInvalidArgument,
               "node 'conv2' (Conv): conv: window of extent 5 (kernel 5, dilation 1) is larger than spatial dim 0 of "
               "[1,1,4,4] padded to 4");
}

TEST(OnnxBadInput, UnsupportedAttributeIsRefusedNotIgnored) {
  ModelBuilder b = unary_model("Relu", "r");
  ModelBuilder::attr_int(b.proto().mutable_graph()->mutable_node(0), "alpha", 2);
  EXPECT_FAILS(b.bytes(), kUnimplemented, "node 'r' (Relu): attribute 'alpha' is not supported");
  ModelBuilder p;
  p.input("x", TensorProto::FLOAT, {4});
  p.initializer_i64("pads", {2}, {1, 1});
  auto* pad = p.node("Pad", {"x", "pads"}, {"y"}, "pad");
  auto* mode = pad->add_attribute();
  mode->set_name("mode");
  mode->set_type(onnx_pb::AttributeProto::STRING);
  mode->set_s("wrap");
  p.output("y", TensorProto::FLOAT, {6});
  EXPECT_FAILS(p.bytes(), kUnimplemented, "node 'pad' (Pad): mode 'wrap'");
}

TEST(OnnxBadInput, UnsupportedDtypeNamesTheValue) {
  ModelBuilder b;
  b.input("x", TensorProto::UINT64, {2});
  b.node("Identity", {"x"}, {"y"}, "id");
  b.output("y", TensorProto::UINT64, {2});
  EXPECT_FAILS(b.bytes(), kUnimplemented, "input 'x': element type UINT64 is not supported");
  ModelBuilder c = unary_model("Cast", "to_string");
  ModelBuilder::attr_int(c.proto().mutable_graph()->mutable_node(0), "to", TensorProto::STRING);
  c.proto().mutable_graph()->mutable_output(0)->mutable_type()->mutable_tensor_type()->set_elem_type(TensorProto::FLOAT);
  EXPECT_FAILS(c.bytes(), kUnimplemented, "node 'to_string' (Cast): attribute 'to': element type STRING is not supported");
}

TEST(OnnxBadInput, ConstantOfAnUnsupportedDtypeNamesTheNodeOnce) {
  ModelBuilder b;
  b.input("x", TensorProto::FLOAT, {2});
  auto* c = b.node("Constant", {}, {"k"}, "konst");
  auto* a = c->add_attribute();
  a->set_name("value");
  a->set_type(onnx_pb::AttributeProto::TENSOR);
  a->mutable_t()->set_data_type(TensorProto::UINT64);
  a->mutable_t()->add_dims(1);
  a->mutable_t()->add_uint64_data(7);
  b.node("Add", {"x", "k"}, {"y"}, "add");
  b.output("y", TensorProto::FLOAT, {2});
  Failure f = load_error(b.bytes());
  EXPECT_EQ(f.code, absl::StatusCode::kUnimplemented) << f.message;
  EXPECT_EQ(f.message, "m.onnx: node 'konst' (Constant): attribute 'value': element type UINT64 is not supported (kiln has bool, uint8, "
                       "uint16, uint32, int8, int16, int32, int64, float16, bfloat16, float32, float64)");
}

TEST(OnnxBadInput, SubgraphReadingAnUndefinedValueNamesTheNodes) {
  ModelBuilder b;
  b.input("c", TensorProto::BOOL, {});
  auto* node = b.node("If", {"c"}, {"y"}, "outer_if");
  for (const char* name : {"then_branch", "else_branch"}) {
    auto* a = node->add_attribute();
    a->set_name(name);
    a->set_type(onnx_pb::AttributeProto::GRAPH);
    auto* n = a->mutable_g()->add_node();
    n->set_op_type("Relu");
    n->set_name("inner");
    n->add_input("nowhere");
    n->add_output(std::string(name) + "_y");
    a->mutable_g()->add_output()->set_name(std::string(name) + "_y");
  }
  b.output("y", TensorProto::FLOAT, {2});
  EXPECT_FAILS(b.bytes(), kInvalidArgument, "node 'outer_if' (If): attribute 'then_branch': node 'inner' (Relu): input 'nowhere' is not defined");
}

// A while loop on a condition computed from an input: the input becomes a value input (the
// condition folds at each call), and a loop that would not end is refused at the unroll limit.
TEST(OnnxBadInput, EndlessLoopIsRefusedAtTheUnrollLimit) {
  ModelBuilder b;
  b.input("x", TensorProto::FLOAT, {2});
  b.node("ReduceMax", {"x"}, {"m"}, "max");
  b.initializer("zero", {}, {0.0f});
  b.node("Greater", {"m", "zero"}, {"go"}, "positive");
  auto* loop = b.node("Loop", {"", "go", "x"}, {"y"}, "while_positive");
  auto* a = loop->add_attribute();
  a->set_name("body");
  a->set_type(onnx_pb::AttributeProto::GRAPH);
  auto* g = a->mutable_g();
  for (const char* in : {"i", "c", "v"}) g->add_input()->set_name(in);
  auto* n = g->add_node();
  n->set_op_type("Identity");
  n->add_input("c");
  n->add_output("c_out");
  for (const char* out : {"c_out", "v"}) g->add_output()->set_name(out);
  b.output("y", TensorProto::FLOAT, {2});
  onnx::Model m = onnx::load_bytes(b.bytes(), default_device(), "m.onnx");
  EXPECT_TRUE(m.inputs()[0].value_input);
  EXPECT_EQ(m({from_vector<float>({-1, -2}, {2})})[0].to_vector<float>(), (std::vector<float>{-1, -2}));  // no iteration
  try {
    m({from_vector<float>({1, 2}, {2})});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.status().code(), absl::StatusCode::kUnimplemented);
    EXPECT_EQ(std::string(e.what()), "m.onnx: node 'while_positive' (Loop): a Loop of more than 1024 iterations (loops are unrolled at import)");
  }
}

TEST(OnnxBadInput, CycleNamesANodeOnIt) {
  ModelBuilder b;
  b.input("x", TensorProto::FLOAT, {2});
  b.node("Add", {"x", "b"}, {"a"}, "first");
  b.node("Relu", {"a"}, {"b"}, "second");
  b.output("b", TensorProto::FLOAT, {2});
  EXPECT_FAILS(b.bytes(), kInvalidArgument, "node 'first' (Add) is part of a cycle");
}

TEST(OnnxBadInput, ValueDefinedTwiceAndOutputNeverProduced) {
  ModelBuilder b;
  b.input("x", TensorProto::FLOAT, {2});
  b.node("Relu", {"x"}, {"y"}, "one");
  b.node("Neg", {"x"}, {"y"}, "two");
  b.output("y", TensorProto::FLOAT, {2});
  EXPECT_FAILS(b.bytes(), kInvalidArgument, "node 'two' (Neg): value 'y' is already defined by node 'one' (Relu)");
  ModelBuilder c = unary_model("Relu");
  c.output("z", TensorProto::FLOAT, {2, 3});
  EXPECT_FAILS(c.bytes(), kInvalidArgument, "output 'z' is not produced by any node");
}

TEST(OnnxBadInput, InitializerDataMustMatchItsShape) {
  ModelBuilder b = unary_model("Relu");
  b.initializer("w", {4}, {1, 2, 3});
  EXPECT_FAILS(b.bytes(), kInvalidArgument, "initializer 'w': float_data holds 3 values for 4 elements");
  ModelBuilder huge = unary_model("Relu");
  huge.initializer("big", {int64_t(1) << 40, int64_t(1) << 40}, {});
  EXPECT_FAILS(huge.bytes(), kInvalidArgument, "initializer 'big': shape [1099511627776,1099511627776] is too large");
  ModelBuilder raw = unary_model("Relu");
  auto* t = raw.proto().mutable_graph()->add_initializer();
  t->set_name("r");
  t->set_data_type(TensorProto::FLOAT);
  t->add_dims(3);
  t->set_raw_data(std::string(5, '\0'));
  EXPECT_FAILS(raw.bytes(), kInvalidArgument, "initializer 'r': raw_data holds 5 bytes for 3 elements of FLOAT");
}

TEST(OnnxBadInput, OtherDomainsAreRefused) {
  ModelBuilder b = unary_model("FusedGelu", "g");
  b.proto().mutable_graph()->mutable_node(0)->set_domain("com.microsoft");
  EXPECT_FAILS(b.bytes(), kUnimplemented, "node 'g' (FusedGelu): ops of domain 'com.microsoft' are not supported");
}

// What the gather family refuses at load, naming the node: a 3-D GridSample, an attribute of a
// newer Resize, indices that are not integers, a constant index out of range.
TEST(OnnxBadInput, GatherFamilyRefusalsNameTheNode) {
  ModelBuilder g;
  g.input("x", TensorProto::FLOAT, {1, 1, 2, 2, 2});
  g.input("grid", TensorProto::FLOAT, {1, 2, 2, 2, 3});
  g.node("GridSample", {"x", "grid"}, {"y"}, "gs");
  g.output("y", TensorProto::FLOAT, {1, 1, 2, 2, 2});
  EXPECT_FAILS(g.bytes(), kUnimplemented, "node 'gs' (GridSample): GridSample of a 5-D input (kiln samples 2-D images)");
  ModelBuilder r;
  r.input("x", TensorProto::FLOAT, {1, 1, 2, 2});
  r.initializer("scales", {4}, {1, 1, 2, 2});
  ModelBuilder::attr_int(r.node("Resize", {"x", "", "scales"}, {"y"}, "up"), "antialias", 1);
  r.output("y", TensorProto::FLOAT, {1, 1, 4, 4});
  EXPECT_FAILS(r.bytes(), kUnimplemented, "node 'up' (Resize): attribute 'antialias' is not supported");
  ModelBuilder f;
  f.input("x", TensorProto::FLOAT, {4, 2});
  f.input("idx", TensorProto::FLOAT, {3});
  f.node("Gather", {"x", "idx"}, {"y"}, "lookup");
  f.output("y", TensorProto::FLOAT, {3, 2});
  EXPECT_FAILS(f.bytes(), kUnimplemented, "node 'lookup' (Gather)");
  // Indices known at import are checked there, as many as they are (ONNX calls one out of range
  // an error; only run-time ones read 0).
  ModelBuilder k;
  k.input("x", TensorProto::FLOAT, {4, 2});
  k.initializer_i64("idx", {10}, {0, 1, 2, 3, 0, 1, 2, 3, -4, 4});
  k.node("Gather", {"x", "idx"}, {"y"}, "lookup");
  k.output("y", TensorProto::FLOAT, {10, 2});
  EXPECT_FAILS(k.bytes(), kInvalidArgument, "node 'lookup' (Gather): index 4 is out of range for an axis of size 4");
}

TEST(OnnxBadInput, ShapeComputedOnTheDeviceIsReportedAtTheCall) {
  ModelBuilder b;
  b.input("x", TensorProto::FLOAT, {6});
  b.input("s", TensorProto::FLOAT, {2});
  b.node("Sqrt", {"s"}, {"r"}, "sqrt");  // not folded: computed on the device
  ModelBuilder::attr_int(b.node("Cast", {"r"}, {"shape"}, "cast"), "to", TensorProto::INT64);
  b.node("Reshape", {"x", "shape"}, {"y"}, "reshape");
  b.output("y", TensorProto::FLOAT, {-1, -1});
  onnx::Model m = onnx::load_bytes(b.bytes(), default_device(), "m.onnx");
  EXPECT_TRUE(m.inputs()[1].value_input);
  try {
    m(std::vector<Tensor>{from_vector<float>({1, 2, 3, 4, 5, 6}, {6}), from_vector<float>({4, 9}, {2})});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.status().code(), absl::StatusCode::kUnimplemented);
    EXPECT_NE(std::string(e.what()).find("m.onnx: node 'reshape' (Reshape): shape (input 1 'shape') must be known when the model is imported"),
              std::string::npos)
        << e.what();
  }
}

TEST(OnnxBadInput, ShapeErrorsOfAValidLookingModelNameTheNode) {
  ModelBuilder b;
  b.input("x", TensorProto::FLOAT, {2, 3});
  b.input("y", TensorProto::FLOAT, {4, 5});
  b.node("MatMul", {"x", "y"}, {"z"}, "mm");
  b.output("z", TensorProto::FLOAT, {2, 5});
  EXPECT_FAILS(b.bytes(), kInvalidArgument, "m.onnx: node 'mm' (MatMul): matmul: shapes [2,3] and [4,5] are not aligned (3 != 4)");
}

TEST(OnnxBadInput, OpsetsOutOfRange) {
  ModelBuilder b(99);
  b.input("x", TensorProto::FLOAT, {2});
  b.node("Relu", {"x"}, {"y"});
  b.output("y", TensorProto::FLOAT, {2});
  EXPECT_FAILS(b.bytes(), kUnimplemented, "opset 99 of the default ONNX domain is not supported (kiln imports opsets 1 to 17)");
}

// Every node-test model with bytes flipped, dropped or repeated (seeded): loading is a clean
// kiln::Error or a model, never a crash or another exception. Loading builds the graph (without
// running it) for models of static shapes, so this reaches the op handlers too.
TEST(OnnxBadInput, MutatedModelsNeverCrash) {
  const std::string data = KILN_ONNX_NODE_TESTS_DIR;
  if (data.empty() || !std::filesystem::is_directory(data)) GTEST_SKIP() << "no ONNX node tests (libonnx-testdata)";
  std::vector<std::string> models;
  for (const auto& e : std::filesystem::directory_iterator(data))
    if (std::filesystem::exists(e.path() / "model.onnx")) models.push_back((e.path() / "model.onnx").string());
  std::sort(models.begin(), models.end());
  std::mt19937_64 rng(12);
  int loaded = 0, refused = 0;
  for (const std::string& path : models) {
    std::ifstream f(path, std::ios::binary);
    std::string good((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    for (int k = 0; k < 4 && !good.empty(); ++k) {
      std::string bad = good;
      size_t at = rng() % bad.size();
      switch (k) {
        case 0: bad[at] = char(rng()); break;                             // one byte
        case 1: bad[at] ^= char(1 << (rng() % 8)); break;                 // one bit
        case 2: bad.erase(at, 1 + rng() % 8); break;                      // a few bytes dropped
        default: bad.insert(at, bad.substr(at, 1 + rng() % 16)); break;   // a few bytes repeated
      }
      try {
        onnx::load_bytes(bad, default_device(), path);
        ++loaded;
      } catch (const Error&) {
        ++refused;
      } catch (const std::exception& e) {
        ADD_FAILURE() << path << " (mutation " << k << " at " << at << "): " << e.what();
      }
    }
  }
  std::printf("%zu models, 4 mutations each: %d loaded, %d refused\n", models.size(), loaded, refused);
  EXPECT_GT(refused, 0);
  EXPECT_GT(loaded, 0);
}

}  // namespace
}  // namespace kiln::testing

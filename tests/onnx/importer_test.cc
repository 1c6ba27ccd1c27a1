// kiln::onnx::load on small models written in C++ (model_builder.h): values against the same
// computation through kiln's own ops, shape subgraphs folded at import, value inputs, the
// signature, calls by name, and replays that compile nothing.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "kiln/kiln.h"
#include "kiln/onnx.h"
#include "onnx/model_builder.h"
#include "testing/error_of.h"
#include "testing/temp_dir.h"

namespace kiln::testing {
namespace {

using onnx_pb::TensorProto;

void expect_near(const std::vector<float>& got, const std::vector<float>& want, float tol = 1e-5f) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "at " << i;
}

// x[2,3] -> softmax(relu(x @ w + b)), w and b initializers.
std::string mlp_model() {
  ModelBuilder b;
  b.input("x", TensorProto::FLOAT, {2, 3});
  b.initializer("w", {3, 4}, {0.1f, -0.2f, 0.3f, 0.4f, 0.5f, -0.6f, 0.7f, 0.8f, -0.9f, 1.0f, 1.1f, -1.2f});
  b.initializer("b", {4}, {0.01f, 0.02f, -0.03f, 0.04f});
  b.node("MatMul", {"x", "w"}, {"xw"}, "mm");
  b.node("Add", {"xw", "b"}, {"h"}, "bias");
  b.node("Relu", {"h"}, {"r"}, "relu");
  ModelBuilder::attr_int(b.node("Softmax", {"r"}, {"probs"}, "softmax"), "axis", -1);
  b.output("probs", TensorProto::FLOAT, {2, 4});
  return b.bytes();
}

TEST(OnnxImport, MlpMatchesTheSameOpsInKiln) {
  onnx::Model m = onnx::load_bytes(mlp_model(), default_device());
  ASSERT_EQ(m.inputs().size(), 1u);
  EXPECT_EQ(m.inputs()[0].name, "x");
  EXPECT_EQ(m.inputs()[0].dtype, float32);
  EXPECT_EQ(m.inputs()[0].shape, (Shape{2, 3}));
  EXPECT_FALSE(m.inputs()[0].value_input);
  ASSERT_EQ(m.outputs().size(), 1u);
  EXPECT_EQ(m.outputs()[0].name, "probs");
  EXPECT_EQ(m.opset(), 17);

  Tensor x = from_vector<float>({1, 2, 3, -1, 0.5f, 2}, {2, 3});
  Tensor w = from_vector<float>({0.1f, -0.2f, 0.3f, 0.4f, 0.5f, -0.6f, 0.7f, 0.8f, -0.9f, 1.0f, 1.1f, -1.2f}, {3, 4});
  Tensor bias = from_vector<float>({0.01f, 0.02f, -0.03f, 0.04f}, {4});
  std::vector<float> want = softmax(relu(matmul(x, w) + bias), -1).to_vector<float>();
  std::vector<Tensor> y = m({x});
  ASSERT_EQ(y.size(), 1u);
  EXPECT_EQ(y[0].shape(), (Shape{2, 4}));
  expect_near(y[0].to_vector<float>(), want);
}

TEST(OnnxImport, SecondCallWithTheSameShapesCompilesNothing) {
  onnx::Model m = onnx::load_bytes(mlp_model(), default_device());
  Tensor x1 = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3}), x2 = from_vector<float>({6, 5, 4, 3, 2, 1}, {2, 3});
  std::vector<float> first = m({x1})[0].to_vector<float>();
  int64_t built = stats().executables_built;
  std::vector<float> second = m({x2})[0].to_vector<float>();
  EXPECT_EQ(stats().executables_built, built);
  EXPECT_NE(first, second);
  // The replay computed the new input's answer: the first input again gives the first answer.
  expect_near(m({x1})[0].to_vector<float>(), first, 0);
}

// Reshape(x, Concat(Gather(Shape(x), [0]), [-1])): the shape is folded at import.
TEST(OnnxImport, ShapeSubgraphsFoldAtImport) {
  ModelBuilder b;
  b.input("x", TensorProto::FLOAT, {2, 3, 4});
  b.initializer_i64("first", {1}, {0});
  b.node("Shape", {"x"}, {"s"});
  b.node("Gather", {"s", "first"}, {"n"});
  auto* c = b.node("Constant", {}, {"minus1"});
  ModelBuilder::attr_ints(c, "value_ints", {-1});
  ModelBuilder::attr_int(b.node("Concat", {"n", "minus1"}, {"shape"}), "axis", 0);
  b.node("Reshape", {"x", "shape"}, {"y"});
  b.node("Size", {"x"}, {"count"});
  b.output("y", TensorProto::FLOAT, {-1, -1});
  b.output("count", TensorProto::INT64, {});
  onnx::Model m = onnx::load_bytes(b.bytes(), default_device());
  EXPECT_FALSE(m.inputs()[0].value_input);
  std::vector<float> v(24);
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(i);
  std::vector<Tensor> y = m({from_vector(v, {2, 3, 4})});
  EXPECT_EQ(y[0].shape(), (Shape{2, 12}));
  expect_near(y[0].to_vector<float>(), v, 0);
  EXPECT_EQ(y[1].to_vector<int64_t>(), std::vector<int64_t>{24});
}

// uint32 constants arrive in uint64_data, int16/uint16 ones in int32_data (onnx.proto); each
// lands in its own dtype, and uint32 arithmetic on the device stays unsigned.
TEST(OnnxImport, NarrowAndUnsignedIntegerTensors) {
  ModelBuilder b;
  b.input("x", TensorProto::UINT32, {2});
  b.input("h", TensorProto::INT16, {2});
  auto constant = [&](const char* name, int type) {
    auto* a = b.node("Constant", {}, {name})->add_attribute();
    a->set_name("value");
    a->set_type(onnx_pb::AttributeProto::TENSOR);
    a->mutable_t()->set_data_type(type);
    a->mutable_t()->add_dims(2);
    return a->mutable_t();
  };
  auto* k = constant("k", TensorProto::UINT32);
  k->add_uint64_data(4000000000u);
  k->add_uint64_data(7);
  auto* j = constant("j", TensorProto::INT16);
  j->add_int32_data(-32768);
  j->add_int32_data(5);
  b.node("Add", {"x", "k"}, {"y"});
  b.node("Max", {"h", "j"}, {"z"});
  b.output("y", TensorProto::UINT32, {2});
  b.output("z", TensorProto::INT16, {2});
  onnx::Model m = onnx::load_bytes(b.bytes(), default_device());
  EXPECT_EQ(m.inputs()[0].dtype, uint32);
  std::vector<Tensor> out = m({from_vector<uint32_t>({300000000u, 1u}, {2}), from_vector<int16_t>({-3, 2}, {2})});
  ASSERT_EQ(out[0].dtype(), uint32);
  EXPECT_EQ(out[0].to_vector<int64_t>(), (std::vector<int64_t>{4300000000LL - 4294967296LL, 8}));
  EXPECT_EQ(out[1].dtype(), int16);
  EXPECT_EQ(out[1].to_vector<int64_t>(), (std::vector<int64_t>{-3, 5}));
}

// Indices that are graph inputs are ordinary run-time values: one compiled graph serves every
// index value (an out-of-range one reads 0, kiln's definition of what ONNX calls an error).
TEST(OnnxImport, GatherWithRunTimeIndicesRunsWithoutRecompiling) {
  ModelBuilder b;
  b.input("x", TensorProto::FLOAT, {4, 2});
  b.input("idx", TensorProto::INT64, {3});
  b.node("Gather", {"x", "idx"}, {"y"}, "lookup");
  b.output("y", TensorProto::FLOAT, {3, 2});
  onnx::Model m = onnx::load_bytes(b.bytes(), default_device());
  EXPECT_FALSE(m.inputs()[1].value_input);
  Tensor x = from_vector<float>({0, 1, 10, 11, 20, 21, 30, 31}, {4, 2});
  expect_near(m({x, from_vector<int64_t>({3, -1, 0}, {3})})[0].to_vector<float>(), {30, 31, 30, 31, 0, 1}, 0);
  int64_t built = stats().executables_built;
  expect_near(m({x, from_vector<int64_t>({1, 4, -4}, {3})})[0].to_vector<float>(), {10, 11, 0, 0, 0, 1}, 0);
  EXPECT_EQ(stats().executables_built, built);
}

// TopK ranks by pairwise comparison: NaN above every number (as PyTorch orders it), ties by the
// lower index (as ONNX requires), -inf and +inf ordinary values; the smallest first with
// largest = 0; K = 0 is empty; a row too long for pairwise ranking is refused naming the node.
TEST(OnnxImport, TopKOrdersNaNTiesAndInfinities) {
  auto topk = [](int64_t k, int64_t largest, int64_t n) {
    ModelBuilder b;
    b.input("x", TensorProto::FLOAT, {2, n});
    b.initializer_i64("k", {1}, {k});
    auto* node = b.node("TopK", {"x", "k"}, {"v", "i"}, "top");
    ModelBuilder::attr_int(node, "largest", largest);
    b.output("v", TensorProto::FLOAT, {2, k});
    b.output("i", TensorProto::INT64, {2, k});
    return b.bytes();
  };
  const float inf = INFINITY, nan = NAN;
  Tensor x = from_vector<float>({1, nan, 3, 3, -inf, inf, 0, 0, -1, 2, 2, -1}, {2, 6});
  onnx::Model m = onnx::load_bytes(topk(4, 1, 6), default_device());
  std::vector<Tensor> y = m({x});
  std::vector<float> v = y[0].to_vector<float>();
  EXPECT_TRUE(std::isnan(v[0]));
  EXPECT_EQ(std::vector<float>(v.begin() + 1, v.end()), (std::vector<float>{inf, 3, 3, 2, 2, 0, 0}));
  EXPECT_EQ(y[1].to_vector<int64_t>(), (std::vector<int64_t>{1, 5, 2, 3, 3, 4, 0, 1}));
  onnx::Model small = onnx::load_bytes(topk(3, 0, 6), default_device());
  y = small({x});
  EXPECT_EQ(y[0].to_vector<float>(), (std::vector<float>{-inf, 1, 3, -1, -1, 0}));
  EXPECT_EQ(y[1].to_vector<int64_t>(), (std::vector<int64_t>{4, 0, 2, 2, 5, 0}));
  onnx::Model none = onnx::load_bytes(topk(0, 1, 6), default_device());
  EXPECT_EQ(none({x})[0].numel(), 0);
  try {
    (void)onnx::load_bytes(topk(2, 1, 5000), default_device());
    ADD_FAILURE() << "a 5000-element row was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("node 'top' (TopK): TopK over 5000 elements per row"), std::string::npos) << e.what();
  }
}

// A graph input that decides a shape is read at each call; each value gets its own graph.
TEST(OnnxImport, ValueInputsSpecializeTheGraphPerValue) {
  ModelBuilder b;
  b.input("x", TensorProto::FLOAT, {6});
  b.input("shape", TensorProto::INT64, {2});
  b.node("Reshape", {"x", "shape"}, {"y"}, "reshape");
  b.output("y", TensorProto::FLOAT, {-1, -1});
  onnx::Model m = onnx::load_bytes(b.bytes(), default_device());
  EXPECT_FALSE(m.inputs()[0].value_input);
  EXPECT_TRUE(m.inputs()[1].value_input);
  Tensor x = from_vector<float>({1, 2, 3, 4, 5, 6}, {6});
  EXPECT_EQ(m({x, from_vector<int64_t>({2, 3}, {2})})[0].shape(), (Shape{2, 3}));
  Tensor y = m(std::vector<Tensor>{x, from_vector<int64_t>({3, -1}, {2})})[0];
  EXPECT_EQ(y.shape(), (Shape{3, 2}));
  expect_near(y.to_vector<float>(), {1, 2, 3, 4, 5, 6}, 0);
}

TEST(OnnxImport, CallsByNameAndChecksTheInputs) {
  onnx::Model m = onnx::load_bytes(mlp_model(), default_device(), "mlp.onnx");
  Tensor x = from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3});
  expect_near(m({{"x", x}})[0].to_vector<float>(), m({x})[0].to_vector<float>(), 0);
  EXPECT_EQ(error_of([&] { m(std::map<std::string, Tensor>{{"y", x}}); }), "mlp.onnx: the model has no input named 'y' (its inputs: x)");
  EXPECT_EQ(error_of([&] { m({from_vector<int32_t>({1, 2, 3, 4, 5, 6}, {2, 3})}); }),
            "mlp.onnx: input 'x' is i32[2,3]; the model takes f32[2,3]");
  EXPECT_EQ(error_of([&] { m(std::vector<Tensor>{x, x}); }), "mlp.onnx: the model takes 1 inputs, got 2");
  EXPECT_EQ(error_of([] { onnx::Model()(std::vector<Tensor>{}); }), "kiln::onnx::Model: not loaded (use kiln::onnx::load)");
}

TEST(OnnxImport, LoadsFromAFile) {
  std::string path = testing::unique_temp_dir("onnx_mlp") + "/mlp.onnx";
  std::ofstream(path, std::ios::binary) << mlp_model();
  onnx::Model m = onnx::load(path);
  EXPECT_EQ(m.device(), default_device());
  EXPECT_EQ(m({from_vector<float>({1, 2, 3, 4, 5, 6}, {2, 3})})[0].shape(), (Shape{2, 4}));
  std::remove(path.c_str());
  EXPECT_EQ(error_of([&] { onnx::load(path); }), path + ": cannot open");
}

// The folder and the device agree on integer arithmetic of shapes, including ONNX's Div
// truncation toward zero and Mod's sign rules.
TEST(OnnxImport, FoldedIntegerArithmetic) {
  ModelBuilder b;
  b.input("x", TensorProto::FLOAT, {1});
  b.initializer_i64("a", {4}, {7, -7, 7, -7});
  b.initializer_i64("d", {4}, {2, 2, -2, -2});
  b.node("Div", {"a", "d"}, {"q"});
  b.node("Mod", {"a", "d"}, {"r"});
  ModelBuilder::attr_int(b.node("Mod", {"a", "d"}, {"f"}), "fmod", 1);
  b.output("q", TensorProto::INT64, {4});
  b.output("r", TensorProto::INT64, {4});
  b.output("f", TensorProto::INT64, {4});
  onnx::Model m = onnx::load_bytes(b.bytes(), default_device());
  std::vector<Tensor> y = m({from_vector<float>({0}, {1})});
  EXPECT_EQ(y[0].to_vector<int64_t>(), (std::vector<int64_t>{3, -3, -3, 3}));
  EXPECT_EQ(y[1].to_vector<int64_t>(), (std::vector<int64_t>{1, 1, -1, -1}));
  EXPECT_EQ(y[2].to_vector<int64_t>(), (std::vector<int64_t>{1, -1, 1, -1}));
}

// Reductions of shapes fold too: Reshape(x, ReduceProd(Shape(x))) flattens, ReduceMax gives the
// largest dimension.
TEST(OnnxImport, ReductionsOfShapesFold) {
  ModelBuilder b;
  b.input("x", TensorProto::FLOAT, {2, 3, 4});
  b.node("Shape", {"x"}, {"s"});
  b.node("ReduceProd", {"s"}, {"n"});  // keepdims defaults to 1: [24]
  b.node("Reshape", {"x", "n"}, {"flat"});
  ModelBuilder::attr_int(b.node("ReduceMax", {"s"}, {"largest"}), "keepdims", 0);
  b.output("flat", TensorProto::FLOAT, {24});
  b.output("largest", TensorProto::INT64, {});
  onnx::Model m = onnx::load_bytes(b.bytes(), default_device());
  std::vector<float> v(24);
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(i) * 0.5f;
  std::vector<Tensor> y = m({from_vector(v, {2, 3, 4})});
  EXPECT_EQ(y[0].shape(), (Shape{24}));
  expect_near(y[0].to_vector<float>(), v, 0);
  EXPECT_EQ(y[1].to_vector<int64_t>(), std::vector<int64_t>{4});
}

// Initializers stored as external data (how models over 2 GB are saved) are read from files
// beside the model, at the offset and length the model names.
TEST(OnnxImport, ExternalDataBesideTheModel) {
  std::string dir = testing::unique_temp_dir("onnx_external");
  std::filesystem::create_directories(dir + "/weights");
  std::vector<float> w = {1.5f, -2.0f, 0.25f, 4.0f};
  std::string blob(8, 'x');  // 8 bytes of something else first: the tensor is at offset 8
  blob.append(reinterpret_cast<const char*>(w.data()), w.size() * sizeof(float));
  std::ofstream(dir + "/weights/w.bin", std::ios::binary) << blob;
  auto model = [&](const std::string& location, const std::string& offset) {
    ModelBuilder b;
    b.input("x", TensorProto::FLOAT, {4});
    auto* t = b.proto().mutable_graph()->add_initializer();
    t->set_name("w");
    t->set_data_type(TensorProto::FLOAT);
    t->add_dims(4);
    t->set_data_location(TensorProto::EXTERNAL);
    auto* loc = t->add_external_data();
    loc->set_key("location");
    loc->set_value(location);
    auto* off = t->add_external_data();
    off->set_key("offset");
    off->set_value(offset);
    b.node("Mul", {"x", "w"}, {"y"}, "scale");
    b.output("y", TensorProto::FLOAT, {4});
    std::string path = dir + "/m.onnx";
    std::ofstream(path, std::ios::binary) << b.bytes();
    return path;
  };
  std::string path = model("weights/w.bin", "8");
  onnx::Model m = onnx::load(path);
  expect_near(m({from_vector<float>({1, 1, 2, 2}, {4})})[0].to_vector<float>(), {1.5f, -2.0f, 0.5f, 8.0f}, 0);

  std::ifstream f(path, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  EXPECT_EQ(error_of([&] { onnx::load_bytes(bytes, default_device(), "m.onnx"); }),
            "m.onnx: initializer 'w': its data is stored outside the model (external data); load the model from its file so that the "
            "data file can be found beside it");
  EXPECT_NE(error_of([&] { onnx::load(model("weights/w.bin", "12")); }).find("initializer 'w': external data holds 12 bytes for 16 expected"),
            std::string::npos);
  EXPECT_NE(error_of([&] { onnx::load(model("../w.bin", "0")); }).find("external data location '../w.bin' leaves the model's folder"),
            std::string::npos);
  EXPECT_NE(error_of([&] { onnx::load(model("missing.bin", "0")); }).find("cannot open its external data file"), std::string::npos);
}

// If whose condition folds at import (here from a shape) builds the taken branch in place; a
// branch reads values of the enclosing graph, even ones the file defines after the If node.
TEST(OnnxImport, IfWithAConditionKnownAtImportBuildsTheTakenBranch) {
  for (int64_t size : {6, 5}) {
    ModelBuilder b;
    b.input("x", TensorProto::FLOAT, {size});
    b.initializer_i64("six", {}, {6});
    b.node("Size", {"x"}, {"n"});
    b.node("Equal", {"n", "six"}, {"is_six"});
    auto* node = b.node("If", {"is_six"}, {"y"}, "branch");
    auto branch = [&](const std::string& name, const std::string& op) {
      auto* a = node->add_attribute();
      a->set_name(name);
      a->set_type(onnx_pb::AttributeProto::GRAPH);
      auto* g = a->mutable_g();
      g->set_name(name);
      auto* k = g->add_initializer();
      k->set_name(name + "_k");
      k->set_data_type(TensorProto::FLOAT);
      k->add_float_data(10.0f);
      auto* n = g->add_node();
      n->set_op_type(op);
      n->add_input("doubled");  // defined by the outer graph, after the If node in the file
      n->add_input(name + "_k");
      n->add_output(name + "_out");
      g->add_output()->set_name(name + "_out");
    };
    branch("then_branch", "Add");
    branch("else_branch", "Mul");
    b.node("Add", {"x", "x"}, {"doubled"});
    b.output("y", TensorProto::FLOAT, {size});
    onnx::Model m = onnx::load_bytes(b.bytes(), default_device());
    EXPECT_FALSE(m.inputs()[0].value_input);
    std::vector<float> x(static_cast<size_t>(size), 1.5f), want(static_cast<size_t>(size), size == 6 ? 13.0f : 30.0f);
    expect_near(m({from_vector(x, {size})})[0].to_vector<float>(), want, 0);
  }
}

// A graph input as the condition: the If is a kiln::cond too (no import per value).
TEST(OnnxImport, IfOnAnInputConditionRunsOnTheDevice) {
  ModelBuilder b;
  b.input("c", TensorProto::BOOL, {});
  b.input("x", TensorProto::FLOAT, {2});
  auto* node = b.node("If", {"c"}, {"y"}, "choose");
  for (const char* name : {"then_branch", "else_branch"}) {
    auto* a = node->add_attribute();
    a->set_name(name);
    a->set_type(onnx_pb::AttributeProto::GRAPH);
    auto* n = a->mutable_g()->add_node();
    n->set_op_type(std::string(name) == "then_branch" ? "Neg" : "Identity");
    n->add_input("x");
    n->add_output(std::string(name) + "_y");
    a->mutable_g()->add_output()->set_name(std::string(name) + "_y");
  }
  b.output("y", TensorProto::FLOAT, {2});
  onnx::Model m = onnx::load_bytes(b.bytes(), default_device());
  EXPECT_FALSE(m.inputs()[0].value_input);
  Tensor x = from_vector<float>({1, -2}, {2});
  expect_near(m({from_vector<bool>({true}, {}), x})[0].to_vector<float>(), {-1, 2}, 0);
  expect_near(m({from_vector<bool>({false}, {}), x})[0].to_vector<float>(), {1, -2}, 0);
}

// An If on a condition computed on the device (the sign of a sum) is a kiln::cond: one import
// serves both outcomes, the branch taken is decided on the device, and a branch reads values of
// the enclosing graph. Branches whose outputs differ in shape cannot be one device If.
onnx_pb::GraphProto* add_branch(onnx_pb::NodeProto* node, const std::string& name) {
  auto* a = node->add_attribute();
  a->set_name(name);
  a->set_type(onnx_pb::AttributeProto::GRAPH);
  a->mutable_g()->set_name(name);
  return a->mutable_g();
}

TEST(OnnxImport, IfOnAConditionComputedOnTheDeviceIsACond) {
  auto build = [](bool same_shapes) {
    ModelBuilder b;
    b.input("x", TensorProto::FLOAT, {3});
    b.initializer("zero", {}, {0.0f});
    b.initializer("two", {}, {2.0f});
    b.node("ReduceSum", {"x"}, {"s"});
    b.node("Greater", {"s", "zero"}, {"positive"});
    auto* node = b.node("If", {"positive"}, {"y"}, "sign");
    auto* then_g = add_branch(node, "then_branch");
    auto* n = then_g->add_node();
    n->set_op_type("Mul");
    n->add_input("x");
    n->add_input("two");
    n->add_output("doubled");
    then_g->add_output()->set_name("doubled");
    auto* else_g = add_branch(node, "else_branch");
    n = else_g->add_node();
    n->set_op_type(same_shapes ? "Neg" : "ReduceSum");
    n->add_input("x");
    n->add_output("other");
    else_g->add_output()->set_name("other");
    b.output("y", TensorProto::FLOAT, {3});
    return b.bytes();
  };
  onnx::Model m = onnx::load_bytes(build(true), default_device());
  EXPECT_FALSE(m.inputs()[0].value_input);
  expect_near(m({from_vector<float>({1, 2, -1}, {3})})[0].to_vector<float>(), {2, 4, -2}, 0);
  reset_stats();
  expect_near(m({from_vector<float>({1, -5, 2}, {3})})[0].to_vector<float>(), {-1, 5, -2}, 0);
  EXPECT_EQ(stats().kernels_compiled, 0);
  EXPECT_NE(error_of([&] { onnx::load_bytes(build(false), default_device()); })
                .find("node 'sign' (If): an If on a condition computed at run time runs on the device, where cond 'sign': "),
            std::string::npos);
}

// Loop with a trip count known at import is unrolled: a loop-carried sum and a scan output.
TEST(OnnxImport, LoopWithAKnownTripCountIsUnrolled) {
  ModelBuilder b;
  b.input("x", TensorProto::FLOAT, {2});
  b.initializer_i64("three", {}, {3});
  auto* loop = b.node("Loop", {"three", "", "x"}, {"total", "partials"}, "loop");
  auto* a = loop->add_attribute();
  a->set_name("body");
  a->set_type(onnx_pb::AttributeProto::GRAPH);
  auto* g = a->mutable_g();
  for (const char* in : {"i", "cond_in", "acc"}) g->add_input()->set_name(in);
  auto node = [&](const std::string& op, std::vector<std::string> ins, const std::string& out) {
    auto* n = g->add_node();
    n->set_op_type(op);
    for (const auto& i : ins) n->add_input(i);
    n->add_output(out);
    return n;
  };
  auto* cast = node("Cast", {"i"}, "i_f");
  ModelBuilder::attr_int(cast, "to", TensorProto::FLOAT);
  node("Mul", {"x", "i_f"}, "step");  // reads x from the enclosing graph
  node("Add", {"acc", "step"}, "acc_out");
  node("Identity", {"cond_in"}, "cond_out");
  for (const char* out : {"cond_out", "acc_out", "acc_out"}) g->add_output()->set_name(out);
  b.output("total", TensorProto::FLOAT, {2});
  b.output("partials", TensorProto::FLOAT, {3, 2});
  onnx::Model m = onnx::load_bytes(b.bytes(), default_device());
  std::vector<Tensor> y = m({from_vector<float>({1, 10}, {2})});
  // acc: x, x + 0x, x + 0x + 1x, x + 0x + 1x + 2x
  expect_near(y[0].to_vector<float>(), {4, 40}, 0);
  expect_near(y[1].to_vector<float>(), {1, 10, 2, 20, 4, 40}, 0);
}

// A Loop whose condition the body computes on the device (double acc while its sum stays under
// 100), and one of more iterations than are unrolled (3000 increments), are kiln::while_loops;
// scan outputs of such a loop are refused.
std::string device_loop_model(bool cond_from_body, bool scan_output) {
  ModelBuilder b;
  b.input("x", TensorProto::FLOAT, {2});
  b.initializer("hundred", {}, {100.0f});
  b.initializer("one", {}, {1.0f});
  b.initializer_i64("many", {}, {3000});
  b.node("Greater", {"hundred", "one"}, {"go"});  // true, computed on the device
  std::vector<std::string> outs = {"total"};
  if (scan_output) outs.push_back("rows");
  auto* loop = b.node("Loop", {cond_from_body ? "" : "many", cond_from_body ? "go" : "", "x"}, outs, "grow");
  auto* a = loop->add_attribute();
  a->set_name("body");
  a->set_type(onnx_pb::AttributeProto::GRAPH);
  auto* g = a->mutable_g();
  for (const char* in : {"i", "cond_in", "acc"}) g->add_input()->set_name(in);
  auto node = [&](const char* op, std::vector<std::string> ins, const std::string& out) {
    auto* n = g->add_node();
    n->set_op_type(op);
    for (const auto& i : ins) n->add_input(i);
    n->add_output(out);
  };
  if (cond_from_body) {
    node("Add", {"acc", "acc"}, "acc_out");
    node("ReduceSum", {"acc_out"}, "sum");
    node("Less", {"sum", "hundred"}, "cond_out");
  } else {
    node("Add", {"acc", "one"}, "acc_out");
    node("Identity", {"cond_in"}, "cond_out");
  }
  for (const char* out : {"cond_out", "acc_out"}) g->add_output()->set_name(out);
  if (scan_output) g->add_output()->set_name("acc_out");
  b.output("total", TensorProto::FLOAT, {2});
  return b.bytes();
}

TEST(OnnxImport, LoopsDecidedAtRunTimeRunOnTheDevice) {
  onnx::Model m = onnx::load_bytes(device_loop_model(true, false), default_device());
  // [1, 2]: sums 6, 12, 24, 48, 96, 192 -> [64, 128]; [10, 10]: 40, 80, 160 -> [80, 80].
  expect_near(m({from_vector<float>({1, 2}, {2})})[0].to_vector<float>(), {64, 128}, 0);
  reset_stats();
  expect_near(m({from_vector<float>({10, 10}, {2})})[0].to_vector<float>(), {80, 80}, 0);
  EXPECT_EQ(stats().kernels_compiled, 0);
  onnx::Model many = onnx::load_bytes(device_loop_model(false, false), default_device());
  expect_near(many({from_vector<float>({0.5f, -7}, {2})})[0].to_vector<float>(), {3000.5f, 2993}, 0);
  EXPECT_NE(error_of([] { onnx::load_bytes(device_loop_model(true, true), default_device()); })
                .find("node 'grow' (Loop): scan outputs of a Loop whose iterations are decided at run time"),
            std::string::npos);
}

// Scan is unrolled over its scan axis: a running sum over the rows of x read backwards, the partial
// sums stacked along axis 1 in reverse order too.
TEST(OnnxImport, ScanIsUnrolledOverItsAxis) {
  ModelBuilder b;
  b.input("init", TensorProto::FLOAT, {2});
  b.input("x", TensorProto::FLOAT, {3, 2});
  auto* scan = b.node("Scan", {"init", "x"}, {"final", "partials"}, "scan");
  ModelBuilder::attr_int(scan, "num_scan_inputs", 1);
  ModelBuilder::attr_ints(scan, "scan_input_directions", {1});
  ModelBuilder::attr_ints(scan, "scan_output_axes", {1});
  ModelBuilder::attr_ints(scan, "scan_output_directions", {1});
  auto* a = scan->add_attribute();
  a->set_name("body");
  a->set_type(onnx_pb::AttributeProto::GRAPH);
  auto* g = a->mutable_g();
  for (const char* in : {"sum_in", "row"}) g->add_input()->set_name(in);
  auto* n = g->add_node();
  n->set_op_type("Add");
  n->add_input("sum_in");
  n->add_input("row");
  n->add_output("sum_out");
  auto* id = g->add_node();
  id->set_op_type("Identity");
  id->add_input("sum_out");
  id->add_output("scan_out");
  for (const char* out : {"sum_out", "scan_out"}) g->add_output()->set_name(out);
  b.output("final", TensorProto::FLOAT, {2});
  b.output("partials", TensorProto::FLOAT, {2, 3});
  onnx::Model m = onnx::load_bytes(b.bytes(), default_device());
  std::vector<Tensor> y = m({from_vector<float>({0, 100}, {2}), from_vector<float>({1, 2, 3, 4, 5, 6}, {3, 2})});
  expect_near(y[0].to_vector<float>(), {9, 112}, 0);
  // Steps read rows 2, 1, 0: sums [5,106], [8,110], [9,112]; stacked in reverse along axis 1.
  expect_near(y[1].to_vector<float>(), {9, 8, 5, 112, 110, 106}, 0);
}

// A bidirectional GRU is a forward GRU and a reverse one side by side, and the reverse one is
// the forward one on the time-reversed input (onnxruntime checks the values themselves:
// bench/onnx/ort_compare.py).
TEST(OnnxImport, BidirectionalGruIsForwardAndReverse) {
  const int64_t T = 4, B = 2, I = 3, H = 2;
  std::vector<float> w(size_t(2 * 3 * H * I)), r(size_t(2 * 3 * H * H)), x(size_t(T * B * I));
  for (size_t i = 0; i < w.size(); ++i) w[i] = float(int(i % 7) - 3) * 0.1f;
  for (size_t i = 0; i < r.size(); ++i) r[i] = float(int(i % 5) - 2) * 0.15f;
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(int(i % 9) - 4) * 0.2f;
  auto gru = [&](const std::string& direction, int64_t dirs, int64_t first) {
    ModelBuilder b;
    b.input("x", TensorProto::FLOAT, {T, B, I});
    b.initializer("w", {dirs, 3 * H, I}, std::vector<float>(w.begin() + first * 3 * H * I, w.begin() + (first + dirs) * 3 * H * I));
    b.initializer("r", {dirs, 3 * H, H}, std::vector<float>(r.begin() + first * 3 * H * H, r.begin() + (first + dirs) * 3 * H * H));
    auto* n = b.node("GRU", {"x", "w", "r"}, {"y", "yh"}, "gru");
    ModelBuilder::attr_int(n, "hidden_size", H);
    auto* a = n->add_attribute();
    a->set_name("direction");
    a->set_type(onnx_pb::AttributeProto::STRING);
    a->set_s(direction);
    b.output("y", TensorProto::FLOAT, {T, dirs, B, H});
    b.output("yh", TensorProto::FLOAT, {dirs, B, H});
    return onnx::load_bytes(b.bytes(), default_device());
  };
  Tensor input = from_vector(x, {T, B, I});
  Tensor reversed = slice(input, 0, T - 1, -T - 1, -1);
  std::vector<Tensor> both = gru("bidirectional", 2, 0)(std::vector<Tensor>{input});
  std::vector<Tensor> fwd = gru("forward", 1, 0)(std::vector<Tensor>{input});
  std::vector<Tensor> rev = gru("reverse", 1, 1)(std::vector<Tensor>{input});
  std::vector<Tensor> rev_as_fwd = gru("forward", 1, 1)(std::vector<Tensor>{reversed});
  expect_near(slice(both[0], 1, 0, 1).to_vector<float>(), fwd[0].to_vector<float>());
  expect_near(slice(both[0], 1, 1, 2).to_vector<float>(), rev[0].to_vector<float>());
  expect_near(rev[0].to_vector<float>(), slice(rev_as_fwd[0], 0, T - 1, -T - 1, -1).to_vector<float>());
  expect_near(slice(both[1], 0, 1, 2).to_vector<float>(), rev_as_fwd[1].to_vector<float>());
}

// Before opset 13, Softmax normalizes the input coerced to 2-D at `axis` (all of [d1, d2] per
// row); from 13 it normalizes along the one axis.
TEST(OnnxImport, SoftmaxSemanticsFollowTheOpset) {
  std::vector<float> v(24);
  for (size_t i = 0; i < v.size(); ++i) v[i] = float(i % 7) * 0.3f - 1.0f;
  Tensor x = from_vector(v, {2, 3, 4});
  for (int64_t opset : {11, 13}) {
    ModelBuilder b(opset);
    b.input("x", TensorProto::FLOAT, {2, 3, 4});
    ModelBuilder::attr_int(b.node("Softmax", {"x"}, {"y"}, "sm"), "axis", 1);
    b.output("y", TensorProto::FLOAT, {2, 3, 4});
    onnx::Model m = onnx::load_bytes(b.bytes(), default_device());
    Tensor want = opset < 13 ? softmax(x.reshape({2, 12}), 1).reshape({2, 3, 4}) : softmax(x, 1);
    expect_near(m({x})[0].to_vector<float>(), want.to_vector<float>());
  }
}

// Constants whose broadcast result would be large are computed on the device, not folded.
TEST(OnnxImport, LargeBroadcastOfConstantsRunsOnTheDevice) {
  ModelBuilder b;
  b.input("x", TensorProto::FLOAT, {1});
  std::vector<float> col(300), row(300);
  for (int i = 0; i < 300; ++i) col[size_t(i)] = float(i), row[size_t(i)] = float(i) * 1000;
  b.initializer("col", {300, 1}, col);
  b.initializer("row", {1, 300}, row);
  b.node("Add", {"col", "row"}, {"grid"});
  b.node("Add", {"grid", "x"}, {"y"});
  b.output("y", TensorProto::FLOAT, {300, 300});
  onnx::Model m = onnx::load_bytes(b.bytes(), default_device());
  std::vector<float> y = m({from_vector<float>({0.5f}, {1})})[0].to_vector<float>();
  ASSERT_EQ(y.size(), 90000u);
  EXPECT_EQ(y[301], 1000.0f + 1.0f + 0.5f);
  EXPECT_EQ(y[89999], 299000.0f + 299.0f + 0.5f);
}

// Pow with an exponent known at import: small integers multiply, 0.5 is a square root, anything
// else goes through float64; all agree with std::pow.
TEST(OnnxImport, PowWithConstantExponents) {
  for (float e : {2.0f, 3.0f, -2.0f, 0.0f, 0.5f, 1.7f}) {
    ModelBuilder b;
    b.input("x", TensorProto::FLOAT, {4});
    b.initializer("e", {}, {e});
    b.node("Pow", {"x", "e"}, {"y"}, "pow");
    b.output("y", TensorProto::FLOAT, {4});
    onnx::Model m = onnx::load_bytes(b.bytes(), default_device());
    std::vector<float> x = {0.5f, 1.25f, 2.0f, 3.5f};
    std::vector<float> y = m({from_vector(x, {4})})[0].to_vector<float>();
    for (size_t i = 0; i < x.size(); ++i) EXPECT_NEAR(y[i], std::pow(x[i], e), 1e-5 * std::pow(x[i], e)) << "x=" << x[i] << " e=" << e;
  }
}

TEST(OnnxImport, SupportedOpsAreListed) {
  std::vector<std::string> ops = onnx::supported_ops();
  for (const char* op : {"Add", "MatMul", "Gemm", "Softmax", "LayerNormalization", "Reshape", "Slice", "ReduceMean", "Where",
                         "Conv", "ConvInteger", "ConvTranspose", "MaxPool", "AveragePool", "LpPool"})
    EXPECT_NE(std::find(ops.begin(), ops.end(), op), ops.end()) << op;
  EXPECT_EQ(std::find(ops.begin(), ops.end(), "QLinearConv"), ops.end());
}

// MaxPool's Indices feed MaxUnpool: each window's maximum goes back where it came from, zeros
// everywhere else; an output_shape holds that in its leading corner; a too-small one is refused.
TEST(OnnxImport, MaxUnpoolPutsEachMaximumBackWhereMaxPoolFoundIt) {
  ModelBuilder b;
  b.input("x", TensorProto::FLOAT, {1, 2, 4, 6});
  auto* pool = b.node("MaxPool", {"x"}, {"y", "idx"}, "pool");
  ModelBuilder::attr_ints(pool, "kernel_shape", {2, 2});
  ModelBuilder::attr_ints(pool, "strides", {2, 2});
  auto* unpool = b.node("MaxUnpool", {"y", "idx"}, {"z"}, "unpool");
  ModelBuilder::attr_ints(unpool, "kernel_shape", {2, 2});
  ModelBuilder::attr_ints(unpool, "strides", {2, 2});
  b.initializer_i64("bigger", {4}, {1, 2, 5, 7});
  auto* padded = b.node("MaxUnpool", {"y", "idx", "bigger"}, {"w"}, "unpool_to_shape");
  ModelBuilder::attr_ints(padded, "kernel_shape", {2, 2});
  ModelBuilder::attr_ints(padded, "strides", {2, 2});
  b.output("z", TensorProto::FLOAT, {1, 2, 4, 6});
  b.output("w", TensorProto::FLOAT, {1, 2, 5, 7});
  onnx::Model m = onnx::load_bytes(b.bytes(), default_device());
  std::vector<float> x(48);
  for (size_t i = 0; i < x.size(); ++i) x[i] = float((i * 37) % 48);  // distinct values
  std::vector<Tensor> out = m({from_vector(x, {1, 2, 4, 6})});
  std::vector<float> z = out[0].to_vector<float>(), w = out[1].to_vector<float>();
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t i = 0; i < 4; ++i)
      for (int64_t j = 0; j < 6; ++j) {
        float best = -1;
        for (int64_t di = 0; di < 2; ++di)
          for (int64_t dj = 0; dj < 2; ++dj) best = std::max(best, x[size_t(c * 24 + (i / 2 * 2 + di) * 6 + j / 2 * 2 + dj)]);
        const float v = x[size_t(c * 24 + i * 6 + j)];
        EXPECT_EQ(z[size_t(c * 24 + i * 6 + j)], v == best ? v : 0.0f) << c << " " << i << " " << j;
        EXPECT_EQ(w[size_t(c * 35 + i * 7 + j)], z[size_t(c * 24 + i * 6 + j)]);
      }
  for (int64_t c = 0; c < 2; ++c) {
    for (int64_t j = 0; j < 7; ++j) EXPECT_EQ(w[size_t(c * 35 + 4 * 7 + j)], 0.0f);  // the row after
    for (int64_t i = 0; i < 5; ++i) EXPECT_EQ(w[size_t(c * 35 + i * 7 + 6)], 0.0f);  // the column after
  }

  ModelBuilder small;
  small.input("y", TensorProto::FLOAT, {1, 1, 2, 2});
  small.input("idx", TensorProto::INT64, {1, 1, 2, 2});
  small.initializer_i64("shape", {4}, {1, 1, 3, 3});
  auto* u = small.node("MaxUnpool", {"y", "idx", "shape"}, {"z"}, "u1");
  ModelBuilder::attr_ints(u, "kernel_shape", {2, 2});
  ModelBuilder::attr_ints(u, "strides", {2, 2});
  small.output("z", TensorProto::FLOAT, {1, 1, 3, 3});
  std::string err = error_of([&] { onnx::load_bytes(small.bytes(), default_device()); });
  EXPECT_NE(err.find("node 'u1' (MaxUnpool): output_shape [1,1,3,3] cannot hold the unpooled [1,1,4,4]"), std::string::npos)
      << err;
}

// Det up to 4x4 (a Leibniz sum): batches of 3x3 and 4x4 against the cofactor expansion on the
// host; a 5x5 input is refused naming the limit, a non-square one is malformed.
double host_det(const std::vector<double>& a, int64_t n) {
  if (n == 1) return a[0];
  double d = 0;
  for (int64_t j = 0; j < n; ++j) {
    std::vector<double> minor;
    for (int64_t r = 1; r < n; ++r)
      for (int64_t k = 0; k < n; ++k)
        if (k != j) minor.push_back(a[size_t(r * n + k)]);
    d += (j % 2 ? -1 : 1) * a[size_t(j)] * host_det(minor, n - 1);
  }
  return d;
}

TEST(OnnxImport, DetOfSmallMatricesMatchesTheCofactorExpansion) {
  for (int64_t n : {3, 4}) {
    ModelBuilder b;
    b.input("x", TensorProto::FLOAT, {2, n, n});
    b.node("Det", {"x"}, {"d"}, "det");
    b.output("d", TensorProto::FLOAT, {2});
    onnx::Model m = onnx::load_bytes(b.bytes(), default_device());
    std::vector<float> x(size_t(2 * n * n));
    for (size_t i = 0; i < x.size(); ++i) x[i] = float(std::sin(0.7 * double(i) + 0.3) * 2.0);
    std::vector<float> d = m({from_vector(x, {2, n, n})})[0].to_vector<float>();
    ASSERT_EQ(d.size(), 2u);
    for (int64_t k = 0; k < 2; ++k) {
      std::vector<double> a(x.begin() + k * n * n, x.begin() + (k + 1) * n * n);
      EXPECT_NEAR(d[size_t(k)], host_det(a, n), 1e-4) << n << "x" << n << " matrix " << k;
    }
  }
  ModelBuilder big;
  big.input("x", TensorProto::FLOAT, {5, 5});
  big.node("Det", {"x"}, {"d"}, "det5");
  big.output("d", TensorProto::FLOAT, {});
  std::string err = error_of([&] { onnx::load_bytes(big.bytes(), default_device()); });
  EXPECT_NE(err.find("node 'det5' (Det): Det of 5x5 matrices (up to 4x4"), std::string::npos) << err;
  ModelBuilder wide;
  wide.input("x", TensorProto::FLOAT, {2, 3});
  wide.node("Det", {"x"}, {"d"}, "det23");
  wide.output("d", TensorProto::FLOAT, {});
  err = error_of([&] { onnx::load_bytes(wide.bytes(), default_device()); });
  EXPECT_NE(err.find("the input [2,3] is not a (batch of) square matrices"), std::string::npos) << err;
}

// Einsum with ellipses (broadcast, right-aligned, implicit output first) and repeated letters
// (diagonals, a trace), against the same computations written with kiln's ops.
TEST(OnnxImport, EinsumTakesEllipsesAndDiagonals) {
  auto run = [](const std::string& eq, std::vector<std::pair<Shape, std::vector<float>>> ins, Shape out) {
    ModelBuilder b;
    std::vector<std::string> names;
    for (size_t i = 0; i < ins.size(); ++i) {
      names.push_back("x" + std::to_string(i));
      b.input(names.back(), TensorProto::FLOAT, ins[i].first);
    }
    ModelBuilder::attr_string(b.node("Einsum", names, {"y"}, "einsum"), "equation", eq);
    b.output("y", TensorProto::FLOAT, out);
    onnx::Model m = onnx::load_bytes(b.bytes(), default_device());
    std::vector<Tensor> args;
    for (auto& [shape, v] : ins) args.push_back(from_vector(v, shape));
    return m(args)[0];
  };
  auto values = [](size_t n, float k) {
    std::vector<float> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = std::sin(k * float(i) + 0.5f);
    return v;
  };
  std::vector<float> a = values(24, 0.3f), bv = values(40, 0.7f), sq = values(18, 1.1f);
  Tensor A = from_vector(a, {2, 1, 3, 4}), B = from_vector(bv, {5, 4, 2}), S = from_vector(sq, {2, 3, 3});
  Tensor mm = run("...ij,...jk->...ik", {{{2, 1, 3, 4}, a}, {{5, 4, 2}, bv}}, {2, 5, 3, 2});
  EXPECT_EQ(mm.shape(), (Shape{2, 5, 3, 2}));
  expect_near(mm.to_vector<float>(), matmul(A, B).to_vector<float>(), 1e-5);
  Tensor diag = run("...ii->...i", {{{2, 3, 3}, sq}}, {2, 3});
  std::vector<float> want;
  for (int b = 0; b < 2; ++b)
    for (int i = 0; i < 3; ++i) want.push_back(sq[size_t(b * 9 + i * 4)]);
  expect_near(diag.to_vector<float>(), want, 0);
  Tensor trace = run("bii", {{{2, 3, 3}, sq}}, {2});  // implicit output: b
  expect_near(trace.to_vector<float>(), {want[0] + want[1] + want[2], want[3] + want[4] + want[5]}, 1e-6);
  Tensor implicit = run("...j,j", {{{2, 1, 3, 4}, a}, {{4}, values(4, 0.2f)}}, {2, 1, 3});  // the ellipsis dims come first
  EXPECT_EQ(implicit.shape(), (Shape{2, 1, 3}));
  expect_near(implicit.to_vector<float>(), matmul(A, from_vector(values(4, 0.2f), {4})).to_vector<float>(), 1e-5);
}

}  // namespace
}  // namespace kiln::testing

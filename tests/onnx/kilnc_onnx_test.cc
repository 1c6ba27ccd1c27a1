// kilnc compile on an ONNX model: the same importer as kiln::onnx::load, the artifact loads with
// kiln::load and gives the imported model's answer; import errors reach kilnc's exit status and
// message; symbolic dimensions are fixed with --input-shape.
#include <gtest/gtest.h>

#include <fstream>

#include "aot/aot_fixture.h"
#include "kiln/kiln.h"
#include "kiln/onnx.h"
#include "onnx/model_builder.h"

namespace kiln::testing {
namespace {

using onnx_pb::TensorProto;

std::string write(const std::string& dir, const std::string& name, const std::string& bytes) {
  std::string path = dir + "/" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

// y = gelu-free MLP: relu(x @ w + b) summed over the last axis, batch symbolic.
std::string mlp(int64_t batch) {
  ModelBuilder b;
  b.input("x", TensorProto::FLOAT, {batch, 3});
  b.initializer("w", {3, 2}, {0.5f, -1.0f, 2.0f, 0.25f, -0.75f, 1.5f});
  b.initializer("b", {2}, {0.1f, -0.2f});
  b.node("MatMul", {"x", "w"}, {"xw"}, "mm");
  b.node("Add", {"xw", "b"}, {"h"}, "bias");
  b.node("Relu", {"h"}, {"r"}, "relu");
  b.initializer_i64("last", {1}, {1});
  auto* s = b.node("ReduceSum", {"r", "last"}, {"y"}, "sum");
  ModelBuilder::attr_int(s, "keepdims", 0);
  b.output("y", TensorProto::FLOAT, {batch});
  return b.bytes();
}

TEST(KilncOnnx, CompiledArtifactMatchesTheImportedModel) {
  KILN_AOT_REQUIRE_DEVICE();
  std::string dir = scratch_dir("kilnc_onnx");
  std::string model = write(dir, "mlp.onnx", mlp(4)), out;
  std::string art = dir + "/mlp.kiln";
  std::string target = default_device().name();
  ASSERT_EQ(run_kilnc("compile " + model + " -o " + art + " --target " + target, &out), 0) << out;
  Model compiled = load(art);
  ASSERT_EQ(compiled.inputs().size(), 1u);
  EXPECT_EQ(compiled.inputs()[0].name, "x");
  EXPECT_EQ(compiled.outputs()[0].name, "y");
  Tensor x = from_vector<float>({1, 2, 3, -1, 0, 1, 0.5f, 0.5f, 0.5f, 3, -2, 1}, {4, 3});
  std::vector<float> want = onnx::load(model)({x})[0].to_vector<float>();
  std::vector<float> got = compiled({x})[0].to_vector<float>();
  ASSERT_EQ(got.size(), 4u);
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5) << i;
  // relu([1,2,3] @ w + b) = relu([2.35, 3.8]) -> 6.15
  EXPECT_NEAR(got[0], 6.15f, 1e-5);
}

TEST(KilncOnnx, ANamedInputShapeKeepsTheBatchSymbolic) {
  KILN_AOT_REQUIRE_DEVICE();
  std::string dir = scratch_dir("kilnc_onnx");
  std::string model = write(dir, "batch.onnx", mlp(-1)), out;
  std::string art = dir + "/batch.kiln";
  ASSERT_EQ(run_kilnc("compile " + model + " -o " + art + " --target " + default_device().name() + " --input-shape x=batch:4,3", &out), 0)
      << out;
  ASSERT_EQ(run_kilnc("inspect " + art, &out), 0) << out;
  EXPECT_NE(out.find("  symbol batch (any size; the sections below are planned at 4)\n  input  x : f32[batch,3]\n  output y : f32[batch]\n"),
            std::string::npos) << out;
  EXPECT_NE(out.find(" binaries shared by every size"), std::string::npos) << out;
  Model compiled = load(art);
  EXPECT_EQ(compiled.inputs()[0].dims, (std::vector<std::string>{"batch", ""}));
  std::vector<Tensor> xs;
  std::vector<std::vector<float>> got;
  reset_stats();
  for (int64_t batch : {4, 9, 1, 300}) {
    std::vector<float> v;
    for (int64_t i = 0; i < batch * 3; ++i) v.push_back(float((i * 7) % 11) * 0.25f - 1.0f);
    xs.push_back(from_vector<float>(v, {batch, 3}));
    got.push_back(compiled({xs.back()})[0].to_vector<float>());
    ASSERT_EQ(got.back().size(), size_t(batch));
  }
  EXPECT_EQ(stats().kernels_compiled, 0) << "every size's code is in the artifact";
  onnx::Model imported = onnx::load(model);
  for (size_t k = 0; k < xs.size(); ++k) {
    std::vector<float> want = imported({xs[k]})[0].to_vector<float>();
    for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[k][i], want[i], 1e-5) << "batch " << xs[k].shape()[0] << " row " << i;
  }
  // A dim the model fixes cannot be made symbolic.
  std::string fixed = write(dir, "fixed.onnx", mlp(4));
  EXPECT_EQ(run_kilnc("compile " + fixed + " -o " + art + " --target cpu --input-shape x=batch,3", &out), 1);
  EXPECT_NE(out.find("--input-shape names dim 0 of 'x' batch, but the model fixes it at 4 (the model declares x as [4,3]"),
            std::string::npos)
      << out;
  EXPECT_EQ(run_kilnc("compile " + model + " -o " + art + " --target cpu --input-shape x=batch:0,3", &out), 1);
  EXPECT_NE(out.find("--input-shape x=batch:0,3: expected NAME=d0,d1,... (a dim is a size, or a symbol: batch or batch:16)"), std::string::npos)
      << out;
}

TEST(KilncOnnx, SymbolicDimensionsNeedAnInputShape) {
  KILN_AOT_REQUIRE_DEVICE();
  std::string dir = scratch_dir("kilnc_onnx");
  std::string model = write(dir, "batch.onnx", mlp(-1)), out;
  std::string art = dir + "/batch.kiln";
  EXPECT_EQ(run_kilnc("compile " + model + " -o " + art + " --target " + default_device().name(), &out), 1);
  EXPECT_NE(out.find("input 'x' has the symbolic shape [-1,3]; give it with --input-shape x=d0,d1,..."), std::string::npos) << out;
  ASSERT_EQ(run_kilnc("compile " + model + " -o " + art + " --target " + default_device().name() + " --input-shape x=2,3", &out), 0) << out;
  EXPECT_EQ(load(art).inputs()[0].shape, (Shape{2, 3}));
  EXPECT_EQ(run_kilnc("compile " + model + " -o " + art + " --target cpu --input-shape x=2,4", &out), 1);
  EXPECT_NE(out.find("--input-shape x=[2,4] does not fit the model's [-1,3]"), std::string::npos) << out;
}

TEST(KilncOnnx, ImportErrorsNameTheNode) {
  ModelBuilder b;
  b.input("x", TensorProto::FLOAT, {1, 1, 4, 4});
  b.node("DeformConv", {"x"}, {"y"}, "conv1");
  b.output("y", TensorProto::FLOAT, {1, 1, 2, 2});
  std::string model = write(scratch_dir("kilnc_onnx"), "pool.onnx", b.bytes()), out;
  EXPECT_EQ(run_kilnc("compile " + model + " -o x.kiln --target cpu", &out), 1);
  EXPECT_NE(out.find("kilnc compile: " + model + ": node 'conv1' (DeformConv): DeformConv is not supported yet (its sampling at offsets computed at run time is not built)"),
            std::string::npos)
      << out;
}

}  // namespace
}  // namespace kiln::testing

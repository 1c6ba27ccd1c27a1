// The conformance runner itself (onnx_conformance, run as a child process on node-test folders
// written here): a right answer is a PASS, a refused op an UNSUPPORTED that does not fail the run,
// and a wrong answer a FAILURE that does.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "onnx/model_builder.h"

namespace kiln::testing {
namespace {

namespace fs = std::filesystem;
using onnx_pb::TensorProto;

void write(const fs::path& p, const std::string& bytes) { std::ofstream(p, std::ios::binary) << bytes; }

std::string tensor(const std::vector<float>& v, const std::vector<int64_t>& dims) {
  TensorProto t;
  t.set_data_type(TensorProto::FLOAT);
  for (int64_t d : dims) t.add_dims(d);
  for (float x : v) t.add_float_data(x);
  return t.SerializeAsString();
}

// A node-test case folder: model.onnx with one op on x[4], one data set.
void make_case(const fs::path& dir, const std::string& op, const std::vector<float>& x, const std::vector<float>& y) {
  fs::create_directories(dir / "test_data_set_0");
  ModelBuilder b;
  b.input("x", TensorProto::FLOAT, {4});
  b.node(op, {"x"}, {"y"}, "the_node");
  b.output("y", TensorProto::FLOAT, {4});
  write(dir / "model.onnx", b.bytes());
  write(dir / "test_data_set_0" / "input_0.pb", tensor(x, {4}));
  write(dir / "test_data_set_0" / "output_0.pb", tensor(y, {4}));
}

int run(const fs::path& data, std::string* out) {
  std::string cmd = std::string(ONNX_CONFORMANCE_PATH) + " --data " + data.string() + " --device cpu --verbose 2>&1";
  FILE* p = popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out->append(buf, n);
  int status = pclose(p);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

fs::path fresh(const std::string& name) {
  fs::path d = fs::path(::testing::TempDir()) / ("kiln_onnx_runner_" + name);
  fs::remove_all(d);
  fs::create_directories(d);
  return d;
}

TEST(OnnxConformanceRunner, PassesRefusalsAndFailures) {
  fs::path data = fresh("cases");
  make_case(data / "test_relu_right", "Relu", {-1, 0, 2, -3}, {0, 0, 2, 0});
  make_case(data / "test_deform_conv_refused", "DeformConv", {1, 2, 3, 4}, {4, 4, 4, 4});
  std::string out;
  EXPECT_EQ(run(data, &out), 0) << out;
  EXPECT_NE(out.find("PASS        test_relu_right"), std::string::npos) << out;
  EXPECT_NE(out.find("UNSUPPORTED test_deform_conv_refused"), std::string::npos) << out;
  EXPECT_NE(out.find("1 pass, 1 unsupported, 0 failures of 2 (50.0% passing)"), std::string::npos) << out;

  make_case(data / "test_relu_wrong", "Relu", {-1, 0, 2, -3}, {0, 0, 2.01f, 0});
  out.clear();
  EXPECT_EQ(run(data, &out), 1) << out;
  EXPECT_NE(out.find("FAILURE test_relu_wrong: test_data_set_0 output 0 'y': 1 of 4 values differ (first at 2: got 2, expected 2.01"),
            std::string::npos)
      << out;
}

}  // namespace
}  // namespace kiln::testing

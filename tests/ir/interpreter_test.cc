#include <gtest/gtest.h>

#include <cmath>

#include "ir/graph.h"
#include "ir/interpreter.h"

namespace kiln::ir {
namespace {

std::vector<HostTensor> run(const char* text, std::vector<HostTensor> inputs) {
  auto g = parse(text);
  EXPECT_TRUE(g.ok()) << g.status();
  auto r = interpret(*g, inputs);
  EXPECT_TRUE(r.ok()) << r.status();
  return *r;
}

TEST(Interpreter, IntegerArithmeticWrapsAtTheDtypeWidth) {
  HostTensor a = HostTensor::make(DType::kInt32, {2});
  a.i = {2147483647, -2147483647 - 1};
  auto r = run("graph {\n  %0 = input 0 : i32[2]\n  %1 = add %0, %0 : i32[2]\n  %2 = neg %0 : i32[2]\n  output %1, %2\n}\n", {a});
  EXPECT_EQ(r[0].i, (std::vector<int64_t>{-2, 0}));
  EXPECT_EQ(r[1].i, (std::vector<int64_t>{-2147483647, -2147483647 - 1}));
}

TEST(Interpreter, FloatToIntCastSaturatesAndNanIsZero) {
  HostTensor a = HostTensor::make(DType::kFloat32, {4});
  a.f = {1e10, -1e10, std::nan(""), -2.7};
  auto r = run("graph {\n  %0 = input 0 : f32[4]\n  %1 = cast %0 : i8[4]\n  output %1\n}\n", {a});
  EXPECT_EQ(r[0].i, (std::vector<int64_t>{127, -128, 0, -2}));
}

TEST(Interpreter, ReductionsAndArgmaxFirstOccurrence) {
  HostTensor a = HostTensor::make(DType::kFloat32, {2, 3});
  a.f = {1, 5, 5, -1, -2, -3};
  auto r = run("graph {\n  %0 = input 0 : f32[2,3]\n  %1 = reduce_sum %0 axes=[1] : f32[2,1]\n"
               "  %2 = argmax %0 axes=[1] : i64[2,1]\n  %3 = reduce_max %0 axes=[0,1] : f32[1,1]\n"
               "  output %1, %2, %3\n}\n", {a});
  EXPECT_EQ(r[0].f, (std::vector<double>{11, -6}));
  EXPECT_EQ(r[1].i, (std::vector<int64_t>{1, 0}));
  EXPECT_EQ(r[2].f, (std::vector<double>{5}));
}

TEST(Interpreter, MaxPropagatesNan) {
  HostTensor a = HostTensor::make(DType::kFloat32, {3});
  a.f = {1, std::nan(""), 3};
  auto r = run("graph {\n  %0 = input 0 : f32[3]\n  %1 = reduce_max %0 axes=[0] : f32[1]\n  output %1\n}\n", {a});
  EXPECT_TRUE(std::isnan(r[0].f[0]));
}

TEST(Interpreter, DotAndPadAndConcat) {
  HostTensor a = HostTensor::make(DType::kFloat32, {2, 3});
  a.f = {1, 2, 3, 4, 5, 6};
  auto r = run("graph {\n  %0 = input 0 : f32[2,3]\n  %1 = permute %0 perm=[1,0] : f32[3,2]\n"
               "  %2 = dot %0, %1 : f32[2,2]\n  %3 = pad %0 widths=[0,0,1,0] value=9 : f32[2,4]\n"
               "  %4 = concat %0, %0 axis=1 : f32[2,6]\n  output %2, %3, %4\n}\n", {a});
  EXPECT_EQ(r[0].f, (std::vector<double>{14, 32, 32, 77}));
  EXPECT_EQ(r[1].f, (std::vector<double>{9, 1, 2, 3, 9, 4, 5, 6}));
  EXPECT_EQ(r[2].f, (std::vector<double>{1, 2, 3, 1, 2, 3, 4, 5, 6, 4, 5, 6}));
}

TEST(Interpreter, RandomIsDeterministicAndInRange) {
  auto r1 = run("graph {\n  %0 = rand seed=7 : f32[1000]\n  output %0\n}\n", {});
  auto r2 = run("graph {\n  %0 = rand seed=7 : f32[1000]\n  output %0\n}\n", {});
  auto r3 = run("graph {\n  %0 = rand seed=8 : f32[1000]\n  output %0\n}\n", {});
  EXPECT_EQ(r1[0].f, r2[0].f);
  EXPECT_NE(r1[0].f, r3[0].f);
  double mean = 0;
  for (double v : r1[0].f) {
    EXPECT_GE(v, 0.0);
    EXPECT_LT(v, 1.0);
    mean += v / 1000;
  }
  EXPECT_NEAR(mean, 0.5, 0.05);
}

}  // namespace
}  // namespace kiln::ir

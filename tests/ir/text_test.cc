#include <gtest/gtest.h>

#include <cstdint>

#include "ir/graph.h"
#include "absl/strings/str_cat.h"
#include "ir/interpreter.h"

namespace kiln::ir {
namespace {

const char* kSample = R"(graph {
  %0 = input 0 : f32[2,3]
  %1 = const 0.5 : f32[1,1]
  %2 = expand %1 : f32[2,3]
  %3 = add %0, %2 : f32[2,3]
  %4 = reduce_sum %3 axes=[1] : f32[2,1]
  %5 = pad %3 widths=[0,1,1,0] value=-inf : f32[3,4]
  %6 = slice %5 start_step=[2,-1,0,2] : f32[3,2]
  %7 = input 1 : i32[4]
  %8 = const -3 : i32[4]
  %9 = lt %7, %8 : bool[4]
  %10 = rand seed=42 : f32[2,2]
  %11 = concat %10, %10 axis=0 : f32[4,2]
  %12 = permute %11 perm=[1,0] : f32[2,4]
  %13 = argmax %12 axes=[1] : i64[2,1]
  output %4, %6, %9, %13
}
)";

TEST(IrText, RoundTripIsByteIdentical) {
  auto g = parse(kSample);
  ASSERT_TRUE(g.ok()) << g.status();
  std::string printed = print(*g);
  EXPECT_EQ(printed, kSample);
  auto g2 = parse(printed);
  ASSERT_TRUE(g2.ok()) << g2.status();
  EXPECT_EQ(print(*g2), printed);
  EXPECT_EQ(g->structural_hash(), g2->structural_hash());
}

TEST(IrText, FloatConstantsRoundTripExactly) {
  for (double v : {0.1, 1.0 / 3.0, 1e-300, -0.0, 6.02214076e23, 3.4028234663852886e38}) {
    Graph g;
    Node c;
    c.op = Op::kConst;
    c.dtype = DType::kFloat64;
    c.scalar = Scalar::from_double(v);
    g.add_output(g.add(c));
    auto p = parse(print(g));
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_TRUE(p->node(0).scalar == Scalar::from_double(v)) << print(g);
  }
}

struct BadCase {
  const char* text;
  const char* message;
};

TEST(IrText, ParseErrorsGiveLineColumnAndExpectation) {
  const BadCase cases[] = {
      {"grph {", "1:1: expected 'graph'"},
      {"graph {\n  %0 = input 0 : f32[2]\n  %1 = frob %0 : f32[2]\n  output %1\n}",
       "3:8: expected an op name, got 'frob'"},
      {"graph {\n  %0 = input 0 : f33[2]\n  output %0\n}", "2:18: expected a dtype, got 'f33'"},
      {"graph {\n  %0 = input 0 : f32[2]\n  %2 = neg %0 : f32[2]\n  output %2\n}", "3:3: expected node id %1"},
      {"graph {\n  %0 = input 0 : f32[2]\n  %1 = neg %5 : f32[2]\n  output %1\n}",
       "3:13: operand %5 is not defined before %1"},
      {"graph {\n  %0 = input 0 : f32[2]\n  output %3\n}", "3:11: output %3 is not defined"},
      {"graph {\n  %0 = input 0 : f32[2]\n  %1 = reduce_sum %0 axes=[3] : f32[1]\n  output %1\n}",
       "3:3: reduce_sum: axis 3 out of range for shape [2]"},
      {"graph {\n  %0 = input 0 : f32[2\n  output %0\n}", "2:23: expected a shape like [2,3]"},
      {"graph {\n  %0 = input 0 : f32[2]\n  output %0\n", "4:1: expected '}'"},
  };
  for (const BadCase& c : cases) {
    auto g = parse(c.text);
    ASSERT_FALSE(g.ok()) << c.text;
    EXPECT_EQ(g.status().message(), c.message) << c.text;
  }
}

// A dot is exact unless its text says precision=tf32 (graphs written before the attribute parse
// as they did); TF32 is for float32 dots only.
TEST(IrText, DotPrecision) {
  const std::string tf32 =
      "graph {\n  %0 = input 0 : f32[2,3]\n  %1 = input 1 : f32[3,4]\n  %2 = dot %0, %1 precision=tf32 : f32[2,4]\n"
      "  output %2\n}\n";
  auto g = parse(tf32);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(g->node(2).ints, std::vector<int64_t>{1});
  EXPECT_EQ(print(*g), tf32);
  auto exact = parse("graph {\n  %0 = input 0 : f32[2,3]\n  %1 = input 1 : f32[3,4]\n  %2 = dot %0, %1 precision=exact : f32[2,4]\n  output %2\n}\n");
  ASSERT_TRUE(exact.ok()) << exact.status();
  EXPECT_TRUE(exact->node(2).ints.empty());
  EXPECT_EQ(print(*exact).find("precision"), std::string::npos);
  EXPECT_NE(exact->structural_hash(), g->structural_hash());
  auto bad = parse("graph {\n  %0 = input 0 : f32[2,3]\n  %1 = input 1 : f32[3,4]\n  %2 = dot %0, %1 precision=fast : f32[2,4]\n  output %2\n}\n");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(), "4:29: expected 'exact' or 'tf32', got 'fast'");
  auto f64 = parse("graph {\n  %0 = input 0 : f64[2,3]\n  %1 = input 1 : f64[3,4]\n  %2 = dot %0, %1 precision=tf32 : f64[2,4]\n  output %2\n}\n");
  ASSERT_FALSE(f64.ok());
  EXPECT_EQ(f64.status().message(), "4:3: dot: TF32 precision needs float32 operands");
}

TEST(IrVerify, RejectsIllFormedNodes) {
  Graph g;
  Node in;
  in.op = Op::kInput;
  in.shape = {2, 3};
  in.ints = {0};
  NodeId a = g.add(in);
  Node bad;
  bad.op = Op::kExp;
  bad.dtype = DType::kInt32;
  bad.shape = {2, 3};
  bad.inputs = {a};
  g.add(bad);
  g.add_output(1);
  absl::Status s = verify(g);
  EXPECT_FALSE(s.ok());
  EXPECT_EQ(s.message(), "%1: exp: result dtype must equal the operand dtype");
}

// int_div / int_rem: integer operands only; their text round-trips; the interpreter's defined
// cases (by zero, MIN / -1) and C's rounding toward zero.
TEST(IrVerify, IntegerDivisionTakesIntegersOnly) {
  auto ok = parse("graph {\n  %0 = input 0 : i64[3]\n  %1 = input 1 : i64[3]\n  %2 = int_div %0, %1 : i64[3]\n"
                  "  %3 = int_rem %0, %1 : i64[3]\n  output %2, %3\n}\n");
  ASSERT_TRUE(ok.ok()) << ok.status();
  EXPECT_TRUE(verify(*ok).ok());
  std::vector<HostTensor> in(2);
  in[0].dtype = in[1].dtype = DType::kInt64;
  in[0].shape = in[1].shape = {3};
  in[0].i = {-7, INT64_MIN, 5};
  in[1].i = {2, -1, 0};
  auto out = interpret(*ok, in);
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ((*out)[0].i, (std::vector<int64_t>{-3, INT64_MIN, 0}));
  EXPECT_EQ((*out)[1].i, (std::vector<int64_t>{-1, 0, 0}));
  for (const char* t : {"f32", "bool"}) {
    auto bad = parse(absl::StrCat("graph {\n  %0 = input 0 : ", t, "[3]\n  %1 = int_div %0, %0 : ", t, "[3]\n  output %1\n}\n"));
    EXPECT_EQ(bad.status().message(), absl::StrCat("3:3: int_div: needs integer operands, got ", t));
  }
}

TEST(IrGraph, HashConsingMergesIdenticalNodes) {
  Graph g;
  Node in;
  in.op = Op::kInput;
  in.shape = {4};
  in.ints = {0};
  NodeId a = g.add(in);
  Node e;
  e.op = Op::kExp;
  e.shape = {4};
  e.inputs = {a};
  EXPECT_EQ(g.add(e), g.add(e));
  EXPECT_EQ(g.size(), 2u);
}

TEST(IrGraph, StructuralHashIgnoresNothingButData) {
  auto g1 = parse("graph {\n  %0 = input 0 : f32[2]\n  %1 = exp %0 : f32[2]\n  output %1\n}\n");
  auto g2 = parse("graph {\n  %0 = input 0 : f32[3]\n  %1 = exp %0 : f32[3]\n  output %1\n}\n");
  auto g3 = parse("graph {\n  %0 = input 0 : f32[2]\n  %1 = log %0 : f32[2]\n  output %1\n}\n");
  ASSERT_TRUE(g1.ok() && g2.ok() && g3.ok());
  EXPECT_NE(g1->structural_hash(), g2->structural_hash());
  EXPECT_NE(g1->structural_hash(), g3->structural_hash());
}

}  // namespace
}  // namespace kiln::ir

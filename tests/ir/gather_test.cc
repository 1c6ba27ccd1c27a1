// The index primitives in the graph IR (gather, scatter, segment_reduce): text round trip, the
// verifier's messages, and the interpreter's values (negative indices count from the end,
// out-of-range ones read 0; segment offsets are clamped).
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "ir/graph.h"
#include "ir/interpreter.h"

namespace kiln::ir {
namespace {

const char* kGather = R"(graph {
  %0 = input 0 : f32[2,3]
  %1 = input 1 : i64[2,4]
  %2 = gather %0, %1 axis=1 : f32[2,4]
  output %2
}
)";

// Parses `text`, checking that it prints back byte for byte.
absl::StatusOr<Graph> round_trip(const char* text) {
  auto g = parse(text);
  if (g.ok()) {
    EXPECT_EQ(print(*g), text);
  }
  return g;
}

TEST(IrGather, RoundTripsThroughText) {
  auto g = round_trip(kGather);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_TRUE(verify(*g).ok());
  // The axis is part of the structure: the same graph over axis 0 hashes differently.
  Node n = g->node(2);
  n.ints = {0};
  Graph k;
  k.add(g->node(0));
  k.add(g->node(1));
  k.add_output(k.add(n));
  EXPECT_NE(g->structural_hash(), k.structural_hash());
}

TEST(IrGather, InterpreterWrapsNegativeAndZeroesOutOfRange) {
  auto g = parse(kGather);
  ASSERT_TRUE(g.ok());
  HostTensor x = HostTensor::make(DType::kFloat32, {2, 3});
  x.f = {1, 2, 3, 4, 5, 6};
  HostTensor idx = HostTensor::make(DType::kInt64, {2, 4});
  idx.i = {2, -1, 3, -4, 0, 1, -3, 100};
  auto r = interpret(*g, {x, idx});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0].f, (std::vector<double>{3, 3, 0, 0, 4, 5, 4, 0}));
}

struct Bad {
  const char* body;
  const char* message;
};

// The graph of `c.body` with output %`out` does not parse, for the reason `c.message`.
void expect_refused(const Bad& c, int out) {
  std::string text = absl::StrCat("graph {\n  ", c.body, "\n  output %", out, "\n}\n");
  auto g = parse(text);
  ASSERT_FALSE(g.ok()) << text;
  EXPECT_NE(g.status().message().find(c.message), std::string::npos) << g.status() << "\nwanted: " << c.message;
}

TEST(IrGather, VerifierNamesTheProblem) {
  const Bad cases[] = {
      {"%0 = input 0 : f32[2,3]\n  %1 = input 1 : f32[2,4]\n  %2 = gather %0, %1 axis=1 : f32[2,4]",
       "gather: indices must have an integer dtype, got f32"},
      {"%0 = input 0 : f32[2,3]\n  %1 = input 1 : i32[8]\n  %2 = gather %0, %1 axis=1 : f32[8]",
       "gather: indices [8] must have the rank of [2,3]"},
      {"%0 = input 0 : f32[2,3]\n  %1 = input 1 : i32[3,4]\n  %2 = gather %0, %1 axis=1 : f32[3,4]",
       "gather: indices [3,4] and [2,3] differ outside axis 1"},
      {"%0 = input 0 : f32[2,3]\n  %1 = input 1 : i32[2,4]\n  %2 = gather %0, %1 axis=2 : f32[2,4]",
       "gather: axis must be one of the 2 dims of [2,3]"},
      {"%0 = input 0 : f32[2,3]\n  %1 = input 1 : i32[2,4]\n  %2 = gather %0, %1 axis=1 : f32[2,3]",
       "gather: result shape must equal the indices' shape"},
      {"%0 = input 0 : f32[2,3]\n  %1 = input 1 : i32[2,4]\n  %2 = gather %0, %1 axis=1 : i32[2,4]",
       "gather: result dtype must equal the gathered tensor's dtype"},
      {"%0 = input 0 : f32[2,0]\n  %1 = input 1 : i32[2,4]\n  %2 = gather %0, %1 axis=1 : f32[2,4]",
       "gather: cannot gather from an empty axis"},
  };
  for (const Bad& c : cases) expect_refused(c, 2);
}

const char* kScatter = R"(graph {
  %0 = input 0 : f32[2,3]
  %1 = input 1 : i32[2,4]
  %2 = input 2 : f32[2,4]
  %3 = scatter %0, %1, %2 axis_mode=[1,1] : f32[2,3]
  output %3
}
)";

// Updates apply along the axis in order: duplicates add up (mode 1, add); negative indices count
// from the end and out-of-range ones are dropped.
TEST(IrScatter, RoundTripsAndInterpretsInOrder) {
  auto g = round_trip(kScatter);
  ASSERT_TRUE(g.ok()) << g.status();
  HostTensor x = HostTensor::make(DType::kFloat32, {2, 3});
  x.f = {1, 2, 3, 4, 5, 6};
  HostTensor idx = HostTensor::make(DType::kInt32, {2, 4});
  idx.i = {0, 0, -1, 3, 2, 2, -4, 1};
  HostTensor upd = HostTensor::make(DType::kFloat32, {2, 4});
  upd.f = {10, 20, 30, 40, 1, 2, 3, 4};
  auto r = interpret(*g, {x, idx, upd});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0].f, (std::vector<double>{31, 2, 33, 4, 9, 9}));
  Graph none = *parse(std::string(kScatter).replace(std::string(kScatter).find("[1,1]"), 5, "[1,0]"));
  auto n = interpret(none, {x, idx, upd});
  ASSERT_TRUE(n.ok());
  EXPECT_EQ((*n)[0].f, (std::vector<double>{20, 2, 30, 4, 4, 2}));  // the last duplicate wins
}

TEST(IrScatter, VerifierNamesTheProblem) {
  const Bad cases[] = {
      {"%0 = input 0 : f32[2,3]\n  %1 = input 1 : f32[2,4]\n  %2 = input 2 : f32[2,4]\n"
       "  %3 = scatter %0, %1, %2 axis_mode=[1,0] : f32[2,3]",
       "scatter: indices must have an integer dtype, got f32"},
      {"%0 = input 0 : f32[2,3]\n  %1 = input 1 : i32[3,4]\n  %2 = input 2 : f32[3,4]\n"
       "  %3 = scatter %0, %1, %2 axis_mode=[1,0] : f32[2,3]",
       "scatter: indices [3,4] exceed [2,3] along axis 0"},
      {"%0 = input 0 : f32[2,3]\n  %1 = input 1 : i32[2,4]\n  %2 = input 2 : f32[2,3]\n"
       "  %3 = scatter %0, %1, %2 axis_mode=[1,0] : f32[2,3]",
       "scatter: updates must have the indices' shape"},
      {"%0 = input 0 : bool[2,3]\n  %1 = input 1 : i32[2,4]\n  %2 = input 2 : bool[2,4]\n"
       "  %3 = scatter %0, %1, %2 axis_mode=[1,1] : bool[2,3]",
       "scatter: a reduction needs numeric data, got bool"},
      {"%0 = input 0 : f32[2,3]\n  %1 = input 1 : i32[2,4]\n  %2 = input 2 : f32[2,4]\n"
       "  %3 = scatter %0, %1, %2 axis_mode=[1,7] : f32[2,3]",
       "scatter: unknown mode"},
  };
  for (const Bad& c : cases) expect_refused(c, 3);
}

const char* kSegment = R"(graph {
  %0 = input 0 : f32[5,2]
  %1 = input 1 : i64[4]
  %2 = segment_reduce %0, %1 mode=3 : f32[3,2]
  output %2
}
)";

// Max over rows [0, 2), [2, 2) (empty: -inf), then [1, 9) clamped to [1, 5).
TEST(IrSegment, RoundTripsAndInterpretsWithClampedOffsets) {
  auto g = round_trip(kSegment);
  ASSERT_TRUE(g.ok()) << g.status();
  HostTensor x = HostTensor::make(DType::kFloat32, {5, 2});
  x.f = {1, 9, 4, -1, 0, 2, 7, 3, 5, 8};
  HostTensor off = HostTensor::make(DType::kInt64, {4});
  off.i = {0, 2, 1, 9};
  auto r = interpret(*g, {x, off});
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_EQ((*r)[0].f, (std::vector<double>{4, 9, -INFINITY, -INFINITY, 7, 8}));
  off.i = {0, 2, 2, 9};
  r = interpret(*g, {x, off});
  ASSERT_TRUE(r.ok());
  EXPECT_EQ((*r)[0].f, (std::vector<double>{4, 9, -INFINITY, -INFINITY, 7, 8}));
}

TEST(IrSegment, VerifierNamesTheProblem) {
  const Bad cases[] = {
      {"%0 = input 0 : f32[5,2]\n  %1 = input 1 : i32[4]\n  %2 = segment_reduce %0, %1 mode=1 : f32[3,2]",
       "segment_reduce: offsets must be i64 [S + 1], got i32[4]"},
      {"%0 = input 0 : f32[5,2]\n  %1 = input 1 : i64[4]\n  %2 = segment_reduce %0, %1 mode=0 : f32[3,2]",
       "segment_reduce: mode must be add, mul, max or min"},
      {"%0 = input 0 : f32[5,2]\n  %1 = input 1 : i64[4]\n  %2 = segment_reduce %0, %1 mode=1 : f32[4,2]",
       "segment_reduce: result must be [3,2]"},
      {"%0 = input 0 : bool[5]\n  %1 = input 1 : i64[4]\n  %2 = segment_reduce %0, %1 mode=1 : bool[3]",
       "segment_reduce: needs numeric data, got bool"},
      {"%0 = input 0 : f32[5]\n  %1 = input 1 : i64[4]\n  %2 = segment_reduce %0, %1 mode=1 : f64[3]",
       "segment_reduce: result dtype must equal the data's dtype"},
  };
  for (const Bad& c : cases) expect_refused(c, 2);
}

}  // namespace
}  // namespace kiln::ir

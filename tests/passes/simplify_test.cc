#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"

#include "ir/graph.h"
#include "passes/simplify.h"

namespace kiln::passes {
namespace {

ir::Graph parse_or_die(const std::string& text) {
  auto g = ir::parse(text);
  EXPECT_TRUE(g.ok()) << g.status();
  return *g;
}

TEST(Simplify, IdentitiesFoldAway) {
  ir::Graph g = parse_or_die(R"(graph {
  %0 = input 0 : f32[4]
  %1 = const 1 : f32[4]
  %2 = mul %0, %1 : f32[4]
  %3 = const 0 : f32[4]
  %4 = add %2, %3 : f32[4]
  %5 = neg %4 : f32[4]
  %6 = neg %5 : f32[4]
  %7 = cast %6 : f32[4]
  %8 = cast %7 : f64[4]
  %9 = cast %8 : f32[4]
  output %9
}
)");
  ir::Graph s = simplify(g);
  EXPECT_EQ(ir::print(s), "graph {\n  %0 = input 0 : f32[4]\n  output %0\n}\n");
}

TEST(Simplify, ConstantsFoldThroughElementwiseAndMovementOps) {
  ir::Graph g = parse_or_die(R"(graph {
  %0 = const 2 : f32[1,3]
  %1 = expand %0 : f32[4,3]
  %2 = exp %1 : f32[4,3]
  %3 = const 3 : f32[4,3]
  %4 = mul %2, %3 : f32[4,3]
  %5 = input 0 : f32[4,3]
  %6 = add %5, %4 : f32[4,3]
  output %6
}
)");
  ir::Graph s = simplify(g);
  ASSERT_EQ(s.size(), 3u);  // input, one folded constant, add
  int consts = 0;
  for (const ir::Node& n : s.nodes()) {
    if (n.op != ir::Op::kConst) continue;
    ++consts;
    EXPECT_EQ(n.shape, (Shape{4, 3}));
    EXPECT_FLOAT_EQ(float(n.scalar.f), float(std::exp(2.0)) * 3.0f);
  }
  EXPECT_EQ(consts, 1);
}

TEST(Simplify, NarrowingCastChainsAreKept) {
  ir::Graph g = parse_or_die(R"(graph {
  %0 = input 0 : f32[2]
  %1 = cast %0 : i8[2]
  %2 = cast %1 : f32[2]
  output %2
}
)");
  EXPECT_EQ(simplify(g).size(), 3u);
}

TEST(Simplify, IntegerThroughFloatToIntegerChainsAreKept) {
  // i8 -> f32 -> u8 stays two casts (float -> integer saturates, integer -> integer wraps);
  // through a wider integer (both wrap) or into float (exact) the chain is one cast.
  struct Chain {
    const char* mid;
    const char* last;
    size_t nodes;
  };
  for (const Chain& c : {Chain{"f32", "u8", 3}, Chain{"i32", "u8", 2}, Chain{"f32", "f64", 2}}) {
    SCOPED_TRACE(absl::StrCat("i8 -> ", c.mid, " -> ", c.last));
    ir::Graph g = parse_or_die(absl::StrCat("graph {\n  %0 = input 0 : i8[2]\n  %1 = cast %0 : ", c.mid,
                                            "[2]\n  %2 = cast %1 : ", c.last, "[2]\n  output %2\n}\n"));
    EXPECT_EQ(simplify(g).size(), c.nodes);
  }
}

TEST(Simplify, DeadNodesGoAndDuplicatesMerge) {
  ir::Graph g;
  ir::Node in;
  in.op = ir::Op::kInput;
  in.shape = {3};
  in.ints = {0};
  ir::NodeId x = g.add(in);
  ir::Node e;
  e.op = ir::Op::kExp;
  e.shape = {3};
  e.inputs = {x};
  ir::NodeId a = g.add(e);
  ir::Node l = e;
  l.op = ir::Op::kLog;
  g.add(l);  // dead
  g.add_output(a);
  g.add_output(a);
  ir::Graph s = simplify(g);
  EXPECT_EQ(s.size(), 2u);
  EXPECT_EQ(s.outputs(), (std::vector<ir::NodeId>{1, 1}));
}

}  // namespace
}  // namespace kiln::passes

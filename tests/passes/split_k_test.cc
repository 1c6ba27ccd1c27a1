// Split-K (passes/split_reduce.h, SplitPolicy::min_dot_tiles): on a GPU target a matmul with
// fewer output tiles than multiprocessors and a long k becomes a batched dot of partial products
// over k chunks (float32/float64: zero-padded when k does not divide; bf16/f16: float32 partials)
// and their sum. Pinned: when
// it applies, the kernels it makes, and that the split graph computes the original's values.
#include <gtest/gtest.h>

#include <cmath>

#include "absl/strings/str_cat.h"
#include "ir/interpreter.h"
#include "ir/graph.h"
#include "passes/helpers.h"
#include "testing/reference.h"

namespace kiln {
namespace {

ir::Graph dot_graph(const std::string& batch, int64_t M, int64_t K, int64_t N, const char* dtype) {
  const std::string text =
      absl::StrCat("graph {\n  %0 = input 0 : ", dtype, "[", batch, M, ",", K, "]\n  %1 = input 1 : ", dtype, "[", batch, K, ",",
                   N, "]\n  %2 = dot %0, %1 : ", dtype, "[", batch, M, ",", N, "]\n  %3 = tanh %2 : ", dtype, "[", batch, M,
                   ",", N, "]\n  output %3\n}\n");
  auto g = ir::parse(text);
  EXPECT_TRUE(g.ok()) << g.status() << "\n" << text;
  return g.ok() ? *g : ir::Graph{};
}

ir::HostTensor random_input(const ir::Graph& g, int input, uint32_t seed) {
  const ir::Node* n = nullptr;
  for (size_t i = 0; i < g.size(); ++i)
    if (g.node(ir::NodeId(i)).op == ir::Op::kInput && g.node(ir::NodeId(i)).ints[0] == input) n = &g.node(ir::NodeId(i));
  ir::HostTensor t = ir::HostTensor::make(n->dtype, n->shape);
  std::vector<float> v = testing::random_floats(size_t(t.numel()), seed);
  t.f.assign(v.begin(), v.end());
  return t;
}

// The dots of the graph the passes produced: their shapes.
std::vector<Shape> dots_of(const ir::Graph& g) {
  std::vector<Shape> out;
  for (size_t i = 0; i < g.size(); ++i)
    if (g.node(ir::NodeId(i)).op == ir::Op::kDot) out.push_back(g.node(ir::NodeId(i)).shape);
  return out;
}

// The same values up to the rounding of the partial sums (each rounded to the dtype once more).
void expect_same_values(const ir::Graph& original, const ir::Graph& split, double tol) {
  std::vector<ir::HostTensor> in = {random_input(original, 0, 1), random_input(original, 1, 2)};
  auto want = ir::interpret(original, in);
  auto got = ir::interpret(split, in);
  ASSERT_TRUE(want.ok() && got.ok());
  ASSERT_EQ((*want)[0].f.size(), (*got)[0].f.size());
  for (size_t i = 0; i < (*want)[0].f.size(); ++i)
    ASSERT_NEAR((*got)[0].f[i], (*want)[0].f[i], tol) << i;
}

TEST(SplitK, AMatmulWithFewTilesAndLongKIsSplit) {
  // 16x512 outputs: 8 tiles for 132 multiprocessors. Chunks of 128 at least, up to four tiles
  // per multiprocessor: k = 4096 in 32 chunks of 128; k = 3001 in 16 chunks, padded to 16 x 188.
  for (auto [K, S] : {std::pair<int64_t, int64_t>{4096, 32}, {3001, 16}}) {
    ir::Graph g = dot_graph("", 16, K, 512, "f32");
    auto c = passes::compile_graph(g, testing::gpu_target(), passes::Options{});
    ASSERT_TRUE(c.ok()) << c.status();
    EXPECT_EQ(dots_of(c->graph), (std::vector<Shape>{{S, 16, 512}})) << ir::print(c->graph);
    // The partial products, then their sum with the tanh.
    EXPECT_EQ(c->program.kernels.size(), 2u) << c->program.to_string();
    expect_same_values(g, c->graph, 1e-5);
  }
  // Batched: each of 2 batches with 4 tiles, k = 2048 -> 16 chunks of 128.
  ir::Graph g = dot_graph("2,", 64, 2048, 256, "f64");
  auto c = passes::compile_graph(g, testing::gpu_target(), passes::Options{});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(dots_of(c->graph), (std::vector<Shape>{{2, 16, 64, 256}})) << ir::print(c->graph);
  expect_same_values(g, c->graph, 1e-12);
}

// 16-bit products: float32 partial products of the 16-bit operands (the tensor cores' own
// accumulation), summed in float32 and rounded once; at most one wave of 128x64 tiles (the
// tensor-core kernels walk their tiles from one block per multiprocessor); chunks that are
// whole 16-byte pieces, so the operands stay views the copy engines read in place.
TEST(SplitK, SixteenBitProductsSplitWithFloat32Partials) {
  // 16x512: 8 tiles of 128x64 for 132 multiprocessors; k = 4096 in 8 chunks of 512 (64 tiles).
  for (const char* dt : {"bf16", "f16"}) {
    ir::Graph g = dot_graph("", 16, 4096, 512, dt);
    auto c = passes::compile_graph(g, testing::gpu_target(), passes::Options{});
    ASSERT_TRUE(c.ok()) << c.status();
    ASSERT_EQ(dots_of(c->graph), (std::vector<Shape>{{8, 16, 512}})) << ir::print(c->graph);
    for (size_t i = 0; i < c->graph.size(); ++i) {
      if (c->graph.node(ir::NodeId(i)).op == ir::Op::kDot) {
        EXPECT_EQ(c->graph.node(ir::NodeId(i)).dtype, DType::kFloat32) << ir::print(c->graph);
      }
    }
    EXPECT_EQ(c->program.kernels.size(), 2u) << c->program.to_string();
    expect_same_values(g, c->graph, 1e-2);  // the result's own rounding
  }
}

// On a Vulkan device with cooperative matrices, whose kernel keeps several workgroups on each
// multiprocessor, a decode-shaped 16-bit product splits into up to four waves of tiles: 16 x 8192
// x 8192 (128 tiles for 132 multiprocessors) in 4 chunks of 2048. CUDA's persistent kernels keep
// it whole (one wave already).
TEST(SplitK, DecodeProductsSplitIntoWavesOnCooperativeMatrices) {
  ir::TargetInfo coop = testing::gpu_target();
  coop.coop_m = coop.coop_n = coop.coop_k = 16;
  coop.parallelism = 132;
  ir::TargetInfo persistent = coop;
  persistent.coop_m = persistent.coop_n = persistent.coop_k = 0;
  ir::Graph g = dot_graph("", 16, 8192, 8192, "f16");
  auto c = passes::compile_graph(g, coop, passes::Options{});
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(dots_of(c->graph), (std::vector<Shape>{{4, 16, 8192}})) << ir::print(c->graph);
  auto p = passes::compile_graph(g, persistent, passes::Options{});
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(dots_of(p->graph), (std::vector<Shape>{{16, 8192}})) << ir::print(p->graph);
  ir::Graph small = dot_graph("", 16, 1024, 512, "f16");
  auto s = passes::compile_graph(small, coop, passes::Options{});
  ASSERT_TRUE(s.ok()) << s.status();
  expect_same_values(small, s->graph, 1e-2);
}

TEST(SplitK, OtherMatmulsStayOneDot) {
  struct Case {
    const char* what;
    ir::Graph g;
    ir::TargetInfo target;
  };
  std::vector<Case> cases = {
      {"enough tiles (2048x2048)", dot_graph("", 2048, 4096, 2048, "f32"), testing::gpu_target()},
      {"short k (under 512)", dot_graph("", 16, 500, 512, "f32"), testing::gpu_target()},
      {"bf16, k not a whole number of 16-byte chunks", dot_graph("", 16, 3000, 512, "bf16"), testing::gpu_target()},
      {"bf16, a full wave of 128x64 tiles", dot_graph("", 16, 4096, 8192, "bf16"), testing::gpu_target()},
      {"a CPU target", dot_graph("", 16, 4096, 512, "f32"), testing::cpu_target()},
  };
  for (const Case& k : cases) {
    auto c = passes::compile_graph(k.g, k.target, passes::Options{});
    ASSERT_TRUE(c.ok()) << k.what << ": " << c.status();
    ASSERT_EQ(dots_of(c->graph).size(), 1u) << k.what;
    EXPECT_EQ(dots_of(c->graph)[0], dots_of(k.g)[0]) << k.what << ":\n" << ir::print(c->graph);
  }
}

}  // namespace
}  // namespace kiln

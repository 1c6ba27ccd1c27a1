// Column reductions and long rows on GPUs without a GPU: a reduction whose rows are strided in
// memory takes a workgroup per 32 outputs with the rows split among its groups
// (codegen/c_family/columns.cc), W4b's partial sums among them;
// long contiguous rows read 16 bytes at a time (renderer.h: row_vec4_loads); KILN_GPU_COLUMN_TILES=0
// and KILN_GPU_ROW_VEC4=0 go back to a thread per output and to 4-byte loads. The CUDA module
// compiles with NVRTC and assembles with ptxas; a GLSL target takes the same choices. (Values on a
// device: ops_test's Reduce.ColumnReductionsInOnePass and Reduce.LongRowsWithVectorLoads, on
// cuda and vulkan.)
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "backends/cuda/nvrtc.h"
#include "backends/cuda/target.h"
#include "codegen/c_family/gpu_program.h"
#include "cuda/ptxas.h"
#include "frontend/capture.h"
#include "kiln/kiln.h"
#include "passes/pipeline.h"
#include "testing/reference.h"
#include "testing/scoped_env.h"
#include "testing/vulkan_target.h"

namespace kiln {
namespace {

using testing::random_tensor;

struct Rendered {
  std::vector<std::string> strategies;  // one per kernel
  std::string module;
};

Rendered render(const std::vector<Tensor>& outs, codegen::gpu::Dialect d, const ir::TargetInfo& t) {
  std::vector<std::shared_ptr<runtime::Buffer>> bufs;
  auto planned = passes::compile_graph(detail::capture(outs, &bufs), t, passes::Options{});
  EXPECT_TRUE(planned.ok()) << planned.status();
  if (!planned.ok()) return {};
  auto r = codegen::gpu::render(planned->program, d, t);
  EXPECT_TRUE(r.ok()) << r.status();
  if (!r.ok()) return {};
  Rendered out;
  for (const auto& k : r->kernels) out.strategies.push_back(k.strategy);
  out.module = r->module_source;
  return out;
}

int count(const std::vector<std::string>& v, const std::string& what) {
  int n = 0;
  for (const std::string& s : v) n += s.find(what) != std::string::npos;
  return n;
}

// A realized input of `shape` (zeros: only its shape and layout matter here, and random data
// of W4's size would cost seconds).
Tensor input(Shape shape) {
  Tensor t = zeros(std::move(shape));
  t.realize();
  return t;
}

const ir::TargetInfo h100() { return runtime::cuda::cuda_target_info(132, 232448, 90); }

void expect_assembles(const std::string& module) {
  auto bin = runtime::cuda::nvrtc_compile(module, 90, /*keep_ptx=*/true, false);
  ASSERT_TRUE(bin.ok()) << bin.status() << "\n" << module;
  std::string log;
  if (testing_ptxas::available()) {
    EXPECT_TRUE(testing_ptxas::assemble(bin->ptx, "sm_90", &log)) << log;
  }
}

TEST(ColumnTiles, W4bIsSplitIntoColumnTilesOverChunks) {
  // 4096 columns are 32 outputs per multiprocessor on 132: the rows are cut into 8 chunks, whose
  // 32768 partial sums take tiles of 32 split 8 ways; the thread storing a column's last partial
  // sums the 8 (passes/chain_reduce.h), in the same kernel.
  Tensor x = input({16384, 4096});
  Rendered r = render({x.mean({0})}, codegen::gpu::Dialect::kCuda, h100());
  ASSERT_EQ(r.strategies.size(), 1u) << ::testing::PrintToString(r.strategies);
  EXPECT_EQ(count({r.strategies[0]}, "column tiles: 32 outputs per workgroup, the reduction split 8 ways"), 1)
      << ::testing::PrintToString(r.strategies);
  EXPECT_EQ(count(r.strategies, "chained: the last to store an output's 8 partials folds them alone"), 1)
      << ::testing::PrintToString(r.strategies);
  EXPECT_NE(r.module.find("volatile float* __restrict__"), std::string::npos);  // the partials, read back
  EXPECT_NE(r.module.find("atomicAdd((unsigned*)&"), std::string::npos);
  expect_assembles(r.module);
  {
    testing::ScopedEnv off({{"KILN_CHAIN_REDUCE", "0"}});
    Rendered two = render({x.mean({0})}, codegen::gpu::Dialect::kCuda, h100());
    ASSERT_EQ(two.strategies.size(), 2u) << ::testing::PrintToString(two.strategies);
    EXPECT_EQ(count(two.strategies, "chained"), 0) << ::testing::PrintToString(two.strategies);
  }
  // A target of 64 multiprocessors: 2 chunks of 8192 rows in 256 tiles of 8 groups, chained.
  Rendered g = render({x.mean({0})}, codegen::gpu::Dialect::kGlsl, testing::handwritten_vulkan_target());
  ASSERT_EQ(g.strategies.size(), 1u) << ::testing::PrintToString(g.strategies);
  EXPECT_EQ(count(g.strategies, "column tiles"), 1) << ::testing::PrintToString(g.strategies);
}

TEST(ColumnTiles, ShortColumnsRunInOnePass) {
  // 4096 rows are too few to split: 2048 columns in 64 tiles, one kernel, whose tiles take 32
  // groups each (8 or 16 would leave most of 132 multiprocessors idle).
  Tensor x = input({4096, 2048});
  Rendered r = render({x.sum({0})}, codegen::gpu::Dialect::kCuda, h100());
  ASSERT_EQ(r.strategies.size(), 1u) << ::testing::PrintToString(r.strategies);
  EXPECT_EQ(count(r.strategies, "column tiles: 32 outputs per workgroup, the reduction split 32 ways"), 1)
      << ::testing::PrintToString(r.strategies);
  expect_assembles(r.module);
}

TEST(ColumnTiles, FewColumnsAreSplitAndTheirPartialsTakeTiles) {
  // 512 columns are 16 tiles, far below a wave on 132 multiprocessors: the rows are split into 64
  // chunks (32768 partial outputs, in tiles), summed 64 to a column by the thread storing the last.
  Tensor x = input({65536, 512});
  Rendered r = render({x.sum({0})}, codegen::gpu::Dialect::kCuda, h100());
  ASSERT_EQ(r.strategies.size(), 1u) << ::testing::PrintToString(r.strategies);
  EXPECT_EQ(count({r.strategies[0]}, "column tiles"), 1) << ::testing::PrintToString(r.strategies);
  EXPECT_EQ(count(r.strategies, "64 partials folds them alone"), 1) << ::testing::PrintToString(r.strategies);
  expect_assembles(r.module);
}

TEST(ChainedReductions, W4aFoldsItsPartialsWithTheLastWorkgroup) {
  // W4a's 512 row partials: thread 0 of each workgroup takes the ticket, and the workgroup that
  // stored the last one sums all 512 together. The GLSL of the same takes the same choices.
  Tensor x = input({1 << 26});
  Rendered r = render({x.sum()}, codegen::gpu::Dialect::kCuda, h100());
  ASSERT_EQ(r.strategies.size(), 1u) << ::testing::PrintToString(r.strategies);
  EXPECT_EQ(count(r.strategies, "chained: the last to store an output's 512 partials folds them with its workgroup"), 1)
      << ::testing::PrintToString(r.strategies);
  EXPECT_NE(r.module.find("__threadfence();"), std::string::npos);
  expect_assembles(r.module);
  Rendered g = render({x.sum()}, codegen::gpu::Dialect::kGlsl, testing::handwritten_vulkan_target());
  ASSERT_EQ(g.strategies.size(), 1u) << ::testing::PrintToString(g.strategies);
  EXPECT_EQ(count(g.strategies, "with its workgroup"), 1) << ::testing::PrintToString(g.strategies);
}

TEST(ChainedReductions, EveryChainedDtypeAndATailCompile) {
  // float64, int64 (an int32 sum) and float32 partials; a finish that reads another input (the
  // bias) and stores two outputs.
  Tensor d = input({2, 1 << 20});
  Tensor i = random_tensor({3, 1 << 19}, int32, 7, -5, 5);
  Tensor c = input({65536, 64}), b = random_tensor({64}, float32, 8);
  Tensor m = c.mean({0});
  for (const std::vector<Tensor>& outs : std::vector<std::vector<Tensor>>{{d.cast(float64).sum({1})}, {i.sum({1})}, {m + b, m * b}}) {
    Rendered r = render(outs, codegen::gpu::Dialect::kCuda, h100());
    ASSERT_EQ(r.strategies.size(), 1u) << ::testing::PrintToString(r.strategies);
    EXPECT_EQ(count(r.strategies, "chained"), 1) << ::testing::PrintToString(r.strategies);
    expect_assembles(r.module);
  }
}

TEST(ColumnTiles, PhasesArgReductionsAndPartialTilesCompile) {
  // A softmax over axis 0 (two phases, a store at every position), an argmax, an int64 max and a
  // float64 sum with reduce axes on both sides of kept ones; 1000 and 96 outputs leave a partial
  // last tile.
  Tensor x = random_tensor({3000, 1000}, float32, 3);
  Tensor i = random_tensor({2048, 96}, int64, 4, -9, 9);
  Tensor y = random_tensor({300, 5, 60}, float64, 5);
  for (const Tensor& out : {softmax(x, 0), x.argmax(0), i.max({0}), y.sum({0})}) {
    Rendered r = render({out}, codegen::gpu::Dialect::kCuda, h100());
    ASSERT_EQ(r.strategies.size(), 1u) << ::testing::PrintToString(r.strategies);
    EXPECT_EQ(count(r.strategies, "column tiles"), 1) << ::testing::PrintToString(r.strategies);
    expect_assembles(r.module);
  }
}

TEST(ColumnTiles, FewerOutputsThanATileTakeAWorkgroupEach) {
  // 3 outputs would leave 29 of a tile's 32 lanes idle: a workgroup per output instead.
  Tensor x = random_tensor({4096, 3}, float32, 6);
  Rendered r = render({x.sum({0})}, codegen::gpu::Dialect::kCuda, h100());
  ASSERT_EQ(r.strategies.size(), 1u) << ::testing::PrintToString(r.strategies);
  EXPECT_EQ(count(r.strategies, "row reduction: one workgroup of"), 1) << ::testing::PrintToString(r.strategies);
}

TEST(ColumnTiles, SwitchedOffEveryOutputTakesAThread) {
  testing::ScopedEnv env({{"KILN_GPU_COLUMN_TILES", "0"}});
  Tensor x = input({16384, 4096});
  Rendered r = render({x.mean({0})}, codegen::gpu::Dialect::kCuda, h100());
  EXPECT_EQ(count(r.strategies, "column tiles"), 0) << ::testing::PrintToString(r.strategies);
  EXPECT_EQ(count(r.strategies, "per-output: one thread per outer index"), 1) << ::testing::PrintToString(r.strategies);
}

TEST(RowVectorLoads, LongRowsRead16BytesAtATime) {
  // W4a: 2^26 floats split into rows of 131072, then the partials; a transposed operand beside a
  // contiguous one; rows short enough for registers (4096) keep their cached loads.
  Tensor x = input({1 << 26});
  Tensor a = input({320, 32768}), w = input({32768, 320});
  Tensor s = random_tensor({512, 4096}, float32, 9);
  Rendered r = render({x.sum(), (a * w.transpose(0, 1)).sum({1}), s.sum({1})}, codegen::gpu::Dialect::kCuda, h100());
  EXPECT_EQ(count(r.strategies, "16-byte loads"), 2) << ::testing::PrintToString(r.strategies);
  EXPECT_NE(r.module.find("reinterpret_cast<const float4*>"), std::string::npos);
  expect_assembles(r.module);
  Rendered g = render({x.sum()}, codegen::gpu::Dialect::kGlsl, testing::handwritten_vulkan_target());
  EXPECT_EQ(count(g.strategies, "16-byte loads"), 1) << ::testing::PrintToString(g.strategies);

  testing::ScopedEnv env({{"KILN_GPU_ROW_VEC4", "0"}});
  Rendered off = render({x.sum()}, codegen::gpu::Dialect::kCuda, h100());
  EXPECT_EQ(count(off.strategies, "16-byte loads"), 0) << ::testing::PrintToString(off.strategies);
}

}  // namespace
}  // namespace kiln

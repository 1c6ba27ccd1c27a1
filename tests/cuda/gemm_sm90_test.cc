// The Hopper contraction path (codegen/c_family/contraction_sm90.cc): which contractions take it
// and why others do not, that its modules compile for sm_90a with NVRTC and assemble with
// ptxas (no GPU needed), the tensor maps' place in the compiled form, and, on a GPU of compute
// capability 9.0, results against the reference interpreter: ragged M/N/K, batched and
// broadcast operands, transposed views, f16, every elementwise epilogue the fuser attaches, and
// a replay with new bindings (tensor maps re-encoded).
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdlib>
#include <optional>
#include <string>
#include <initializer_list>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cuda/compiler.h"
#include "backends/cuda/nvrtc.h"
#include "backends/cuda/target.h"
#include "codegen/c_family/gpu_program.h"
#include "cuda/contraction_fixtures.h"
#include "cuda/ptxas.h"
#include "frontend/capture.h"
#include "kiln/kiln.h"
#include "passes/pipeline.h"
#include "runtime/compiled_program.h"
#include "runtime/registry.h"
#include "testing/reference.h"
#include "testing/scoped_env.h"

namespace kiln {
namespace {

using testing::random_tensor;
using testing::ScopedEnv;

using cudatest::h100;

struct Rendered {
  ir::Program program;
  codegen::gpu::RenderedProgram r;
};

Rendered render_h100(const std::vector<Tensor>& outs) {
  std::vector<std::shared_ptr<runtime::Buffer>> bufs;
  ir::Graph g = detail::capture(outs, &bufs);
  auto compiled = passes::compile_graph(g, h100(), passes::Options{});
  EXPECT_TRUE(compiled.ok()) << compiled.status();
  Rendered out;
  if (!compiled.ok()) return out;
  out.program = compiled->program;
  auto r = codegen::gpu::render(out.program, codegen::gpu::Dialect::kCuda, h100());
  EXPECT_TRUE(r.ok()) << r.status();
  if (r.ok()) out.r = *std::move(r);
  return out;
}

bool on_sm90(const codegen::gpu::RenderedProgram& r) {
  for (const auto& k : r.kernels)
    if (k.strategy.find("sm_90a") != std::string::npos) return true;
  return false;
}

// KILN_TEST_PTX_DIR=dir keeps the PTX of the compiled cases there (to read their SASS with
// ptxas + cuobjdump).
void write_ptx_for_inspection(const std::string& name, const std::string& ptx) {
  const char* d = std::getenv("KILN_TEST_PTX_DIR");
  if (!d) return;
  if (FILE* f = std::fopen(absl::StrCat(d, "/", name, ".ptx").c_str(), "w")) {
    std::fwrite(ptx.data(), 1, ptx.size(), f);
    std::fclose(f);
  }
}

// ptxas (where the toolkit has it) assembles the module for sm_90a, setmaxnreg honoured.
void expect_assembles_for_sm90a(const std::string& ptx) {
  if (!testing_ptxas::available()) return;
  std::string log;
  EXPECT_TRUE(testing_ptxas::assemble(ptx, "sm_90a", &log)) << log;
  EXPECT_EQ(log.find("C7508"), std::string::npos) << "setmaxnreg ignored:\n" << log;
}

class GemmSm90Compile : public cudatest::NeedsDefaultDevice {};

TEST_F(GemmSm90Compile, TakesTheHopperPathWhereTheCopyEngineCanFetchTheOperands) {
  Tensor a = random_tensor({256, 96}, bfloat16, 1), b = random_tensor({96, 128}, bfloat16, 2);
  Tensor bias = random_tensor({128}, bfloat16, 3);
  Tensor at = random_tensor({96, 256}, bfloat16, 4), bt = random_tensor({128, 96}, bfloat16, 5);
  Tensor x3 = random_tensor({4, 130, 72}, bfloat16, 6), w3 = random_tensor({4, 72, 136}, bfloat16, 7);
  Tensor h = random_tensor({200, 64}, float16, 8), g = random_tensor({64, 304}, float16, 9);
  for (const Tensor& t : {gelu(matmul(a, b) + bias, true), matmul(at.t(), bt.t()), matmul(x3, w3), matmul(x3, b.slice(0, 0, 72)),
                          matmul(h, g).cast(float16)}) {
    Rendered r = render_h100({t});
    EXPECT_TRUE(r.r.arch_specific);
    EXPECT_TRUE(on_sm90(r.r)) << r.r.kernels[0].strategy;
    // Transposed, sliced and batched operands are views the copy engine reads: no copy kernel.
    EXPECT_EQ(r.r.kernels.size(), 1u);
  }
  // Not 16-byte aligned rows (k = 70), f32 operands, a one-column rhs: the existing kernels.
  Tensor odd_a = random_tensor({64, 70}, bfloat16, 10), odd_b = random_tensor({70, 64}, bfloat16, 11);
  Tensor f = random_tensor({64, 64}, float32, 12);
  for (const Tensor& t : {matmul(odd_a, odd_b), matmul(f, f)}) {
    Rendered r = render_h100({t});
    EXPECT_FALSE(r.r.arch_specific);
    EXPECT_FALSE(on_sm90(r.r));
  }
  // Another architecture never takes it.
  ir::TargetInfo a100 = runtime::cuda::cuda_target_info(108, 166912, 80);
  std::vector<std::shared_ptr<runtime::Buffer>> bufs;
  auto compiled = passes::compile_graph(detail::capture({matmul(a, b)}, &bufs), a100, passes::Options{});
  ASSERT_TRUE(compiled.ok());
  auto r = codegen::gpu::render(compiled->program, codegen::gpu::Dialect::kCuda, a100);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(r->arch_specific);
}

// Float32 matmuls allowed TF32 take the Hopper path (wgmma .tf32, 32-value k rows) where both
// operands are contiguous along k (wgmma reads TF32 only that way), with ragged sizes, a batch
// and an epilogue; an n-major rhs keeps the mma.sync TF32 kernel; exact float32 never takes it.
// Each module compiles for sm_90a and assembles.
TEST_F(GemmSm90Compile, Tf32TakesTheHopperPathWhenBothOperandsAreKMajor) {
  const MatmulPrecision tf32 = MatmulPrecision::kTf32;
  Tensor a = random_tensor({300, 136}, float32, 1), bt = random_tensor({200, 136}, float32, 2);
  Tensor x3 = random_tensor({3, 130, 72}, float32, 3), y3 = random_tensor({3, 264, 72}, float32, 4);
  Tensor bias = random_tensor({200}, float32, 5);
  for (const Tensor& t : {matmul(a, bt.t(), tf32), relu(matmul(a, bt.t(), tf32) + bias),
                          matmul(x3, y3.transpose(1, 2), tf32)}) {
    Rendered r = render_h100({t});
    ASSERT_TRUE(r.r.arch_specific);
    EXPECT_TRUE(on_sm90(r.r)) << r.r.kernels[0].strategy;
    EXPECT_NE(r.r.kernels[0].strategy.find("TF32"), std::string::npos) << r.r.kernels[0].strategy;
    auto bin = runtime::cuda::nvrtc_compile(r.r.module_source, 90, /*keep_ptx=*/true, /*arch_specific=*/true);
    ASSERT_TRUE(bin.ok()) << bin.status() << "\n" << r.r.module_source;
    EXPECT_NE(bin->ptx.find("k8.f32.tf32.tf32"), std::string::npos);
    expect_assembles_for_sm90a(bin->ptx);
  }
  Tensor b = random_tensor({136, 200}, float32, 6);
  for (const Tensor& t : {matmul(a, b, tf32), matmul(a, bt.t())}) {
    Rendered r = render_h100({t});
    EXPECT_FALSE(on_sm90(r.r)) << r.r.kernels[0].strategy;
  }
}

TEST_F(GemmSm90Compile, ModulesCompileForSm90aAndAssemble) {
  Tensor a = random_tensor({300, 136}, bfloat16, 1), b = random_tensor({136, 200}, bfloat16, 2);
  Tensor bias = random_tensor({200}, bfloat16, 3), res = random_tensor({300, 200}, float32, 4);
  Tensor x3 = random_tensor({3, 130, 72}, bfloat16, 6), w3 = random_tensor({3, 72, 264}, bfloat16, 7);
  std::vector<std::vector<Tensor>> cases = {
      {gelu(matmul(a, b) + bias, true).cast(bfloat16)},
      {gelu(matmul(a, b)) * 0.5 + res, silu(matmul(a, b)), relu(matmul(a, b) - bias)},
      {matmul(b.t(), a.t())},
      {matmul(x3, w3), matmul(w3.transpose(1, 2), x3.transpose(1, 2))},
      {matmul(random_tensor({200, 64}, float16, 8), random_tensor({64, 304}, float16, 9))},
  };
  for (size_t i = 0; i < cases.size(); ++i) {
    Rendered r = render_h100(cases[i]);
    ASSERT_TRUE(r.r.arch_specific) << i;
    if (i == 0 && std::getenv("KILN_TEST_PRINT_SOURCE")) std::printf("%s\n", r.r.module_source.c_str());
    auto bin = runtime::cuda::nvrtc_compile(r.r.module_source, 90, /*keep_ptx=*/true, /*arch_specific=*/true);
    ASSERT_TRUE(bin.ok()) << bin.status() << "\n" << r.r.module_source;
    write_ptx_for_inspection(absl::StrCat("case", i), bin->ptx);
    EXPECT_NE(bin->ptx.find("wgmma.mma_async"), std::string::npos);
    EXPECT_NE(bin->ptx.find("cp.async.bulk.tensor"), std::string::npos);
    EXPECT_NE(bin->ptx.find("setmaxnreg"), std::string::npos);
    expect_assembles_for_sm90a(bin->ptx);
  }
}

std::string strategy_of(const Tensor& t) {
  Rendered r = render_h100({t});
  return r.r.kernels.empty() ? "" : r.r.kernels[0].strategy;
}

// Fewer rows than a tile: a k-major lhs is fetched in boxes of only its rows (rounded up to 8;
// the copy engine is slow to zero-fill past the end), and with at most 64 rows the second
// consumer warpgroup issues no wgmma. An m-major lhs keeps its 64-wide boxes.
TEST_F(GemmSm90Compile, DecodeShapesFetchOnlyTheirRows) {
  Tensor b = random_tensor({512, 1024}, bfloat16, 1);
  struct Case {
    int64_t m;
    const char* box;
    bool idle;
  };
  for (const Case& c : std::vector<Case>{{8, "lhs boxes of 8 rows", true}, {16, "lhs boxes of 16 rows", true},
                                         {64, "lhs boxes of 64 rows", true}, {100, "lhs boxes of 104 rows", false}}) {
    SCOPED_TRACE(c.m);
    const std::string s = strategy_of(matmul(random_tensor({c.m, 512}, bfloat16, 2), b));
    EXPECT_NE(s.find(c.box), std::string::npos) << s;
    EXPECT_EQ(s.find("second consumer idle") != std::string::npos, c.idle) << s;
  }
  // Batched: the map keeps one coordinate per batch axis; the module compiles and assembles.
  Rendered batched = render_h100({matmul(random_tensor({2, 3, 40, 512}, bfloat16, 5), b)});
  ASSERT_EQ(batched.r.kernels.size(), 1u);
  EXPECT_NE(batched.r.kernels[0].strategy.find("lhs boxes of 40 rows"), std::string::npos);
  auto bin = runtime::cuda::nvrtc_compile(batched.r.module_source, 90, /*keep_ptx=*/true, /*arch_specific=*/true);
  ASSERT_TRUE(bin.ok()) << bin.status();
  expect_assembles_for_sm90a(bin->ptx);
  EXPECT_EQ(strategy_of(matmul(random_tensor({200, 512}, bfloat16, 3), b)).find("lhs boxes"), std::string::npos);
  EXPECT_EQ(strategy_of(matmul(random_tensor({512, 16}, bfloat16, 4).t(), b)).find("lhs boxes"), std::string::npos);
}

// The schedule by default: ping-pong (one warpgroup's epilogue under the other's main loop) where
// the epilogue reads a tensor of the output's size, or k is 1024..2048; cooperative otherwise
// (a bias or a GELU alone at k = 4096 included), for one row of tiles, and when the environment
// says so.
TEST_F(GemmSm90Compile, HeavyEpiloguesAndShortKTakePingPong) {
  // 17 x 16 tiles: enough that none of these is split over k.
  Tensor a = random_tensor({2176, 4096}, bfloat16, 1), b = random_tensor({4096, 1024}, bfloat16, 2);
  Tensor res = random_tensor({2176, 1024}, bfloat16, 3), bias = random_tensor({1024}, bfloat16, 4);
  Tensor a2 = random_tensor({2176, 1536}, bfloat16, 5), b2 = random_tensor({1536, 1024}, bfloat16, 6);
  Tensor x = random_tensor({16, 4096}, bfloat16, 7), res16 = random_tensor({16, 1024}, bfloat16, 8);
  auto pingpong = [](const Tensor& t) { return strategy_of(t).find("ping-pong") != std::string::npos; };
  EXPECT_TRUE(pingpong(matmul(a, b) + res));
  EXPECT_FALSE(pingpong(gelu(matmul(a, b) + bias, true)));
  EXPECT_TRUE(pingpong(gelu(matmul(a2, b2) + bias, true)));
  EXPECT_TRUE(pingpong(matmul(a2, b2)));
  EXPECT_FALSE(pingpong(matmul(a, b)));
  EXPECT_FALSE(pingpong(matmul(a, b) + bias));
  EXPECT_FALSE(pingpong(matmul(x, b) + res16));
  ScopedEnv env({{"KILN_CUDA_SM90_SCHEDULE", "cooperative"}});
  EXPECT_FALSE(pingpong(matmul(a, b) + res));
}

TEST_F(GemmSm90Compile, TileWidthAndClusterFollowTheShape) {
  // Enough 128x256 tiles for 132 multiprocessors: 256 wide; no cluster unless asked for.
  Tensor a = random_tensor({2048, 64}, bfloat16, 1), b = random_tensor({64, 4096}, bfloat16, 2);
  std::string s = strategy_of(matmul(a, b));
  EXPECT_NE(s.find("128x256x64"), std::string::npos) << s;
  EXPECT_EQ(s.find("clusters"), std::string::npos) << s;
  // 17 m-tiles: 128 wide fills the GPU (17 x 8 tiles).
  Tensor a17 = random_tensor({2176, 64}, bfloat16, 3), b8 = random_tensor({64, 1024}, bfloat16, 4);
  s = strategy_of(matmul(a17, b8));
  EXPECT_NE(s.find("128x128x64"), std::string::npos) << s;
  {
    // Pairs of m-tiles in a cluster; the odd 17th pairs with an empty one.
    ScopedEnv env({{"KILN_CUDA_SM90_CLUSTER", "2"}, {"KILN_CUDA_SM90_BN", ""}});
    EXPECT_NE(strategy_of(matmul(a, b)).find("clusters of 2"), std::string::npos);
    s = strategy_of(matmul(a17, b8));
    EXPECT_NE(s.find("clusters of 2"), std::string::npos) << s;
  }
  // Decode-like (one row of tiles): 64-wide tiles spread the rhs over the GPU, no cluster.
  Tensor x = random_tensor({16, 64}, bfloat16, 5), w = random_tensor({64, 8192}, bfloat16, 6);
  s = strategy_of(matmul(x, w));
  EXPECT_NE(s.find("128x64x64"), std::string::npos) << s;
  EXPECT_EQ(s.find("clusters"), std::string::npos) << s;
  // One 2- or 4-byte result contiguous along n: the epilogue is staged through shared memory;
  // two results, or rows that are not 16-byte aligned (n = 100 in bf16: 200 bytes), store
  // straight from registers.
  EXPECT_NE(strategy_of(matmul(a, b).cast(float32)).find("staged"), std::string::npos);
  Tensor mm = matmul(a, b);
  Rendered two = render_h100({mm.relu(), mm * 2.0});
  ASSERT_EQ(two.r.kernels.size(), 1u);
  EXPECT_EQ(two.r.kernels[0].strategy.find("staged"), std::string::npos) << two.r.kernels[0].strategy;
  Tensor b100 = random_tensor({100, 64}, bfloat16, 7);
  s = strategy_of(matmul(a, b100.t()));
  EXPECT_NE(s.find("sm_90a"), std::string::npos) << s;
  EXPECT_EQ(s.find("staged"), std::string::npos) << s;
  {
    // Ping-pong: 128 x 128 tiles, one per warpgroup; not with clusters.
    ScopedEnv env({{"KILN_CUDA_SM90_SCHEDULE", "pingpong"}});
    s = strategy_of(matmul(a, b));
    EXPECT_NE(s.find("128x128x64"), std::string::npos) << s;
    EXPECT_NE(s.find("ping-pong"), std::string::npos) << s;
  }
  {
    ScopedEnv env({{"KILN_CUDA_SM90_SCHEDULE", "pingpong"}, {"KILN_CUDA_SM90_CLUSTER", "2"}});
    s = strategy_of(matmul(a, b));
    EXPECT_EQ(s.find("ping-pong"), std::string::npos) << s;
  }
  {
    ScopedEnv env({{"KILN_CUDA_SM90_BN", "128"}});
    s = strategy_of(matmul(x, w));
    EXPECT_NE(s.find("128x128x64"), std::string::npos) << s;
  }
}

// A staged float32, bf16 or f16 result whose view the copy engine can address, with k of 512 or
// more, is stored by TMA from swizzled chunk buffers (4 per warpgroup for 256-wide tiles, else 2;
// a third tensor map, over the output); short k, other dtypes, and KILN_CUDA_SM90_TMA_STORE=0
// keep the 16-byte st.global stores; every variant compiles and assembles for sm_90a.
TEST_F(GemmSm90Compile, StagedResultsStoreThroughTheCopyEngine) {
  // 9 x 19 tiles of 128 x 64 (enough for every multiprocessor: no split-K); 256-wide tiles below.
  Tensor a = random_tensor({1030, 520}, bfloat16, 1), b = random_tensor({520, 1160}, bfloat16, 2);
  Tensor wide_a = random_tensor({2048, 512}, bfloat16, 3), wide_b = random_tensor({512, 4096}, bfloat16, 4);
  Tensor x3 = random_tensor({3, 520, 520}, bfloat16, 5), w3 = random_tensor({3, 520, 1000}, bfloat16, 6);
  Tensor short_a = random_tensor({1030, 128}, bfloat16, 7), short_b = random_tensor({128, 1160}, bfloat16, 8);
  Tensor bias = random_tensor({1160}, bfloat16, 9);
  struct Case {
    std::vector<Tensor> outs;
    const char* how;   // the strategy's epilogue (cooperative schedule)
    const char* ptx;   // what the PTX must hold
    size_t maps;       // tensor maps of the kernel
  };
  std::vector<Case> cases = {
      {{gelu(matmul(a, b) + bias, true)}, "(TMA stores, 2 buffers)", "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group", 3},
      {{matmul(wide_a, wide_b).cast(float32)}, "(TMA stores, 4 buffers)", "cp.async.bulk.wait_group.read 2", 3},
      {{matmul(x3, w3).cast(float16)}, "(TMA stores", "cp.async.bulk.tensor.3d.global.shared::cta", 3},
      {{matmul(a, b).cast(int32)}, "(16-byte stores)", "st.global.v4", 2},  // no tensor map type for int32 here
      {{matmul(short_a, short_b)}, "(16-byte stores)", "st.global.v4", 2},  // k = 128: the stores saturate memory
  };
  for (const char* schedule : {"cooperative", "pingpong"})
    for (size_t i = 0; i < cases.size(); ++i) {
      SCOPED_TRACE(::testing::Message() << schedule << " case " << i);
      ScopedEnv env({{"KILN_CUDA_SM90_SCHEDULE", schedule}});
      Rendered r = render_h100(cases[i].outs);
      ASSERT_EQ(r.r.kernels.size(), 1u);
      const auto& k = r.r.kernels[0];
      // Ping-pong tiles are 128 wide: 2 buffers.
      const std::string how = schedule == std::string("pingpong") && i == 1 ? "(TMA stores, 2 buffers)" : cases[i].how;
      EXPECT_NE(k.strategy.find(how), std::string::npos) << k.strategy;
      ASSERT_EQ(k.tensor_maps.size(), cases[i].maps);
      if (cases[i].maps == 3) {  // the output's map: 16 rows of 128 bytes per box
        const auto& m = k.tensor_maps[2];
        EXPECT_EQ(m.buffer, r.program.kernels[0].stores[0].buffer);
        EXPECT_EQ(m.box[0] * uint32_t(m.elem_bytes), 128u);
        EXPECT_EQ(m.box[1], 16u);  // each warp stores its own 16 rows
      }
      auto bin = runtime::cuda::nvrtc_compile(r.r.module_source, 90, /*keep_ptx=*/true, /*arch_specific=*/true);
      ASSERT_TRUE(bin.ok()) << bin.status() << "\n" << r.r.module_source;
      if (!(schedule == std::string("pingpong") && i == 1)) {
        EXPECT_NE(bin->ptx.find(cases[i].ptx), std::string::npos);
      }
      expect_assembles_for_sm90a(bin->ptx);
    }
  {
    // Two buffers: a store may stay pending only until the next chunk is written.
    Rendered r = render_h100({matmul(a, b)});
    ASSERT_EQ(r.r.kernels.size(), 1u);
    auto bin = runtime::cuda::nvrtc_compile(r.r.module_source, 90, /*keep_ptx=*/true, /*arch_specific=*/true);
    ASSERT_TRUE(bin.ok()) << bin.status();
    EXPECT_NE(bin->ptx.find("cp.async.bulk.wait_group.read 0"), std::string::npos);
  }
  {
    ScopedEnv any_k({{"KILN_CUDA_SM90_TMA_STORE", "1"}});
    EXPECT_NE(strategy_of(matmul(short_a, short_b)).find("(TMA stores"), std::string::npos);
  }
  ScopedEnv off({{"KILN_CUDA_SM90_TMA_STORE", "0"}});
  Rendered r = render_h100({matmul(a, b)});
  ASSERT_EQ(r.r.kernels.size(), 1u);
  EXPECT_NE(r.r.kernels[0].strategy.find("(16-byte stores)"), std::string::npos) << r.r.kernels[0].strategy;
  EXPECT_EQ(r.r.kernels[0].tensor_maps.size(), 2u);
}

// Where the tiles divide the result (rows a multiple of the cluster's 128-row tiles, columns of
// the tile width), the epilogue evaluates every element without a bounds check (its loads
// unconditional, so NVRTC merges the two rows' loads of one bias column: W5 4% faster on an H100)
// and the TMA stores need no edge test; any ragged edge keeps both checks.
TEST_F(GemmSm90Compile, WholeTilesNeedNoBoundsChecks) {
  Tensor a = random_tensor({1024, 520}, bfloat16, 1), b = random_tensor({520, 1024}, bfloat16, 2);
  Tensor bias = random_tensor({1024}, bfloat16, 3);
  Tensor ra = random_tensor({1030, 520}, bfloat16, 4), rb = random_tensor({520, 1160}, bfloat16, 5);
  Tensor rbias = random_tensor({1160}, bfloat16, 6);
  Tensor a9 = random_tensor({1152, 520}, bfloat16, 7);  // 9 row tiles: whole alone, not in pairs
  auto source_of = [](const std::vector<Tensor>& outs) {
    Rendered r = render_h100(outs);
    EXPECT_EQ(r.r.kernels.size(), 1u);
    EXPECT_TRUE(on_sm90(r.r));
    return r.r.module_source;
  };
  for (const char* schedule : {"cooperative", "pingpong"}) {
    SCOPED_TRACE(schedule);
    ScopedEnv env({{"KILN_CUDA_SM90_SCHEDULE", schedule}});
    const std::string whole = source_of({gelu(matmul(a, b) + bias, true)});
    EXPECT_EQ(whole.find("if (om < "), std::string::npos);
    EXPECT_EQ(whole.find("if (n0 + ch * "), std::string::npos);
    const std::string ragged = source_of({gelu(matmul(ra, rb) + rbias, true)});
    EXPECT_NE(ragged.find("if (om < "), std::string::npos);
    EXPECT_NE(ragged.find("if (n0 + ch * "), std::string::npos);
  }
  {
    ScopedEnv env({{"KILN_CUDA_SM90_STAGED", "0"}});  // stores from registers: the same rule
    EXPECT_EQ(source_of({matmul(a, b) + bias}).find("if (om < "), std::string::npos);
    EXPECT_NE(source_of({matmul(ra, rb) + rbias}).find("if (om < "), std::string::npos);
  }
  EXPECT_EQ(source_of({matmul(a9, b)}).find("if (om < "), std::string::npos);
  // Clusters of 2 row tiles: the 5th pair is half past the end.
  ScopedEnv pairs({{"KILN_CUDA_SM90_CLUSTER", "2"}, {"KILN_CUDA_SM90_BN", "128"}});
  EXPECT_NE(strategy_of(matmul(a9, b)).find("clusters of 2"), std::string::npos) << strategy_of(matmul(a9, b));
  EXPECT_NE(source_of({matmul(a9, b)}).find("if (om < "), std::string::npos);
  EXPECT_EQ(source_of({matmul(a, b)}).find("if (om < "), std::string::npos);
}

// Stream-K: where the tiles are no multiple of the grid and k is long, the last wave's tiles are
// split over k between neighbouring CTAs (partial sums through global memory, a flag each); not
// where the tiles fill whole waves, for short k, ping-pong or clusters; KILN_CUDA_SM90_STREAMK
// forces it either way. The kernels compile and assemble.
TEST_F(GemmSm90Compile, StreamKSplitsTheLastWave) {
  Tensor a = random_tensor({4096, 4096}, bfloat16, 1), b = random_tensor({4096, 4096}, bfloat16, 2);
  Tensor bias = random_tensor({4096}, bfloat16, 3);
  Tensor short_a = random_tensor({4096, 256}, bfloat16, 4), short_b = random_tensor({256, 4096}, bfloat16, 5);
  const char* kSk = "stream-K after the last full wave";
  {
    // 512 tiles of 128 x 256 on 132 SMs: 3.9 waves.
    Rendered r = render_h100({gelu(matmul(a, b) + bias, true)});
    ASSERT_EQ(r.r.kernels.size(), 1u);
    EXPECT_NE(r.r.kernels[0].strategy.find(kSk), std::string::npos) << r.r.kernels[0].strategy;
    EXPECT_NE(r.r.module_source.find("kiln_sk_partials[132 * 128 * 256 / 4]"), std::string::npos);
    auto bin = runtime::cuda::nvrtc_compile(r.r.module_source, 90, /*keep_ptx=*/true, /*arch_specific=*/true);
    ASSERT_TRUE(bin.ok()) << bin.status();
    EXPECT_NE(bin->ptx.find("ld.acquire.gpu.global.u32"), std::string::npos);
    EXPECT_NE(bin->ptx.find("fence.acq_rel.gpu"), std::string::npos);
    expect_assembles_for_sm90a(bin->ptx);
  }
  EXPECT_EQ(strategy_of(matmul(short_a, short_b)).find(kSk), std::string::npos);  // 4 k blocks
  {
    ScopedEnv four({{"KILN_CUDA_SM90_GRID", "4"}});  // 512 tiles: 128 whole waves
    EXPECT_EQ(strategy_of(matmul(a, b)).find(kSk), std::string::npos);
  }
  {
    ScopedEnv pp({{"KILN_CUDA_SM90_SCHEDULE", "pingpong"}});
    EXPECT_EQ(strategy_of(matmul(a, b)).find(kSk), std::string::npos);
  }
  {
    ScopedEnv pairs({{"KILN_CUDA_SM90_CLUSTER", "2"}});
    EXPECT_EQ(strategy_of(matmul(a, b)).find(kSk), std::string::npos);
  }
  {
    ScopedEnv off({{"KILN_CUDA_SM90_STREAMK", "0"}});
    EXPECT_EQ(strategy_of(matmul(a, b)).find(kSk), std::string::npos);
  }
  ScopedEnv on({{"KILN_CUDA_SM90_STREAMK", "1"}});
  EXPECT_NE(strategy_of(matmul(short_a, short_b)).find(kSk), std::string::npos);
}

// Exact float32 products keep the SIMT kernel; large tiles with a long k put each thread on runs
// of 4 rows and columns, which NVRTC reads from shared memory in 16-byte loads (ld.shared.v4);
// a short k keeps the strided rows and columns (coalesced stores).
TEST_F(GemmSm90Compile, ExactFloat32TilesReadSharedMemoryIn16ByteLoads) {
  // 16 x 17 tiles of 128 x 128: two per multiprocessor of an H100.
  Tensor a = random_tensor({2048, 512}, float32, 1), b = random_tensor({512, 2176}, float32, 2);
  Tensor bias = random_tensor({2176}, float32, 3);
  Rendered r = render_h100({relu(matmul(a, b) + bias)});
  ASSERT_EQ(r.r.kernels.size(), 1u);
  EXPECT_NE(r.r.kernels[0].strategy.find("128x128 tiles"), std::string::npos) << r.r.kernels[0].strategy;
  EXPECT_NE(r.r.kernels[0].strategy.find("in runs of 4"), std::string::npos) << r.r.kernels[0].strategy;
  auto bin = runtime::cuda::nvrtc_compile(r.r.module_source, 90, /*keep_ptx=*/true, /*arch_specific=*/false);
  ASSERT_TRUE(bin.ok()) << bin.status();
  EXPECT_NE(bin->ptx.find("ld.shared.v4.f32"), std::string::npos);
  Tensor short_a = random_tensor({2048, 64}, float32, 4), short_b = random_tensor({64, 2176}, float32, 5);
  EXPECT_EQ(strategy_of(matmul(short_a, short_b)).find("in runs of 4"), std::string::npos);
}

// The clustered and ping-pong variants compile for sm_90a and assemble (no GPU needed).
TEST_F(GemmSm90Compile, ClusterAndPingPongKernelsCompileAndAssemble) {
  // k-major (a transposed view) and n-major rhs, a transposed lhs, batched, two results.
  Tensor a = random_tensor({2048, 64}, bfloat16, 1), b = random_tensor({64, 4096}, bfloat16, 2);
  Tensor bt = random_tensor({4096, 64}, bfloat16, 3), at = random_tensor({64, 2048}, bfloat16, 6);
  Tensor x3 = random_tensor({3, 1024, 64}, bfloat16, 4), w3 = random_tensor({3, 64, 2048}, bfloat16, 5);
  int i = 0;
  for (const char* variant : {"cluster", "pingpong"}) {
    ScopedEnv env({{variant == std::string("cluster") ? "KILN_CUDA_SM90_CLUSTER" : "KILN_CUDA_SM90_SCHEDULE",
                    variant == std::string("cluster") ? "2" : "pingpong"}});
    Tensor mm = matmul(a, b);
    for (const std::vector<Tensor>& outs : std::vector<std::vector<Tensor>>{
             {mm}, {matmul(a, bt.t())}, {matmul(x3, w3)}, {matmul(at.t(), b)}, {mm.relu(), mm * 2.0}}) {
      Rendered r = render_h100(outs);
      ASSERT_EQ(r.r.kernels.size(), 1u);
      const std::string& how = r.r.kernels[0].strategy;
      EXPECT_NE(how.find(variant == std::string("cluster") ? "clusters of 2" : "ping-pong"), std::string::npos) << how;
      auto bin = runtime::cuda::nvrtc_compile(r.r.module_source, 90, /*keep_ptx=*/true, /*arch_specific=*/true);
      ASSERT_TRUE(bin.ok()) << bin.status() << "\n" << r.r.module_source;
      write_ptx_for_inspection(absl::StrCat(variant, i++), bin->ptx);
      if (variant == std::string("cluster")) {
        EXPECT_NE(bin->ptx.find("multicast::cluster"), std::string::npos);
        EXPECT_NE(bin->ptx.find(".reqnctapercluster 2, 1, 1"), std::string::npos);
      }
      expect_assembles_for_sm90a(bin->ptx);
    }
  }
}

TEST_F(GemmSm90Compile, CompiledFormCarriesTheTensorMaps) {
  Tensor a = random_tensor({256, 128}, bfloat16, 1), b = random_tensor({128, 256}, bfloat16, 2);
  std::vector<std::shared_ptr<runtime::Buffer>> bufs;
  ir::Graph g = detail::capture({matmul(a, b)}, &bufs);
  auto compiler = runtime::make_compiler("cuda", h100());
  ASSERT_TRUE(compiler.ok()) << compiler.status();
  auto planned = passes::compile_graph(g, h100(), passes::Options{});
  ASSERT_TRUE(planned.ok());
  auto c = (*compiler)->compile(planned->program);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->target_key, "sm_90a");
  size_t maps = 0;
  for (const auto& k : c->kernels) maps += k.tensor_maps.size();
  ASSERT_EQ(maps, 2u);  // lhs and rhs (k = 128: the epilogue stores by st.global)
  auto back = runtime::deserialize(runtime::serialize(*c));
  ASSERT_TRUE(back.ok()) << back.status();
  for (size_t i = 0; i < c->kernels.size(); ++i) {
    ASSERT_EQ(back->kernels[i].tensor_maps.size(), c->kernels[i].tensor_maps.size());
    for (size_t m = 0; m < c->kernels[i].tensor_maps.size(); ++m) {
      const auto& x = c->kernels[i].tensor_maps[m];
      const auto& y = back->kernels[i].tensor_maps[m];
      EXPECT_EQ(x.buffer, y.buffer);
      EXPECT_EQ(x.dims, y.dims);
      EXPECT_EQ(x.strides, y.strides);
      EXPECT_EQ(x.box, y.box);
      EXPECT_EQ(x.offset, y.offset);
      EXPECT_EQ(x.swizzle, y.swizzle);
      EXPECT_EQ(x.type, y.type);
    }
  }
  // A map that reaches past its buffer, or names a missing one, is refused.
  for (int bad = 0; bad < 4; ++bad) {
    runtime::CompiledProgram broken = *c;
    for (auto& k : broken.kernels)
      for (auto& m : k.tensor_maps) {
        if (bad == 0) m.dims[0] += 1;
        if (bad == 1) m.buffer = int(broken.buffers.size());
        if (bad == 2) m.strides[0] = 12;
        if (bad == 3) m.type = runtime::TensorMapDesc::kFloat32;  // over a bf16 buffer
      }
    EXPECT_FALSE(runtime::check_consistent(broken).ok()) << bad;
    EXPECT_FALSE(runtime::deserialize(runtime::serialize(broken)).ok()) << bad;
  }
}

TEST(GemmSm90Target, ArchSpecificKeyAndCache) {
  // sm_90a code loads only on compute capability 9.0 exactly; a plain sm_90 module still loads.
  EXPECT_TRUE(runtime::cuda::accepts_key(runtime::cuda::cuda_target_info(132, 232448, 90), "sm_90a"));
  EXPECT_TRUE(runtime::cuda::accepts_key(runtime::cuda::cuda_target_info(132, 232448, 90), "sm_90"));
  EXPECT_FALSE(runtime::cuda::accepts_key(runtime::cuda::cuda_target_info(108, 166912, 80), "sm_90a"));
  EXPECT_FALSE(runtime::cuda::accepts_key(runtime::cuda::cuda_target_info(148, 232448, 100), "sm_90a"));
  EXPECT_FALSE(runtime::cuda::accepts_key(runtime::cuda::cuda_target_info(148, 232448, 100), "sm_100a"));
  // The architecture is part of the disk cache key and of NVRTC's options.
  EXPECT_NE(runtime::cuda::binary_cache_key("x", 90, true), runtime::cuda::binary_cache_key("x", 90, false));
  std::string opts;
  for (const std::string& o : runtime::cuda::nvrtc_options(90, true)) opts += o + " ";
  EXPECT_NE(opts.find("-arch=sm_90a"), std::string::npos) << opts;
}

// ---------------------------------------------------------------- on an sm_90 GPU

class GemmSm90Run : public cudatest::OnSm90Gpu {};

const testing::Tolerance kHalf{3e-2, 3e-2};

TEST_F(GemmSm90Run, RaggedShapes) {
  uint32_t seed = 100;
  for (auto [m, k, n] : std::vector<std::array<int64_t, 3>>{
           {128, 64, 128}, {256, 512, 256}, {300, 136, 200}, {1000, 72, 520}, {64, 1024, 8}, {8, 40, 264},
           {129, 8, 129}, {520, 1024, 776}, {1, 64, 200}, {16, 2048, 1024}, {40, 136, 264}, {100, 72, 520}}) {
    SCOPED_TRACE(::testing::Message() << m << "x" << k << "x" << n);
    Tensor a = random_tensor({m, k}, bfloat16, seed++), b = random_tensor({k, n}, bfloat16, seed++);
    EXPECT_MATCHES_REFERENCE({matmul(a, b)}, kHalf);
  }
}

// TF32 on the Hopper path truncates each operand to TF32 (10 mantissa bits): each product is off
// by at most 2 * 2^-10 of |a||b| <= 1, so an output by at most K * 2^-9 (plus f32 sums).
TEST_F(GemmSm90Run, Tf32KMajorOperands) {
  const MatmulPrecision tf32 = MatmulPrecision::kTf32;
  for (auto [m, k, n] : std::vector<std::array<int64_t, 3>>{{128, 64, 128}, {300, 136, 200}, {1000, 72, 520}, {8, 40, 264}}) {
    SCOPED_TRACE(::testing::Message() << m << "x" << k << "x" << n);
    Tensor a = random_tensor({m, k}, float32, 200, -1, 1), bt = random_tensor({n, k}, float32, 201, -1, 1);
    EXPECT_MATCHES_REFERENCE({matmul(a, bt.t(), tf32)}, (testing::Tolerance{0.0, double(k) * std::ldexp(1.0, -9)}));
  }
  Tensor x3 = random_tensor({3, 130, 72}, float32, 202, -1, 1), y3 = random_tensor({3, 264, 72}, float32, 203, -1, 1);
  Tensor bias = random_tensor({264}, float32, 204, -1, 1);
  EXPECT_MATCHES_REFERENCE({relu(matmul(x3, y3.transpose(1, 2), tf32) + bias)},
                           (testing::Tolerance{0.0, 72 * std::ldexp(1.0, -9)}));
}

TEST_F(GemmSm90Run, BatchedBroadcastAndTransposedViews) {
  Tensor x3 = random_tensor({4, 130, 72}, bfloat16, 1), w3 = random_tensor({4, 72, 264}, bfloat16, 2);
  Tensor w2 = random_tensor({72, 264}, bfloat16, 3);
  Tensor x4 = random_tensor({2, 3, 65, 48}, bfloat16, 4), w4 = random_tensor({2, 3, 48, 80}, bfloat16, 5);
  EXPECT_MATCHES_REFERENCE({matmul(x3, w3), matmul(x3, w2), matmul(w3.transpose(1, 2), x3.transpose(1, 2)),
                            matmul(x4, w4), matmul(x3.transpose(1, 2).transpose(1, 2), w2)},
                           kHalf);
  Tensor a = random_tensor({96, 256}, bfloat16, 6), b = random_tensor({200, 96}, bfloat16, 7);
  EXPECT_MATCHES_REFERENCE({matmul(a.t(), b.t()), matmul(b, a), matmul(a.t(), a)}, kHalf);
  Tensor h = random_tensor({200, 64}, float16, 8), g = random_tensor({64, 300}, float16, 9);
  EXPECT_MATCHES_REFERENCE({matmul(h, g), matmul(g.t(), h.t())}, kHalf);
}

// Every tile width with and without clusters, the epilogue staged through shared memory or not:
// odd m-tile counts (a cluster's second tile empty), ragged n and k, k-major and n-major rhs,
// batched operands, one output row whose end is not a whole 16-byte vector (n = 203).
TEST_F(GemmSm90Run, EveryTileWidthWithAndWithoutClusters) {
  Tensor a = random_tensor({520, 264}, bfloat16, 1), b = random_tensor({264, 776}, bfloat16, 2);
  Tensor bt = random_tensor({300, 264}, bfloat16, 3), b203 = random_tensor({203, 264}, bfloat16, 6);
  Tensor x3 = random_tensor({2, 384, 72}, bfloat16, 4), w3 = random_tensor({2, 72, 520}, bfloat16, 5);
  Tensor at = random_tensor({264, 520}, bfloat16, 7);  // a transposed (m-major) lhs
  Tensor deep = random_tensor({136, 1024}, bfloat16, 8), deep_b = random_tensor({1024, 200}, bfloat16, 9);  // 16 k blocks
  // Whole tiles at every width and cluster (no bounds checks in the epilogue): 512 rows, 512 columns.
  Tensor wa = random_tensor({512, 264}, bfloat16, 10), wb = random_tensor({264, 512}, bfloat16, 11);
  Tensor wbias = random_tensor({512}, bfloat16, 12);
  // staged: 1 through TMA stores at any k (2 or 4 buffers forced), 16 through 16-byte st.global,
  // 0 from registers.
  std::vector<std::array<const char*, 3>> configs;
  for (const char* bn : {"64", "128", "256"})
    for (const char* cluster : {"1", "2"}) configs.push_back({bn, cluster, "1"});
  configs.push_back({"256", "2", "0"});
  configs.push_back({"128", "1", "0"});
  configs.push_back({"256", "1", "16"});
  configs.push_back({"128", "1", "16"});
  configs.push_back({"256", "1", "2"});  // TMA stores, 2 buffers per warpgroup at every k
  configs.push_back({"128", "2", "4"});  // ... 4 buffers
  for (auto [bn, cluster, staged] : configs) {
    for (const char* schedule : {"cooperative", "pingpong"}) {
      if (schedule == std::string("pingpong") && (cluster == std::string("2") || bn == std::string("256"))) continue;
      SCOPED_TRACE(::testing::Message() << "BN " << bn << ", cluster " << cluster << ", staged " << staged << ", "
                                        << schedule);
      // Four CTAs: each walks many tiles, so the stage ring wraps within and across tiles, the
      // epilogue's two buffers alternate across tiles, and the ping-pong warpgroups take many turns.
      ScopedEnv env({{"KILN_CUDA_SM90_BN", bn}, {"KILN_CUDA_SM90_CLUSTER", cluster},
                     {"KILN_CUDA_SM90_STAGED", staged == std::string("0") ? "0" : "1"},
                     {"KILN_CUDA_SM90_TMA_STORE", staged == std::string("0") || staged == std::string("16") ? "0" : "1"},
                     {"KILN_CUDA_SM90_TMA_BUFFERS", staged == std::string("2") || staged == std::string("4") ? staged : "0"},
                     {"KILN_CUDA_SM90_SCHEDULE", schedule}, {"KILN_CUDA_SM90_GRID", "4"}});
      EXPECT_MATCHES_REFERENCE({matmul(a, b), matmul(a, bt.t()), matmul(x3, w3), matmul(a.slice(0, 0, 1), b203.t()),
                                matmul(at.t(), b), matmul(deep, deep_b), gelu(matmul(wa, wb) + wbias, true)},
                               kHalf);
    }
  }
}

// Stream-K forced on small grids (KILN_CUDA_SM90_GRID: 3, 6 and 9 CTAs over 65, 35 or 20 tiles of
// the first product, no multiple of them; each CTA's share of the split tiles cut anywhere in a
// tile's 16 k blocks) at every tile width: ragged and whole tiles, batched, every kind of epilogue
// store (TMA, 16-byte, registers); on 3 CTAs replayed (the flags are cleared for the next launch).
TEST_F(GemmSm90Run, StreamKSplitsTheLastWave) {
  Tensor a = random_tensor({520, 1000}, bfloat16, 1), b = random_tensor({1000, 776}, bfloat16, 2);
  Tensor bias = random_tensor({776}, bfloat16, 3);
  Tensor wa = random_tensor({384, 648}, bfloat16, 4), wb = random_tensor({648, 512}, bfloat16, 5);
  Tensor x3 = random_tensor({3, 200, 520}, bfloat16, 6), w3 = random_tensor({3, 520, 300}, bfloat16, 7);
  for (const char* bn : {"64", "128", "256"})
    for (const char* grid : {"3", "6", "9"})
      for (const char* store : {"tma", "16", "registers"}) {
        SCOPED_TRACE(::testing::Message() << "BN " << bn << ", grid " << grid << ", " << store);
        ScopedEnv env({{"KILN_CUDA_SM90_BN", bn}, {"KILN_CUDA_SM90_GRID", grid}, {"KILN_CUDA_SM90_STREAMK", "1"},
                       {"KILN_CUDA_SM90_SCHEDULE", "cooperative"},
                       {"KILN_CUDA_SM90_STAGED", store == std::string("registers") ? "0" : "1"},
                       {"KILN_CUDA_SM90_TMA_STORE", store == std::string("tma") ? "1" : "0"}});
        EXPECT_NE(strategy_of(matmul(a, b)).find("stream-K"), std::string::npos);
        for (int run = 0; run < (grid == std::string("3") ? 2 : 1); ++run)
          EXPECT_MATCHES_REFERENCE({gelu(matmul(a, b) + bias, true), matmul(wa, wb), matmul(x3, w3).cast(float32)}, kHalf);
      }
}

TEST_F(GemmSm90Run, EveryEpilogue) {
  // Ragged edges (300 x 200: bounds-checked epilogues), then whole tiles (256 x 256: none).
  for (const auto& [m, n] : std::vector<std::pair<int64_t, int64_t>>{{300, 200}, {256, 256}}) {
    SCOPED_TRACE(::testing::Message() << m << " x " << n);
    Tensor a = random_tensor({m, 136}, bfloat16, 1), b = random_tensor({136, n}, bfloat16, 2, -0.3, 0.3);
    Tensor bias = random_tensor({n}, bfloat16, 3), res = random_tensor({m, n}, float32, 4);
    auto outputs = [&] {  // fresh lazy tensors on each call (realized ones would not recompile)
      Tensor mm = matmul(a, b);
      return std::vector<Tensor>{gelu(mm + bias, true).cast(bfloat16), gelu(mm + bias), silu(mm) + res,
                                 relu(mm - bias) * 0.25, (mm * 0.125 + res).cast(float16), mm.tanh() + mm.sigmoid()};
    };
    // All in one kernel (stores straight from registers), then each alone (staged through shared
    // memory: bf16, f32 and f16 results).
    EXPECT_MATCHES_REFERENCE(outputs(), kHalf);
    for (size_t i = 0; i < outputs().size(); ++i) {
      SCOPED_TRACE(::testing::Message() << "output " << i);
      EXPECT_MATCHES_REFERENCE({outputs()[i]}, kHalf);
    }
  }
}

TEST_F(GemmSm90Run, MlpBlockAndReplayWithNewBindings) {
  auto mlp = [](const std::vector<Tensor>& in) {
    return std::vector<Tensor>{matmul(gelu(matmul(in[0], in[1]) + in[2], true), in[3]) + in[4]};
  };
  kiln::Jit step(mlp);
  for (uint32_t round = 0; round < 3; ++round) {
    std::vector<Tensor> in = {random_tensor({384, 256}, bfloat16, 10 + round),
                              random_tensor({256, 512}, bfloat16, 20 + round, -0.1, 0.1),
                              random_tensor({512}, bfloat16, 30 + round),
                              random_tensor({512, 264}, bfloat16, 40 + round, -0.1, 0.1),
                              random_tensor({264}, bfloat16, 50 + round)};
    Tensor got = step(in)[0];
    EXPECT_MATCHES_REFERENCE({mlp(in)[0]}, kHalf);
    // The jit's replay (new input buffers each round: tensor maps re-encoded) against the graph.
    std::vector<float> g = got.to_vector<float>(), w = mlp(in)[0].to_vector<float>();
    ASSERT_EQ(g.size(), w.size());
    double worst = 0;
    for (size_t i = 0; i < g.size(); ++i) worst = std::max(worst, double(std::abs(g[i] - w[i])));
    EXPECT_LE(worst, 1e-6) << "round " << round;
  }
}

}  // namespace
}  // namespace kiln

// Without a Mac: kiln's Metal compiler writes one MSL module per program, and every module the
// kernel families, the op and fusion suites generate passes the strongest check available here
// (msl_check.h: clang against an MSL stand-in header, with MSL's address spaces and no double).
// The compiler refuses what Metal cannot run (float64, loops) by name, kilnc compiles for Metal
// profiles, and one kernel renders with the same strategy and launch shape in all four dialects.
#include <gtest/gtest.h>

#include <cstdlib>
#include <regex>
#include <set>

#include "absl/strings/str_cat.h"
#include "backends/metal/compiler.h"
#include "backends/metal/profiles.h"
#include "backends/metal/target.h"
#include "codegen/c_family/gpu_program.h"
#include "frontend/capture.h"
#include "ir/graph.h"
#include "kiln/kiln.h"
#include "metal/msl_check.h"
#include "passes/pipeline.h"
#include "runtime/registry.h"
#include "testing/corpus.h"
#include "testing/kernel_cases.h"
#include "testing/planned.h"
#include "testing/reference.h"

namespace kiln {
namespace {

using testing::random_tensor;

absl::StatusOr<runtime::CompiledProgram> compile_for(const std::vector<Tensor>& outputs, const ir::TargetInfo& t,
                                                     bool fusion = true) {
  return runtime::metal::MetalCompiler(t).compile(testing::planned(outputs, t, fusion));
}

TEST(MetalCompile, EveryKernelFamilyParsesAsMsl) {
  if (!testing_msl::available()) GTEST_SKIP() << "no clang++ (dev.sh installs clang-14)";
  auto target = runtime::target_profile("metal", "m3-max");
  ASSERT_TRUE(target.ok()) << target.status();
  int kernels = 0;
  for (const testing::KernelCase& c : testing::kernel_cases()) {
    for (bool fusion : {true, false}) {
      const std::string what = absl::StrCat(c.name, fusion ? " (fused)" : " (unfused)");
      auto compiled = compile_for(c.outputs, *target, fusion);
      ASSERT_TRUE(compiled.ok()) << what << ": " << compiled.status();
      EXPECT_EQ(compiled->backend, "metal");
      EXPECT_EQ(compiled->target_key, "msl3.0-simd32");
      for (size_t i = 0; i < compiled->kernels.size(); ++i) {
        const runtime::CompiledKernel& k = compiled->kernels[i];
        ++kernels;
        // Each kernel's entry point is a kernel function of the module taking its argument block.
        const std::string& entry = compiled->entry(i);
        EXPECT_NE(compiled->module.find(absl::StrCat("kernel void ", entry, "(constant ", entry, "_args& kiln_args [[buffer(0)]]")),
                  std::string::npos)
            << what << ": no kernel function " << entry;
        EXPECT_LE(k.block[0] * k.block[1] * k.block[2], 1024u) << what;
      }
      // Metal has no device-scope fence in MSL 3.0: split reductions stay two kernels.
      EXPECT_EQ(compiled->module.find("atomic_fetch_add_explicit"), std::string::npos) << what;
      std::string log;
      EXPECT_TRUE(testing_msl::check(compiled->module, &log)) << what << ":\n" << log.substr(0, 4000);
    }
  }
  std::printf("%d Metal kernels checked with clang\n", kernels);
}

// The argument block: one device pointer per buffer in the kernel's binding order, then one
// 64-bit field per param, named as the body reads them; read-only buffers are const.
TEST(MetalCompile, ArgumentBlockFollowsTheBindingOrder) {
  auto target = runtime::target_profile("metal", "m1");
  ASSERT_TRUE(target.ok()) << target.status();
  // x * lr + 1 with lr a param (as the frontend records a float scalar from the user).
  auto g = ir::parse(R"(graph {
  %0 = input 0 : f32[1000]
  %1 = param slot=0 value=0.3 : f32[1000]
  %2 = mul %0, %1 : f32[1000]
  %3 = const 1 : f32[1000]
  %4 = add %2, %3 : f32[1000]
  output %4
})");
  ASSERT_TRUE(g.ok()) << g.status();
  auto planned = passes::compile_graph(*g, *target, passes::Options{});
  ASSERT_TRUE(planned.ok()) << planned.status();
  auto c = runtime::metal::MetalCompiler(*target).compile(planned->program);
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->kernels.size(), 1u);
  const runtime::CompiledKernel& k = c->kernels[0];
  ASSERT_EQ(k.buffers.size(), 2u);
  ASSERT_EQ(k.params.size(), 1u);
  const std::string in = absl::StrCat("b", k.buffers[0]), out = absl::StrCat("b", k.buffers[1]);
  const std::string block = absl::StrCat("struct ", k.name, "_args {\n  device const float* ", in, ";\n  device float* ", out,
                                         ";\n  ulong kiln_p", k.params[0], ";\n};");
  EXPECT_NE(c->module.find(block), std::string::npos) << c->module;
}

// Float products (f32, and f16 / bf16 operands accumulated in f32; batched; transposed views)
// run on SIMD-group matrices; an integer product keeps the SIMT kernel.
TEST(MetalCompile, FloatProductsTakeSimdgroupMatrices) {
  if (!testing_msl::available()) GTEST_SKIP() << "no clang++ (dev.sh installs clang-14)";
  auto target = runtime::target_profile("metal", "m2-max");
  ASSERT_TRUE(target.ok()) << target.status();
  Tensor a = random_tensor({70, 33}, float32, 1), b = random_tensor({33, 130}, float32, 2);
  Tensor h = random_tensor({3, 40, 24}, float16, 3), g = random_tensor({3, 24, 17}, bfloat16, 4);
  struct Product {
    const char* what;
    Tensor out;
    const char* strategy;
  };
  const Product products[] = {
      {"f32 with a ragged tile and a bias", matmul(a, b) + random_tensor({130}, float32, 5), "contraction matrix units: 8x8 float SIMD-group"},
      {"f32, transposed operand", matmul(b.t(), a.t()), "contraction matrix units: 8x8 float SIMD-group"},
      {"batched f16", matmul(h, h.transpose(1, 2)), "contraction matrix units: 8x8 float SIMD-group"},
      {"batched bf16 x f16 cast", matmul(h, g.cast(float16)), "contraction matrix units: 8x8 float SIMD-group"},
      {"int32", matmul(a.cast(int32), b.cast(int32)), "contraction: 64x64 tiles"},
  };
  for (const Product& p : products) {
    auto c = compile_for({p.out}, *target);
    ASSERT_TRUE(c.ok()) << p.what << ": " << c.status();
    bool found = false;
    for (const runtime::CompiledKernel& k : c->kernels) found = found || k.strategy.rfind(p.strategy, 0) == 0;
    EXPECT_TRUE(found) << p.what << ": no kernel of strategy " << p.strategy;
    std::string log;
    EXPECT_TRUE(testing_msl::check(c->module, &log)) << p.what << ":\n" << log.substr(0, 4000);
  }
}

TEST(MetalCompile, Float64AndLoopsAreRefusedByName) {
  auto target = runtime::target_profile("metal", "m2");
  ASSERT_TRUE(target.ok()) << target.status();
  auto f64 = compile_for({random_tensor({16}, float64, 1) * 2.0}, *target);
  ASSERT_FALSE(f64.ok());
  EXPECT_EQ(f64.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(f64.status().message().find("Metal GPUs have no float64; cast to float32 first"), std::string::npos) << f64.status();
  // A float64 value computed inside a kernel whose buffers are all float32.
  auto inside = compile_for({(random_tensor({16}, float32, 2).cast(float64) * 3.0).cast(float32)}, *target);
  if (!inside.ok()) {  // (the simplifier may fold the round trip away; if not, it is refused)
    EXPECT_NE(inside.status().message().find("computes in float64"), std::string::npos) << inside.status();
  }
  Tensor start = random_tensor({8}, float32, 3);
  auto loop = compile_for({while_loop([](const std::vector<Tensor>& v) { return v[0].sum() < 100.0; },
                                      [](const std::vector<Tensor>& v) { return std::vector<Tensor>{v[0] * 2.0 + 1.0}; },
                                      {start})[0]},
                          *target);
  ASSERT_FALSE(loop.ok());
  EXPECT_EQ(loop.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(loop.status().message().find("metal: loops and branches"), std::string::npos) << loop.status();
  auto other = runtime::make_compiler("metal", runtime::target_profile("hip", "gfx90a").value_or(ir::TargetInfo{}));
  EXPECT_EQ(other.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(MetalCompile, ProfilesNameAppleGpus) {
  EXPECT_EQ(runtime::metal::profile_names().front(), "m1");
  auto m4 = runtime::target_profile("metal", "m4-max");
  ASSERT_TRUE(m4.ok()) << m4.status();
  EXPECT_EQ(m4->parallelism, 40);
  EXPECT_EQ(m4->subgroup_size, 32);
  EXPECT_FALSE(m4->has_f64);
  EXPECT_EQ(runtime::metal::target_key(*m4), "msl3.0-simd32");
  auto none = runtime::target_profile("metal", "a9");
  EXPECT_EQ(none.status().code(), absl::StatusCode::kNotFound);
  EXPECT_NE(none.status().message().find("known: m1, m1-max"), std::string::npos) << none.status();
}

// One kernel from one place in all four dialects (deliverable 6 of issue 13): the strategy and
// launch shape are the renderer's, the same everywhere; only the spellings differ.
TEST(Dialects, OneKernelRendersAlikeInCudaHipGlslAndMsl) {
  Tensor x = random_tensor({64, 300}, float32, 1);
  std::vector<std::shared_ptr<runtime::Buffer>> bufs;
  const ir::Graph g = detail::capture({softmax(x * 2.0, -1)}, &bufs);
  // One target for all four, so that only the dialect differs (warp 32, shared memory 32 KiB).
  ir::TargetInfo t = runtime::metal::metal_target_info("m1", 8);
  auto planned = passes::compile_graph(g, t, passes::Options{});
  ASSERT_TRUE(planned.ok()) << planned.status();
  const ir::Program& p = planned->program;
  ASSERT_EQ(p.kernels.size(), 1u);
  struct Spelling {
    codegen::gpu::Dialect d;
    const char* shuffle;
    const char* barrier;
  };
  const Spelling dialects[] = {{codegen::gpu::Dialect::kCuda, "__shfl_xor_sync", "__syncthreads();"},
                               {codegen::gpu::Dialect::kHip, "__shfl_xor(", "__syncthreads();"},
                               {codegen::gpu::Dialect::kGlsl, "subgroupShuffleXor(", "barrier();"},
                               {codegen::gpu::Dialect::kMsl, "simd_shuffle_xor(", "threadgroup_barrier(mem_flags::mem_threadgroup);"}};
  std::string strategy;
  uint32_t grid = 0, block = 0;
  for (const Spelling& s : dialects) {
    auto r = codegen::gpu::render(p, s.d, t);
    ASSERT_TRUE(r.ok()) << r.status();
    const codegen::gpu::KernelSource& k = r->kernels[0];
    const std::string text = s.d == codegen::gpu::Dialect::kGlsl ? k.source : r->module_source;
    if (strategy.empty()) strategy = k.strategy, grid = k.grid[0], block = k.block[0];
    EXPECT_EQ(k.strategy, strategy) << int(s.d);
    EXPECT_EQ(k.grid[0], grid) << int(s.d);
    EXPECT_EQ(k.block[0], block) << int(s.d);
    EXPECT_NE(text.find(s.shuffle), std::string::npos) << int(s.d);
    EXPECT_NE(text.find(s.barrier), std::string::npos) << int(s.d);
  }
  EXPECT_NE(strategy.find("row"), std::string::npos) << strategy;
}

// Without Metal (any machine but a Mac with a Metal 3 GPU) the device says why; kilnc-style
// compiles for a profile still work.
TEST(MetalRuntime, WithoutMetalTheDeviceSaysWhy) {
#ifdef __APPLE__
  GTEST_SKIP() << "this is an Apple platform";
#endif
  auto d = runtime::get_device("metal");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(d.status().message().find("metal: "), std::string::npos) << d.status();
}

// Every graph the op, fusion, convolution and segment suites capture (ctest's cuda_corpus
// fixture, $KILN_CUDA_CORPUS), fused and unfused, compiled for Metal: each distinct kernel is
// checked with clang once (testing::unseen_kernels), programs batched into one file per check.
TEST(MetalKernels, OpAndFusionSuitesParseAsMsl) {
  const char* dirs = std::getenv("KILN_CUDA_CORPUS");
  if (!dirs || !*dirs) GTEST_SKIP() << "KILN_CUDA_CORPUS is not set (ctest sets it after the cuda_corpus fixture)";
  if (!testing_msl::available()) GTEST_SKIP() << "no clang++ (dev.sh installs clang-14)";
  const ir::TargetInfo target = runtime::metal::metal_target_info("m3-max", 40);
  runtime::metal::MetalCompiler compiler(target);
  std::set<uint64_t> seen;
  std::vector<std::string> failures;
  int kernels = 0, refused = 0;
  // Modules batched per clang run, each in a namespace of its own (their helpers repeat).
  std::vector<std::pair<std::string, std::string>> batch;  // (what, module)
  auto flush = [&]() {
    if (batch.empty()) return;
    std::string all = "#include <metal_stdlib>\n#include <metal_simdgroup_matrix>\n";
    for (size_t i = 0; i < batch.size(); ++i)
      absl::StrAppend(&all, "namespace kiln_module", i, " {\n",
                      std::regex_replace(batch[i].second, std::regex("#include <metal_[a-z_]+>\n"), ""), "}\n");
    std::string log;
    if (!testing_msl::check(all, &log)) {
      for (const auto& [what, module] : batch)  // which of them
        if (!testing_msl::check(module, &log)) failures.push_back(absl::StrCat(what, ":\n", log));
    }
    batch.clear();
  };
  const int graphs = testing::for_each_planned(dirs, target, &failures, [&](const std::string& what, const ir::Program& p) {
    auto compiled = compiler.compile(p);
    if (!compiled.ok()) {
      // float64 and device-side loops are refused by design; anything else is a failure.
      const std::string m(compiled.status().message());
      if (m.find("Metal GPUs have no float64") != m.npos || m.find("metal: loops and branches") != m.npos) ++refused;
      else failures.push_back(absl::StrCat(what, ": ", m));
      return;
    }
    auto r = codegen::gpu::render(p, codegen::gpu::Dialect::kMsl, target);
    ASSERT_TRUE(r.ok()) << r.status();
    const size_t before = seen.size();
    const std::string source = testing::unseen_kernels(*r, &seen);
    if (source.empty()) return;
    kernels += int(seen.size() - before);
    batch.emplace_back(what, source);
    if (batch.size() == 40) flush();
  });
  flush();
  ASSERT_GT(graphs, 0) << "no captured graphs under " << dirs;
  std::printf("%d graphs, %d distinct kernels checked as MSL, %d programs refused (float64, loops)\n", graphs, kernels,
              refused);
  std::string first;
  for (size_t i = 0; i < failures.size() && i < 3; ++i) absl::StrAppend(&first, "\n---- ", failures[i].substr(0, 3000));
  EXPECT_TRUE(failures.empty()) << failures.size() << " failure(s); the first ones:" << first;
}

}  // namespace
}  // namespace kiln

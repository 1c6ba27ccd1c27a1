// Without an AMD GPU: kiln's kernels compile with comgr to code objects for gfx90a (MI200) and
// gfx908 (MI100), each an AMDGPU ELF holding every kernel of its program (and its kernel
// descriptor); processors comgr cannot target, and rejected sources, are clear errors. The graphs
// are the benchmark workloads and op families at small sizes (elementwise chains, reductions and
// row normalizations with wavefront shuffles, tiled matmuls, gathers, scatters, convolutions,
// pooling, casts through f16 and bf16, 64-bit integers).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "backends/hip/comgr.h"
#ifdef KILN_TEST_HIP_RUNTIME
#include "backends/hip/hip_api.h"
#endif
#include "backends/hip/compiler.h"
#include "backends/hip/target.h"
#include "bench/workloads.h"
#include "codegen/c_family/gpu_program.h"
#include "frontend/capture.h"
#include "kiln/kiln.h"
#include "passes/pipeline.h"
#include "runtime/registry.h"
#include "testing/corpus.h"
#include "testing/reference.h"

namespace kiln {
namespace {

using testing::random_tensor;

struct Case {
  std::string name;
  std::vector<Tensor> outputs;
};

std::vector<Case> cases() {
  Tensor x = random_tensor({64, 300}, float32, 1), y = random_tensor({64, 300}, float32, 2);
  Tensor w = random_tensor({300, 48}, float32, 3), b = random_tensor({48}, float32, 4);
  Tensor img = random_tensor({2, 3, 17, 19}, float32, 5), ker = random_tensor({8, 3, 3, 3}, float32, 6);
  Tensor idx = from_vector(std::vector<int64_t>{3, 0, 63, -1, 7}, {5});
  Tensor h = random_tensor({64, 128}, float16, 7), bf = random_tensor({64, 128}, bfloat16, 8);
  std::vector<Case> c;
  c.push_back({"elementwise chain (W1-like)", {((x * 1.5 + y).tanh() - x.exp() * 0.25).sqrt()}});
  c.push_back({"W6 64-op chain", {bench::w6(random_tensor({4096}, float32, 9))}});
  c.push_back({"softmax rows", {softmax(x, -1)}});
  c.push_back({"layer norm", {layer_norm(x, random_tensor({300}, float32, 10), random_tensor({300}, float32, 11), 1e-5)}});
  c.push_back({"column and full reductions", {x.sum({0}), x.max({0, 1}), x.argmax(1)}});
  // Split, so that each pair is chained (passes/chain_reduce.h): tickets, fences, volatile partials.
  c.push_back({"split reductions, chained", {random_tensor({1 << 18}, float32, 15).sum(), random_tensor({16384, 64}, float32, 16).mean({0})}});
  c.push_back({"matmul + bias + gelu", {gelu(matmul(x, w) + b, false)}});
  c.push_back({"batched matmul", {matmul(random_tensor({4, 33, 20}, float32, 12), random_tensor({4, 20, 17}, float32, 13))}});
  c.push_back({"gather rows", {gather(x, 0, idx) * 2.0}});
  Tensor rows = expand(reshape(from_vector(std::vector<int64_t>{1, 5, 1}, {3, 1}), {3, 1}), {3, 300});
  c.push_back({"scatter add", {scatter(zeros({70, 300}), 0, rows, random_tensor({3, 300}, float32, 14), ScatterReduction::kAdd)}});
  ConvOptions co;
  co.padding = {{1, 1}, {1, 1}};
  c.push_back({"conv2d + relu", {relu(conv(img, ker, co))}});
  PoolOptions po;
  po.kernel = {2, 2};
  po.strides = {2, 2};
  c.push_back({"max pool", {max_pool(img, po)}});
  c.push_back({"f16 and bf16", {(h.cast(float32) * 3.0).cast(float16), (bf + bf).exp(), matmul(h, h.t())}});
  c.push_back({"int64 and bool", {(idx * 7 + 3).abs(), where(x > 0.0, x, y), (x > y).cast(int32).sum({1})}});
  return c;
}

// The bytes of an ELF code object: 64-bit, machine EM_AMDGPU (224).
void expect_amdgpu_elf(const std::string& module, const std::string& what) {
  ASSERT_GT(module.size(), 64u) << what;
  EXPECT_EQ(module.substr(0, 4), std::string("\x7f" "ELF")) << what;
  EXPECT_EQ(module[4], 2) << what << ": not a 64-bit ELF";
  uint16_t machine = 0;
  std::memcpy(&machine, module.data() + 18, 2);
  EXPECT_EQ(machine, 224) << what << ": not an AMDGPU code object";
}

void compile_all_for(const std::string& gfx) {
  const ir::TargetInfo target = runtime::hip::hip_target_info(gfx, 104);
  auto compiler = runtime::hip::HipCompiler::create(target);
  ASSERT_TRUE(compiler.ok()) << compiler.status();
  int kernels = 0;
  for (const Case& c : cases()) {
    std::vector<std::shared_ptr<runtime::Buffer>> bufs;
    ir::Graph g = detail::capture(c.outputs, &bufs);
    for (bool fusion : {true, false}) {
      const std::string what = absl::StrCat(c.name, fusion ? " (fused)" : " (unfused)", " for ", gfx);
      passes::Options opts;
      opts.fusion = fusion;
      auto planned = passes::compile_graph(g, target, opts);
      ASSERT_TRUE(planned.ok()) << what << ": " << planned.status();
      auto compiled = (*compiler)->compile(planned->program);
      ASSERT_TRUE(compiled.ok()) << what << ": " << compiled.status();
      EXPECT_EQ(compiled->backend, "hip");
      EXPECT_EQ(compiled->target_key, gfx);
      expect_amdgpu_elf(compiled->module, what);
      for (size_t i = 0; i < compiled->kernels.size(); ++i) {
        const runtime::CompiledKernel& k = compiled->kernels[i];
        ++kernels;
        // A twin (ir/kernel_twins.h) launches its family's first kernel's entry point.
        const std::string& entry = compiled->entry(i);
        EXPECT_NE(compiled->module.find(entry + ".kd"), std::string::npos) << what << ": no kernel descriptor for " << entry;
        EXPECT_LE(k.block[0] * k.block[1] * k.block[2], 1024u) << what;
      }
    }
  }
  std::printf("%d kernels compiled for %s with comgr %s\n", kernels, gfx.c_str(), runtime::hip::comgr_version().c_str());
}

TEST(HipCompile, KernelsCompileToCodeObjectsForGfx90a) { compile_all_for("gfx90a"); }
TEST(HipCompile, KernelsCompileToCodeObjectsForGfx908) { compile_all_for("gfx908"); }

TEST(HipCompile, WavefrontSizeFollowsTheProcessor) {
  EXPECT_EQ(runtime::hip::hip_target_info("gfx90a", 104).subgroup_size, 64);
  EXPECT_EQ(runtime::hip::hip_target_info("gfx1100", 96).subgroup_size, 32);
  auto p = runtime::target_profile("hip", "gfx942");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->parallelism, 304);
  EXPECT_EQ(runtime::target_profile("hip", "gfx123").status().code(), absl::StatusCode::kNotFound);
}

TEST(HipCompile, ProcessorsComgrCannotTargetAreRefusedByName) {
  auto compiler = runtime::make_compiler("hip", runtime::hip::hip_target_info("gfx942", 304));
  ASSERT_TRUE(compiler.ok()) << compiler.status();
  std::vector<std::shared_ptr<runtime::Buffer>> bufs;
  auto planned = passes::compile_graph(detail::capture({random_tensor({8}, float32, 1) * 2.0}, &bufs),
                                       (*compiler)->target(), passes::Options{});
  ASSERT_TRUE(planned.ok()) << planned.status();
  auto c = (*compiler)->compile(planned->program);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(c.status().message().find("cannot compile for gfx942"), std::string::npos) << c.status();
  EXPECT_NE(c.status().message().find("gfx90a"), std::string::npos) << c.status();
  EXPECT_EQ(runtime::make_compiler("hip", runtime::hip::hip_target_info("sm_90", 1)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(HipCompile, ARejectedSourceIsAnInternalErrorWithComgrsLog) {
  auto bin = runtime::hip::comgr_compile("extern \"C\" __attribute__((global)) void k(float* a) { a[0] = undefined_name; }\n",
                                         "gfx90a");
  ASSERT_FALSE(bin.ok());
  EXPECT_EQ(bin.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(bin.status().message().find("undefined_name"), std::string::npos) << bin.status();
}

// The HIP runtime is loaded by dlopen: on a machine without an AMD GPU the device says so (and
// does not even initialize ROCm); where Debian's libamdhip64 is installed, every entry point kiln
// uses is found in it by name.
TEST(HipRuntime, WithoutAnAmdGpuTheDeviceSaysWhy) {
  if (std::filesystem::exists("/dev/kfd")) GTEST_SKIP() << "this machine has the amdgpu kernel driver";
  auto d = runtime::get_device("hip");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(d.status().message().find("hip: no AMD GPU (no /dev/kfd"), std::string::npos) << d.status();
}

#ifdef KILN_TEST_HIP_RUNTIME
TEST(HipRuntime, EveryEntryPointIsInTheInstalledRuntime) {
  auto api = runtime::hip::load_api();
  if (!api.ok()) {
    EXPECT_EQ(api.status().code(), absl::StatusCode::kUnavailable);
    EXPECT_NE(api.status().message().find("no HIP runtime"), std::string::npos) << api.status();
    GTEST_SKIP() << api.status();
  }
  EXPECT_NE((*api)->library.find("libamdhip64.so"), std::string::npos);
  EXPECT_NE((*api)->hipGetDeviceProperties, nullptr);
  EXPECT_NE((*api)->hipGraphExecKernelNodeSetParams, nullptr);
  EXPECT_STREQ((*api)->hipGetErrorName(hipErrorNoDevice), "hipErrorNoDevice");
  absl::Status s = runtime::hip::hip_check(**api, hipErrorOutOfMemory, "allocating");
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("hip: allocating failed: hipErrorOutOfMemory"), std::string::npos) << s;
}
#endif

// Every graph the op, fusion and convolution suites capture (ctest's cuda_corpus fixture dumps
// them and passes the folders in $KILN_CUDA_CORPUS), fused and unfused, compiles for gfx90a;
// each distinct kernel is compiled once (testing::unseen_kernels).
TEST(HipKernels, OpAndFusionSuitesCompileForGfx90a) {
  const char* dirs = std::getenv("KILN_CUDA_CORPUS");
  if (!dirs || !*dirs) GTEST_SKIP() << "KILN_CUDA_CORPUS is not set (ctest sets it after the cuda_corpus fixture)";
  const ir::TargetInfo target = runtime::hip::hip_target_info("gfx90a", 104);
  std::set<uint64_t> seen;
  std::vector<std::string> failures;
  int graphs = 0, modules = 0, kernels = 0;
  for (const testing::CorpusGraph& c : testing::corpus_graphs(dirs, &failures)) {
    ++graphs;
    for (bool fusion : {true, false}) {
      passes::Options opts;
      opts.fusion = fusion;
      const std::string what = absl::StrCat(c.path, fusion ? " (fused)" : " (unfused)");
      auto planned = passes::compile_graph(c.graph, target, opts);
      if (!planned.ok()) {
        failures.push_back(absl::StrCat(what, ": passes failed: ", planned.status().message()));
        continue;
      }
      auto r = codegen::gpu::render(planned->program, codegen::gpu::Dialect::kHip, target);
      if (!r.ok()) {
        failures.push_back(absl::StrCat(what, ": render failed: ", r.status().message()));
        continue;
      }
      const size_t before = seen.size();
      const std::string source = testing::unseen_kernels(*r, &seen);
      if (source.empty()) continue;
      ++modules;
      kernels += int(seen.size() - before);
      auto bin = runtime::hip::comgr_compile(source, "gfx90a");
      if (!bin.ok()) failures.push_back(absl::StrCat(what, ": ", bin.status().message()));
    }
  }
  ASSERT_GT(graphs, 0) << "no captured graphs under " << dirs;
  std::printf("%d graphs, %d distinct kernels compiled in %d modules for gfx90a\n", graphs, kernels, modules);
  std::string first;
  for (size_t i = 0; i < failures.size() && i < 3; ++i) absl::StrAppend(&first, "\n---- ", failures[i].substr(0, 3000));
  EXPECT_TRUE(failures.empty()) << failures.size() << " failure(s); the first ones:" << first;
}

}  // namespace
}  // namespace kiln

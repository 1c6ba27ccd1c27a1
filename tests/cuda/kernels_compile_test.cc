// Without a GPU: every kernel that kiln generates for CUDA compiles with NVRTC to a cubin for
// sm_90 (NVRTC assembles its own PTX for the cubin; the smaller suites also pass the PTX to the
// toolkit's ptxas, which kilnc's PTX-for-newer-GPUs path relies on). The graphs come from
//   - the benchmark workloads (BENCH.md W1-W6, at sizes that keep their kernel strategies), and
//   - the op and fusion suites: ctest first runs them with KILN_DUMP_DIR set (fixture
//     cuda_corpus) and passes the dump folders in $KILN_CUDA_CORPUS; every captured graph
//     (gNNN_00_input.txt) is compiled here for an H100-like target, fused and unfused.
#include <gtest/gtest.h>

#include <chrono>
#include <deque>
#include <future>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "backends/cuda/nvrtc.h"
#include "backends/cuda/target.h"
#include "codegen/c_family/gpu_program.h"
#include "cuda/ptxas.h"
#include "frontend/capture.h"
#include "kiln/kiln.h"
#include "passes/pipeline.h"
#include "testing/corpus.h"
#include "testing/reference.h"

namespace kiln {
namespace {

struct Case {
  std::string name;
  ir::Graph graph;
};

struct Totals {
  int graphs = 0, kernels = 0, modules = 0, distinct = 0;
  bool use_ptxas = true;  // also assemble each module's PTX with the toolkit's ptxas
  std::vector<std::string> failures;
  // ptxas runs in its own process while the next module compiles: (what, ok, log).
  std::deque<std::future<std::string>> assembling;

  void assemble(const std::string& what, std::string ptx, std::string arch) {
    if (!use_ptxas || !testing_ptxas::available()) return;
    while (assembling.size() >= 4) collect_one();
    assembling.push_back(std::async(std::launch::async, [what, ptx = std::move(ptx), arch] {
      std::string log;
      if (testing_ptxas::assemble(ptx, arch, &log)) return std::string();
      return absl::StrCat(what, ": ptxas -arch=", arch, " rejected the PTX:\n", log);
    }));
  }
  void collect_one() {
    std::string f = assembling.front().get();
    assembling.pop_front();
    if (!f.empty()) failures.push_back(std::move(f));
  }
  void finish() {
    while (!assembling.empty()) collect_one();
  }
};

// Compiles one graph for an H100 (sm_90, 132 SMs, 227 KiB shared memory), or an A100 (sm_80,
// 108 SMs, 163 KiB); a kernel already compiled (the same kernel from another graph or another
// op of an unfused chain) is not compiled again (testing::unseen_kernels). `sources` (when given)
// receives each fused module's whole source.
void check(const Case& c, Totals* t, std::set<uint64_t>* seen, int cc = 90, std::vector<std::string>* sources = nullptr) {
  const ir::TargetInfo target =
      cc == 80 ? runtime::cuda::cuda_target_info(108, 166912, 80) : runtime::cuda::cuda_target_info(132, 232448);
  ++t->graphs;
  for (bool fusion : {true, false}) {
    passes::Options opts;
    opts.fusion = fusion;
    const std::string what = absl::StrCat(c.name, fusion ? " (fused)" : " (unfused)");
    auto compiled = passes::compile_graph(c.graph, target, opts);
    if (!compiled.ok()) {
      t->failures.push_back(absl::StrCat(what, ": passes failed: ", compiled.status().message()));
      continue;
    }
    auto r = codegen::gpu::render(compiled->program, codegen::gpu::Dialect::kCuda, target);
    if (!r.ok()) {
      t->failures.push_back(absl::StrCat(what, ": render failed: ", r.status().message()));
      continue;
    }
    t->kernels += int(r->kernels.size());
    if (sources && fusion) sources->push_back(r->module_source);
    const size_t before = seen->size();
    const std::string source = testing::unseen_kernels(*r, seen);
    if (source.empty()) continue;
    ++t->modules;
    t->distinct += int(seen->size() - before);
    // Modules with Hopper-only code (the sm_90a contraction path) compile and assemble for sm_90a.
    auto bin = runtime::cuda::nvrtc_compile(source, cc, /*keep_ptx=*/true, r->arch_specific);
    if (!bin.ok()) {
      t->failures.push_back(absl::StrCat(what, ": ", bin.status().message(), "\n", source));
      continue;
    }
    t->assemble(what, std::move(bin->ptx), r->arch_specific ? "sm_90a" : absl::StrCat("sm_", cc));
  }
}

void report(Totals& t, const char* what, const char* arch = "sm_90") {
  t.finish();
  std::printf("%s: %d graphs, %d kernels, %d distinct kernels compiled in %d modules for %s%s\n", what, t.graphs,
              t.kernels, t.distinct, t.modules, arch,
              !t.use_ptxas                   ? ""
              : testing_ptxas::available() ? " and assembled by ptxas"
                                           : " (no ptxas: PTX not assembled)");
  std::string first;
  for (size_t i = 0; i < t.failures.size() && i < 5; ++i) absl::StrAppend(&first, "\n---- ", t.failures[i]);
  EXPECT_TRUE(t.failures.empty()) << t.failures.size() << " failure(s); the first ones:" << first;
}

Case capture(const std::string& name, const std::vector<Tensor>& outs) {
  std::vector<std::shared_ptr<runtime::Buffer>> bufs;
  return {name, detail::capture(outs, &bufs)};
}

// Fused attention (W9-like, cut down): causal and not, head dims 64 and 128, bf16 and f16, a
// bias, ragged lengths, and the written-out form the fuser recognizes.
std::vector<Case> attention_cases() {
  using testing::random_tensor;
  std::vector<Case> cases;
  for (int64_t D : {64, 128})
    for (DType dt : {bfloat16, float16}) {
      Tensor q = random_tensor({2, 4, 200, D}, dt, 20), k = random_tensor({2, 4, 300, D}, dt, 21),
             v = random_tensor({2, 4, 300, D}, dt, 22);
      AttentionOptions causal;
      causal.causal = true;
      AttentionOptions bias;
      bias.mask = random_tensor({200, 300}, float32, 23);
      cases.push_back(capture(absl::StrCat("W9 attention D=", D, " ", dtype_name(dt)), {scaled_dot_product_attention(q, k, v)}));
      cases.push_back(capture(absl::StrCat("W9 causal attention D=", D), {scaled_dot_product_attention(q, k, v, causal)}));
      cases.push_back(capture(absl::StrCat("W9 attention with bias D=", D), {scaled_dot_product_attention(q, k, v, bias) * 2.0}));
      Tensor s = matmul(q, k.transpose(-2, -1)).cast(float32) * 0.125;
      cases.push_back(capture(absl::StrCat("W9 written-out attention D=", D), {matmul(softmax(s, -1).cast(dt), v)}));
    }
  return cases;
}

// BENCH.md's workloads; sizes are cut down where the full ones would only cost host memory.
std::vector<Case> workloads() {
  using testing::random_tensor;
  std::vector<Case> cases;
  {
    Tensor x = random_tensor({1 << 20}, float32, 1), a = random_tensor({1 << 20}, float32, 2),
           b = random_tensor({1 << 20}, float32, 3);
    cases.push_back(capture("W1 elementwise chain", {(x * a + b).tanh() * x.sigmoid() + (-b.abs()).exp() * 0.5 - x * x}));
  }
  cases.push_back(capture("W2 row softmax", {random_tensor({512, 8192}, float32, 4).softmax(1)}));
  {
    Tensor x = random_tensor({1024, 4096}, float32, 5), w = random_tensor({4096}, float32, 6),
           b = random_tensor({4096}, float32, 7);
    cases.push_back(capture("W3 layer_norm", {layer_norm(x, w, b, 1e-5)}));
  }
  cases.push_back(capture("W4a full sum", {random_tensor({1 << 22}, float32, 8).sum()}));
  cases.push_back(capture("W4b mean over axis 0", {random_tensor({1024, 4096}, float32, 9).mean({0})}));
  {
    Tensor x = random_tensor({256, 512}, bfloat16, 10), w1 = random_tensor({512, 512}, bfloat16, 11),
           b1 = random_tensor({512}, bfloat16, 12), w2 = random_tensor({512, 512}, bfloat16, 13),
           b2 = random_tensor({512}, bfloat16, 14);
    cases.push_back(capture("W5 bf16 MLP", {matmul(gelu(matmul(x, w1) + b1, true), w2) + b2}));
  }
  {
    Tensor x = random_tensor({4096}, float32, 15);
    for (int i = 0; i < 64; ++i) x = i % 2 == 0 ? x * 1.0001 + 0.001 : x.tanh();
    cases.push_back(capture("W6 64 dependent ops", {x}));
  }
  for (const Case& c : attention_cases()) cases.push_back(c);
  return cases;
}

TEST(CudaKernels, BenchmarkWorkloadsCompileForSm90) {
  // The workloads' inputs need some device to live on (the CPU here, the GPU in a bundle).
  try {
    (void)default_device();
  } catch (const Error& e) {
    GTEST_SKIP() << "no default device to hold the workloads' inputs: " << e.what();
  }
  Totals t;
  std::set<uint64_t> seen;
  for (const Case& c : workloads()) check(c, &t, &seen);
  report(t, "workloads");
}

TEST(CudaKernels, AttentionCompilesForSm80) {
  try {
    (void)default_device();
  } catch (const Error& e) {
    GTEST_SKIP() << "no default device to hold the inputs: " << e.what();
  }
  Totals t;
  std::set<uint64_t> seen;
  for (const Case& c : attention_cases()) check(c, &t, &seen, 80);
  report(t, "attention", "sm_80");
}

// On sm_90 attention takes the Hopper kernel (TMA + wgmma) wherever the copy engine can fetch q, k
// and v, in every consumer schedule; an operand it cannot fetch (rows 65 elements apart, starting
// at element 1) keeps the mma.sync kernel, which still compiles; sm_80 never sees wgmma.
TEST(CudaKernels, Sm90AttentionTakesTheWgmmaKernelWhereTheCopyEngineCanFetch) {
  using testing::random_tensor;
  try {
    (void)default_device();
  } catch (const Error& e) {
    GTEST_SKIP() << "no default device to hold the inputs: " << e.what();
  }
  Tensor q = random_tensor({2, 2, 150, 64}, bfloat16, 50), k = random_tensor({2, 1, 260, 64}, bfloat16, 51),
         v = random_tensor({2, 1, 260, 64}, bfloat16, 52);
  AttentionOptions causal;
  causal.causal = true;
  const Case fast = capture("plain q/k/v, k and v shared by 2 heads", {scaled_dot_product_attention(q, k, v, causal)});
  Tensor q_odd = random_tensor({2, 2, 150, 65}, bfloat16, 53).slice(-1, 1, 65);
  const Case slow = capture("q rows 65 elements apart", {scaled_dot_product_attention(q_odd, k, v)});
  const char* wgmma = "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16";
  const char* mma = "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32";
  for (const char* schedule : {"plain", "pipelined", "pingpong"}) {
    ::setenv("KILN_CUDA_SM90_ATTENTION_SCHEDULE", schedule, 1);
    Totals t;
    std::set<uint64_t> seen;
    std::vector<std::string> sources;
    check(fast, &t, &seen, 90, &sources);
    ASSERT_EQ(sources.size(), 1u);
    EXPECT_NE(sources[0].find(wgmma), std::string::npos) << schedule;
    EXPECT_NE(sources[0].find("cp.async.bulk.tensor"), std::string::npos) << schedule;
    EXPECT_EQ(sources[0].find(mma), std::string::npos) << schedule;
    EXPECT_EQ(sources[0].find("bar.arrive") != std::string::npos, std::string(schedule) == "pingpong") << schedule;
    report(t, absl::StrCat("sm_90 attention, ", schedule, " schedule").c_str(), "sm_90a");
  }
  ::unsetenv("KILN_CUDA_SM90_ATTENTION_SCHEDULE");
  {  // Clusters of two blocks sharing k/v tiles, where a head has a multiple of 4 query tiles.
    Tensor q4 = random_tensor({2, 2, 512, 64}, bfloat16, 54);
    ::setenv("KILN_CUDA_SM90_ATTENTION_CLUSTER", "2", 1);
    for (bool many : {true, false}) {
      const Case c = capture("clustered", {scaled_dot_product_attention(many ? q4 : q, k, v, causal)});
      Totals t;
      std::set<uint64_t> seen;
      std::vector<std::string> sources;
      check(c, &t, &seen, 90, &sources);
      ASSERT_EQ(sources.size(), 1u);
      EXPECT_EQ(sources[0].find(", (unsigned short)3);") != std::string::npos, many);  // a multicast copy
      EXPECT_EQ(sources[0].find("__cluster_dims__(2") != std::string::npos, many);
      report(t, "sm_90 attention, clusters of 2", "sm_90a");
    }
    ::unsetenv("KILN_CUDA_SM90_ATTENTION_CLUSTER");
  }
  for (int cc : {90, 80}) {
    Totals t;
    std::set<uint64_t> seen;
    std::vector<std::string> sources;
    check(slow, &t, &seen, cc, &sources);
    if (cc == 80) check(fast, &t, &seen, cc, &sources);
    for (const std::string& src : sources) {
      EXPECT_EQ(src.find("wgmma"), std::string::npos) << "sm_" << cc;
      EXPECT_NE(src.find(mma), std::string::npos) << "sm_" << cc;
    }
    report(t, "attention on the mma.sync kernel", cc == 80 ? "sm_80" : "sm_90");
  }
}

// A bf16 tanh (GELU's tanh form in a bf16 MLP) is the one-instruction tanh.approx.f32 on sm_75+:
// its error is a quarter of the bf16 rounding after it. f32 and f16 keep tanhf.
TEST(CudaKernels, Bf16TanhIsTheHardwareApproximation) {
  using testing::random_tensor;
  try {
    (void)default_device();
  } catch (const Error& e) {
    GTEST_SKIP() << "no default device to hold the inputs: " << e.what();
  }
  for (DType dt : {bfloat16, float16, float32}) {
    const Case c = capture(absl::StrCat("gelu(tanh) in ", dtype_name(dt)), {gelu(random_tensor({1000}, dt, 60), true)});
    Totals t;
    std::set<uint64_t> seen;
    std::vector<std::string> sources;
    check(c, &t, &seen, 90, &sources);
    ASSERT_EQ(sources.size(), 1u);
    // Calls beyond the helpers' own text (the preamble defines kiln_tanh_bf with tanhf as its
    // fallback before sm_75).
    auto count = [&](const std::string& what) {
      int n = 0;
      for (size_t at = sources[0].find(what); at != std::string::npos; at = sources[0].find(what, at + 1)) ++n;
      return n;
    };
    EXPECT_EQ(count("kiln_tanh_bf(") > 1, dt == bfloat16) << sources[0];
    EXPECT_EQ(count("tanhf(") > 1, dt != bfloat16) << sources[0];
    report(t, "tanh", "sm_90");
  }
}

// Float32 matmuls allowed TF32 (kiln::MatmulPrecision::kTf32): ragged sizes, batched with a
// transposed operand, an epilogue; each takes the m16n8k8 TF32 tensor-core kernel on sm_80 and
// sm_90 (on sm_90 the batched one, both operands k-major, takes Hopper's wgmma in its TF32 form)
// and compiles and assembles; the same matmul left exact does not.
TEST(CudaKernels, Tf32MatmulsTakeTheTensorCoreKernel) {
  using testing::random_tensor;
  try {
    (void)default_device();
  } catch (const Error& e) {
    GTEST_SKIP() << "no default device to hold the inputs: " << e.what();
  }
  const MatmulPrecision saved = matmul_precision();
  Tensor a = random_tensor({200, 70}, float32, 40), b = random_tensor({70, 300}, float32, 41);
  Tensor x = random_tensor({3, 64, 48}, float32, 42), y = random_tensor({3, 80, 48}, float32, 43);
  Tensor bias = random_tensor({300}, float32, 44);
  Case exact = capture("exact f32 matmul", {matmul(a, b)});
  set_matmul_precision(MatmulPrecision::kTf32);
  std::vector<Case> cases = {capture("tf32 ragged", {matmul(a, b)}),
                             capture("tf32 batched, transposed rhs", {matmul(x, y.transpose(-1, -2))}),
                             capture("tf32 with bias and relu", {relu(matmul(a, b) + bias)})};
  set_matmul_precision(saved);
  const std::string tf32_mma = "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32";
  for (int cc : {80, 90}) {
    Totals t;
    std::set<uint64_t> seen;
    for (const Case& c : cases) {
      std::vector<std::string> sources;
      check(c, &t, &seen, cc, &sources);
      ASSERT_EQ(sources.size(), 1u) << c.name;
      if (cc == 90 && c.name == "tf32 batched, transposed rhs") {  // both operands k-major: Hopper's wgmma
        EXPECT_NE(sources[0].find("k8.f32.tf32.tf32"), std::string::npos) << sources[0];
        continue;
      }
      EXPECT_NE(sources[0].find(tf32_mma), std::string::npos) << c.name << " for sm_" << cc << ":\n" << sources[0];
      EXPECT_NE(sources[0].find("cvt.rna.tf32.f32"), std::string::npos) << c.name;
    }
    std::vector<std::string> sources;
    check(exact, &t, &seen, cc, &sources);
    ASSERT_EQ(sources.size(), 1u);
    EXPECT_EQ(sources[0].find("tf32"), std::string::npos) << sources[0];
    report(t, "tf32 matmuls", cc == 80 ? "sm_80" : "sm_90");
  }
}

TEST(CudaKernels, OpAndFusionSuitesCompileForSm90) {
  const char* dirs = std::getenv("KILN_CUDA_CORPUS");
  if (!dirs || !*dirs) GTEST_SKIP() << "KILN_CUDA_CORPUS is not set (ctest sets it after the cuda_corpus fixture)";
  auto t0 = std::chrono::steady_clock::now();
  Totals t;
  t.use_ptxas = false;  // NVRTC's cubin already assembles each module's PTX; the toolkit's ptxas would double the time
  std::set<uint64_t> seen;
  int files = 0;
  for (testing::CorpusGraph& c : testing::corpus_graphs(dirs, &t.failures)) {
    ++files;
    check({c.path, std::move(c.graph)}, &t, &seen);
  }
  ASSERT_GT(files, 0) << "no captured graphs under " << dirs;
  report(t, "op and fusion suites");
  std::printf("took %.1f s\n", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
}

}  // namespace
}  // namespace kiln

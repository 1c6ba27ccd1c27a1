// Without a GPU: the code of a graph marked for a symbolic dimension (passes/symbolic.h) is the
// same text at every size (the CUDA module and each GLSL shader), takes the tensor-core kernels
// that read a symbolic m (sm_90a, sm_80, Vulkan cooperative matrices) or the portable tiled one,
// and compiles with NVRTC (and the toolkit's ptxas).
#include <gtest/gtest.h>

#include "absl/strings/str_cat.h"
#include "backends/cuda/nvrtc.h"
#include "backends/cuda/target.h"
#include "codegen/c_family/gpu_program.h"
#include "cuda/ptxas.h"
#include "frontend/capture.h"
#include "kiln/kiln.h"
#include "passes/pipeline.h"
#include "passes/symbolic.h"
#include "testing/reference.h"
#include "testing/vulkan_target.h"

namespace kiln {
namespace {

using testing::random_tensor;

// The MLP of W11 at batch n (d 256 here), in `dt`, with a row softmax and a layer norm after it.
ir::Graph mlp(int64_t n, DType dt) {
  Tensor x = random_tensor({n, 256}, dt, 1), w1 = random_tensor({256, 512}, dt, 2), b1 = random_tensor({512}, dt, 3);
  Tensor w2 = random_tensor({512, 256}, dt, 4), b2 = random_tensor({256}, dt, 5);
  Tensor y = matmul(gelu(matmul(x, w1) + b1, true), w2) + b2 + x;
  Tensor g = random_tensor({256}, dt, 6), b = random_tensor({256}, dt, 7);
  std::vector<std::shared_ptr<runtime::Buffer>> bufs;
  return detail::capture({layer_norm(y, g, b, 1e-5), softmax(y.cast(float32), -1)}, &bufs);
}

// Causal attention over a batch of n (2 heads, 192 queries and keys of 64).
ir::Graph attention(int64_t n, DType dt) {
  Tensor q = random_tensor({n, 2, 192, 64}, dt, 1, -1, 1), k = random_tensor({n, 2, 192, 64}, dt, 2, -1, 1);
  Tensor v = random_tensor({n, 2, 192, 64}, dt, 3, -1, 1);
  AttentionOptions o;
  o.causal = true;
  std::vector<std::shared_ptr<runtime::Buffer>> bufs;
  return detail::capture({scaled_dot_product_attention(q, k, v, o)}, &bufs);
}

using GraphOf = ir::Graph (*)(int64_t, DType);

ir::Program plan(int64_t n, DType dt, const ir::TargetInfo& t, GraphOf graph_of = mlp) {
  passes::Options opts;
  opts.split = false;  // as symbolic compiles plan
  auto c = passes::compile_graph(graph_of(n, dt), t, opts);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? std::move(c->program) : ir::Program{};
}

// `strategy`: what the strategies of the kernels whose strategy names `kind` say.
void check_dialect(codegen::gpu::Dialect d, const ir::TargetInfo& target, DType dt, const std::string& strategy,
                   GraphOf graph_of = mlp, const std::string& kind = "contraction") {
  const auto tmpl = passes::derive_template(plan(300, dt, target, graph_of), {300}, {plan(301, dt, target, graph_of)}, {301});
  ASSERT_TRUE(tmpl.ok()) << tmpl.status();
  EXPECT_GT(tmpl->marked(), 0);
  std::vector<std::string> texts;
  for (int64_t n : {2, 7, 300, 1000, 4097}) {
    ir::Program p = plan(n, dt, target, graph_of);
    passes::apply_template(*tmpl, {n}, &p);
    bool marked = false;
    for (const ir::Kernel& k : p.kernels) marked = marked || k.any_symbolic();
    EXPECT_TRUE(marked) << n;
    auto r = codegen::gpu::render(p, d, target);
    ASSERT_TRUE(r.ok()) << r.status();
    std::string text;
    for (const auto& k : r->kernels) {
      if (k.strategy.find(kind) != std::string::npos) {
        EXPECT_NE(k.strategy.find(strategy), std::string::npos) << k.strategy;
      }
      absl::StrAppend(&text, k.source, "\n");
    }
    if (d == codegen::gpu::Dialect::kCuda) text = r->module_source;
    texts.push_back(text);
    if (n == 300 && d == codegen::gpu::Dialect::kCuda) {
      const int cc = target.compute_capability;
      auto bin = runtime::cuda::nvrtc_compile(r->module_source, cc, /*keep_ptx=*/true, r->arch_specific);
      ASSERT_TRUE(bin.ok()) << bin.status() << "\n" << r->module_source;
      std::string log;
      if (testing_ptxas::available()) {
        EXPECT_TRUE(testing_ptxas::assemble(bin->ptx, absl::StrCat("sm_", cc, r->arch_specific ? "a" : ""), &log)) << log;
      }
    }
  }
  for (size_t i = 1; i < texts.size(); ++i) EXPECT_EQ(texts[i], texts[0]) << "size #" << i << " renders other code";
}

TEST(SymbolicKernels, CudaModuleIsOneTextForEverySizeAndCompiles) {
  const ir::TargetInfo h100 = runtime::cuda::cuda_target_info(132, 232448), a100 = runtime::cuda::cuda_target_info(108, 166912, 80);
  check_dialect(codegen::gpu::Dialect::kCuda, h100, float32, "shared-memory k slices");
  check_dialect(codegen::gpu::Dialect::kCuda, h100, bfloat16, "wgmma");  // the Hopper GEMM
  check_dialect(codegen::gpu::Dialect::kCuda, a100, bfloat16, "mma.sync m16n8k16");  // cp.async + mma.sync
}

TEST(SymbolicKernels, AttentionKernelsReadABatchSize) {
  // The fused attention kernels' tile loops read a symbolic batch: one text for every batch size.
  const ir::TargetInfo h100 = runtime::cuda::cuda_target_info(132, 232448), a100 = runtime::cuda::cuda_target_info(108, 166912, 80);
  check_dialect(codegen::gpu::Dialect::kCuda, h100, bfloat16, "wgmma", attention, "attention");
  check_dialect(codegen::gpu::Dialect::kCuda, a100, bfloat16, "mma.sync", attention, "attention");
}

TEST(SymbolicKernels, GlslShadersAreOneTextForEverySize) {
  const ir::TargetInfo t = testing::handwritten_vulkan_target();
  check_dialect(codegen::gpu::Dialect::kGlsl, t, float32, "shared-memory k slices");
  // f16 on a GPU with cooperative matrices: the tensor-core kernel.
  check_dialect(codegen::gpu::Dialect::kGlsl, testing::handwritten_vulkan_target(16), float16, "cooperative");
}

}  // namespace
}  // namespace kiln

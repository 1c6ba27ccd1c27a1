// segment_reduce compiles for CUDA without a GPU under each thread mapping (codegen/c_family/
// segment.cc): NVRTC and ptxas accept the work-queue kernel with its module global, the kernels
// say which mapping they took, and two queue kernels of one program keep a queue each (never
// twins). (Values on the GPU: segment_test on cuda under each KILN_GPU_SEGMENTS.)
#include <gtest/gtest.h>

#include <cstdlib>

#include "backends/cuda/target.h"
#include "ir/graph.h"
#include "passes/pipeline.h"
#include "runtime/compiled_program.h"
#include "runtime/registry.h"

namespace kiln::runtime {
namespace {

// Two segment sums of the same shapes over different data and offsets (one program, two kernels
// whose code is the same).
const char* kGraph = R"(graph {
  %0 = input 0 : f32[100,2]
  %1 = input 1 : i64[9]
  %2 = input 2 : f32[100,2]
  %3 = input 3 : i64[9]
  %4 = segment_reduce %0, %1 mode=1 : f32[8,2]
  %5 = segment_reduce %2, %3 mode=1 : f32[8,2]
  output %4, %5
}
)";

struct Compiled {
  CompiledProgram c;
  std::vector<std::string> strategies;
};

Compiled compile_with(const char* mapping) {
  if (mapping) setenv("KILN_GPU_SEGMENTS", mapping, 1);
  else unsetenv("KILN_GPU_SEGMENTS");
  Compiled out;
  auto g = ir::parse(kGraph);
  EXPECT_TRUE(g.ok()) << g.status();
  if (!g.ok()) return out;
  const ir::TargetInfo h100 = cuda::cuda_target_info(132, 232448, 90);
  auto planned = passes::compile_graph(*g, h100, passes::Options{});
  EXPECT_TRUE(planned.ok()) << planned.status();
  auto compiler = make_compiler("cuda", h100);
  EXPECT_TRUE(compiler.ok()) << compiler.status();
  auto c = (*compiler)->compile(planned->program);
  unsetenv("KILN_GPU_SEGMENTS");
  EXPECT_TRUE(c.ok()) << c.status();
  if (!c.ok()) return out;
  out.c = *std::move(c);
  for (const CompiledKernel& k : out.c.kernels) out.strategies.push_back(k.strategy);
  return out;
}

TEST(CudaSegments, TextRoundTrip) {
  auto g = ir::parse(kGraph);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(ir::print(*g), kGraph);
}

// Narrow rows take the work queue by default: one module global per kernel, never a twin.
TEST(CudaSegments, QueueKernelsCompileWithAQueueEach) {
  Compiled d = compile_with(nullptr);
  ASSERT_EQ(d.c.kernels.size(), 2u);
  EXPECT_FALSE(d.c.module.empty());
  for (size_t i = 0; i < 2; ++i) {
    EXPECT_NE(d.strategies[i].find("work queue, a lane per short segment, the warp per long one (8 segments of 2 columns)"),
              std::string::npos)
        << d.strategies[i];
    EXPECT_EQ(d.c.kernels[i].twin, -1);
    // The queue is a global of the module (its symbol is in the cubin).
    EXPECT_NE(d.c.module.find(d.c.kernels[i].name + "_queue"), std::string::npos);
  }
}

TEST(CudaSegments, EveryMappingCompiles) {
  Compiled b = compile_with("block");
  ASSERT_EQ(b.strategies.size(), 2u);
  EXPECT_NE(b.strategies[0].find("a workgroup per segment"), std::string::npos) << b.strategies[0];
  EXPECT_FALSE(b.c.module.empty());
  Compiled t = compile_with("thread");
  ASSERT_EQ(t.strategies.size(), 2u);
  EXPECT_EQ(t.strategies[0], "segments: one thread per output walks its segment");
  // Without a queue, the same code is one function called with two sets of buffers.
  EXPECT_EQ(t.c.kernels[1].twin, 0);
}

}  // namespace
}  // namespace kiln::runtime

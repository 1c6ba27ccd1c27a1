// Loops and branches compile for CUDA without a GPU: the module of a program with control steps
// holds the gate kernels that steer its conditional graph nodes (backends/cuda/control_gates.h),
// NVRTC and ptxas accept their device-runtime call, and the plan survives serialization with its
// markers. (Values on the GPU: control_test on cuda.)
#include <gtest/gtest.h>

#include "backends/cuda/control_gates.h"
#include "backends/cuda/target.h"
#include "ir/graph.h"
#include "passes/pipeline.h"
#include "runtime/compiled_program.h"
#include "runtime/registry.h"

namespace kiln::runtime {
namespace {

// while (sum(x) < 100) x = x * 2 + 1, at most 50 trips; then if (x[0] > 10) y = x - 1 else y = x + 1.
const char* kGraph = R"(graph {
  %0 = input 0 : f32[4]
  %1 = while %0 carried=1 max_trips=50 : bool[]
    cond graph {
      %0 = input 0 : f32[4]
      %1 = reduce_sum %0 axes=[0] : f32[1]
      %2 = reshape %1 : f32[]
      %3 = const 1e+02 : f32[]
      %4 = lt %2, %3 : bool[]
      output %4
    }
    body graph {
      %0 = input 0 : f32[4]
      %1 = const 2 : f32[4]
      %2 = mul %0, %1 : f32[4]
      %3 = const 1 : f32[4]
      %4 = add %2, %3 : f32[4]
      output %4
    }
  %2 = result %1 index=0 : f32[4]
  %3 = slice %2 start_step=[0,1] : f32[1]
  %4 = reshape %3 : f32[]
  %5 = const 1e+01 : f32[]
  %6 = lt %5, %4 : bool[]
  %7 = if %6, %2 results=1 : bool[]
    then graph {
      %0 = input 0 : f32[4]
      %1 = const 1 : f32[4]
      %2 = sub %0, %1 : f32[4]
      output %2
    }
    else graph {
      %0 = input 0 : f32[4]
      %1 = const 1 : f32[4]
      %2 = add %0, %1 : f32[4]
      output %2
    }
  %8 = result %7 index=0 : f32[4]
  output %8
}
)";

TEST(CudaControl, GateKernelsCompileIntoTheModule) {
  auto g = ir::parse(kGraph);
  ASSERT_TRUE(g.ok()) << g.status();
  EXPECT_EQ(ir::print(*g), kGraph);  // the text round trip, regions included
  const ir::TargetInfo h100 = cuda::cuda_target_info(132, 232448, 90);
  auto planned = passes::compile_graph(*g, h100, passes::Options{});
  ASSERT_TRUE(planned.ok()) << planned.status();
  const ir::Program& p = planned->program;
  ASSERT_TRUE(p.has_control());
  int whiles = 0, ifs = 0, elses = 0, ends = 0;
  for (const ir::Step& s : p.steps) {
    whiles += s.kind == ir::StepKind::kWhile;
    ifs += s.kind == ir::StepKind::kIf;
    elses += s.kind == ir::StepKind::kElse;
    ends += s.kind == ir::StepKind::kEnd;
    if (s.kind == ir::StepKind::kWhile) {
      EXPECT_EQ(s.max_trips, 50);
    }
  }
  EXPECT_EQ(whiles, 1);
  EXPECT_EQ(ifs, 1);
  EXPECT_EQ(elses, 1);
  EXPECT_EQ(ends, 2);
  auto compiler = make_compiler("cuda", h100);
  ASSERT_TRUE(compiler.ok()) << compiler.status();
  auto c = (*compiler)->compile(p);
  ASSERT_TRUE(c.ok()) << c.status();
  // NVRTC made a cubin (ptxas resolved cudaGraphSetConditional) holding both gates.
  EXPECT_FALSE(c->module.empty());
  EXPECT_NE(c->module.find(cuda::kLoopGate), std::string::npos);
  EXPECT_NE(c->module.find(cuda::kBranchGate), std::string::npos);
  EXPECT_NE(c->portable_module.find("cudaGraphSetConditional"), std::string::npos);
  auto back = deserialize(serialize(*c));
  ASSERT_TRUE(back.ok()) << back.status();
  ASSERT_EQ(back->steps.size(), c->steps.size());
  for (size_t i = 0; i < c->steps.size(); ++i) {
    EXPECT_EQ(back->steps[i].kind, c->steps[i].kind);
    EXPECT_EQ(back->steps[i].flag, c->steps[i].flag);
    EXPECT_EQ(back->steps[i].max_trips, c->steps[i].max_trips);
  }
}

// A plan whose markers do not nest is refused where a loader would trust it.
TEST(CudaControl, MalformedMarkersAreRefused) {
  auto g = ir::parse(kGraph);
  ASSERT_TRUE(g.ok()) << g.status();
  const ir::TargetInfo h100 = cuda::cuda_target_info(132, 232448, 90);
  auto planned = passes::compile_graph(*g, h100, passes::Options{});
  ASSERT_TRUE(planned.ok()) << planned.status();
  CompiledProgram c = plan_of(planned->program);
  for (size_t i = 0; i < c.steps.size(); ++i)
    if (c.steps[i].kind == ir::StepKind::kWhile) {
      c.steps.push_back(c.steps[i]);  // a loop head with no end
      break;
    }
  absl::Status s = check_consistent(c);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(std::string(s.message()).find("not closed"), std::string::npos) << s;
  c = plan_of(planned->program);
  for (ir::Step& st : c.steps)
    if (st.kind == ir::StepKind::kWhile) st.flag = 0;  // an input, not a bool intermediate
  s = check_consistent(c);
  EXPECT_NE(std::string(s.message()).find("not an intermediate bool buffer"), std::string::npos) << s;
}

}  // namespace
}  // namespace kiln::runtime

// Memory planning and barrier insertion on scheduled Programs.
#include <gtest/gtest.h>

#include <algorithm>

#include "codegen/c_family/gpu_program.h"
#include "ir/verify_program.h"
#include "passes/helpers.h"
#include "testing/reference.h"

namespace kiln {
namespace {

using testing::program_of;
using testing::random_tensor;

bool depends(const ir::Program& p, int step, int on) {
  std::vector<int> stack = p.steps[step].deps;
  while (!stack.empty()) {
    int s = stack.back();
    stack.pop_back();
    if (s == on) return true;
    for (int d : p.steps[s].deps) stack.push_back(d);
  }
  return false;
}

int step_storing(const ir::Program& p, int buffer) {
  for (size_t s = 0; s < p.steps.size(); ++s)
    for (const ir::Store& st : p.kernels[p.steps[s].kernel].stores)
      if (st.buffer == buffer) return int(s);
  return -1;
}

TEST(InsertBarriers, DiamondBranchesGetNoEdgeBetweenThem) {
  Tensor x = random_tensor({48, 40}, float32, 1);
  Tensor w1 = random_tensor({40, 40}, float32, 2), w2 = random_tensor({40, 40}, float32, 3);
  Tensor left = matmul(x, w1), right = matmul(relu(x) * 2.0, w2);  // a cheap prologue, inlined
  Tensor join = matmul(left, right.t());
  ir::Program p = program_of({join});
  ASSERT_EQ(p.steps.size(), 3u);
  // Steps 0 and 1 are the branches; the join depends on both, they on nothing.
  EXPECT_TRUE(p.steps[0].deps.empty());
  EXPECT_TRUE(p.steps[1].deps.empty());
  EXPECT_EQ(p.steps[2].deps, (std::vector<int>{0, 1}));
  EXPECT_MATCHES_REFERENCE({join});
}

TEST(InsertBarriers, ReusedArenaBytesAddWriteAfterReadEdges) {
  Tensor x = random_tensor({64, 64}, float32, 4);
  Tensor w = random_tensor({64, 64}, float32, 5, -0.1, 0.1);
  Tensor y = x;
  for (int i = 0; i < 4; ++i) y = matmul(y, w);
  ir::Program p = program_of({y});
  ASSERT_EQ(p.steps.size(), 4u);
  for (size_t s = 1; s < p.steps.size(); ++s) EXPECT_EQ(p.steps[s].deps, (std::vector<int>{int(s) - 1}));
  EXPECT_MATCHES_REFERENCE({y});
}

TEST(PlanMemory, ChainOfTenReductionsPeaksAtTwoIntermediates) {
  Tensor x = random_tensor({128, 128}, float32, 6);
  Tensor w = random_tensor({128, 128}, float32, 7, -0.1, 0.1);
  Tensor y = x;
  for (int i = 0; i < 10; ++i) y = matmul(y, w);
  ir::Program p = program_of({y});
  int64_t one = 128 * 128 * 4;
  int intermediates = 0;
  for (const ir::BufferDesc& b : p.buffers) intermediates += b.kind == ir::BufferKind::kIntermediate;
  EXPECT_EQ(intermediates, 9);
  EXPECT_EQ(p.unplanned_bytes, 9 * one);
  EXPECT_LE(p.arena_bytes, 2 * one);
  EXPECT_MATCHES_REFERENCE({y}, {1e-3, 1e-5});
}

TEST(PlanMemory, ElementwiseChainsWriteInPlaceWhenUnfused) {
  Tensor x = random_tensor({1000}, float32, 10);
  Tensor y = x;
  for (int i = 0; i < 8; ++i) y = i % 2 ? (y * 1.5).exp() : (y - 0.25).tanh();
  ir::Program p = program_of({y}, testing::cpu_target(), /*fusion=*/false);
  int64_t one = (1000 * 4 + 255) / 256 * 256;
  EXPECT_GE(p.unplanned_bytes, 10 * one);
  EXPECT_EQ(p.arena_bytes, one);  // every step overwrites the buffer it reads, element by element
  setenv("KILN_FUSION", "0", 1);
  EXPECT_MATCHES_REFERENCE({y});
  unsetenv("KILN_FUSION");
}

// An in-place pair shares bytes inside one kernel, so code generation must not declare it
// non-aliasing; any other overlap inside a kernel is refused by the Program verifier.
TEST(PlanMemory, InPlacePairsAreNotDeclaredNonAliasing) {
  Tensor y = random_tensor({1000}, float32, 10);
  for (int i = 0; i < 4; ++i) y = i % 2 ? (y * 1.5).exp() : (y - 0.25).tanh();
  ir::Program p = program_of({y}, testing::cpu_target(), /*fusion=*/false);
  int pairs = 0;
  for (const ir::Kernel& k : p.kernels)
    for (const ir::KNode& n : k.nodes)
      for (const ir::Store& s : k.stores)
        if (n.op == ir::Op::kLoad && ir::share_bytes(p, n.buffer, s.buffer)) ++pairs;
  ASSERT_GE(pairs, 1);
  auto r = codegen::gpu::render(p, codegen::gpu::Dialect::kCuda, testing::gpu_target());
  ASSERT_TRUE(r.ok()) << r.status();
  int checked = 0;
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    const ir::Kernel& k = p.kernels[i];
    if (r->kernels[i].twin >= 0) continue;  // its text is its family's first kernel's (kernel_twins.h)
    for (const ir::KNode& n : k.nodes)
      for (const ir::Store& s : k.stores)
        if (n.op == ir::Op::kLoad && ir::share_bytes(p, n.buffer, s.buffer)) {
          ++checked;
          const size_t at = r->module_source.find(" kiln_" + k.name + "(");
          ASSERT_NE(at, std::string::npos);
          const std::string params = r->module_source.substr(at, r->module_source.find(')', at) - at);
          for (int b : {n.buffer, s.buffer}) {
            EXPECT_NE(params.find("float* b" + std::to_string(b)), std::string::npos) << params;
            EXPECT_EQ(params.find("__restrict__ b" + std::to_string(b)), std::string::npos) << params;
          }
        }
  }
  EXPECT_GE(checked, 1);
  EXPECT_TRUE(ir::verify(p).ok());
  // Shift the written buffer by 4 bytes: a partial overlap.
  for (const ir::Kernel& k : p.kernels)
    for (const ir::KNode& n : k.nodes)
      for (const ir::Store& s : k.stores)
        if (n.op == ir::Op::kLoad && ir::share_bytes(p, n.buffer, s.buffer)) {
          ir::Program bad = p;
          bad.arena_bytes += 256;
          bad.buffers[size_t(s.buffer)].offset += 4;
          absl::Status v = ir::verify(bad);
          ASSERT_FALSE(v.ok());
          EXPECT_NE(std::string(v.message()).find("share arena bytes without being an in-place pair"), std::string::npos) << v;
          return;
        }
}

TEST(PlanMemory, LiveIntermediatesNeverShareBytes) {
  Tensor x = random_tensor({32, 32}, float32, 8);
  Tensor w = random_tensor({32, 32}, float32, 9);
  Tensor a = matmul(x, w), b = matmul(x, w.t()), c = matmul(a, b) + matmul(b, a);
  ir::Program p = program_of({c});
  for (size_t i = 0; i < p.buffers.size(); ++i)
    for (size_t j = i + 1; j < p.buffers.size(); ++j) {
      const ir::BufferDesc &u = p.buffers[i], &v = p.buffers[j];
      if (u.kind != ir::BufferKind::kIntermediate || v.kind != ir::BufferKind::kIntermediate) continue;
      bool overlap = u.offset < v.offset + v.bytes() && v.offset < u.offset + u.bytes();
      if (!overlap) continue;
      // Overlapping buffers must be ordered: the later writer waits for the earlier's readers.
      int si = step_storing(p, int(i)), sj = step_storing(p, int(j));
      EXPECT_TRUE(depends(p, std::max(si, sj), std::min(si, sj)));
    }
  EXPECT_MATCHES_REFERENCE({c});
}

}  // namespace
}  // namespace kiln

// How gathers and scatters lower: a gather's source is read from memory through an indexed load
// whose index is clamped into the axis before the load (so no run-time index addresses memory
// outside the buffer, whatever the backend evaluates eagerly), memory planning never puts a
// buffer in place over one that a gather reads at run-time positions, and a scatter is a copy
// kernel and a serial kernel with an indexed store.
#include <gtest/gtest.h>

#include "ir/verify_program.h"
#include "passes/helpers.h"
#include "testing/reference.h"

namespace kiln {
namespace {

using testing::program_of;
using testing::random_tensor;

const ir::KNode* indexed_load(const ir::Kernel& k) {
  for (const ir::KNode& n : k.nodes)
    if (ir::is_indexed_load(n)) return &n;
  return nullptr;
}

TEST(GatherLowering, IndexIsClampedIntoTheAxisBeforeTheLoad) {
  Tensor table = random_tensor({50, 16}, float32, 1);
  Tensor tokens = random_tensor({4, 7}, int32, 2, -60, 60);
  for (const ir::TargetInfo& t : {testing::cpu_target(), testing::gpu_target()}) {
    ir::Program p = program_of({gather(table, 0, tokens) * 2.0}, t);
    ASSERT_EQ(p.kernels.size(), 1u);
    ASSERT_TRUE(ir::verify(p).ok());
    const ir::Kernel& k = p.kernels[0];
    const ir::KNode* l = indexed_load(k);
    ASSERT_NE(l, nullptr) << ir::kernel_to_string(k);
    EXPECT_EQ(p.buffers[size_t(l->buffer)].kind, ir::BufferKind::kInput);
    EXPECT_EQ(l->ints[2], 4 * 7);  // the gather's own extent along its axis (its result G)
    // where(in_range, wrapped, 0): the only value the load's axis coordinate can take.
    const ir::KNode& index = k.nodes[size_t(l->inputs[0])];
    ASSERT_EQ(index.op, ir::Op::kWhere) << ir::kernel_to_string(k);
    const ir::KNode& fallback = k.nodes[size_t(index.inputs[2])];
    EXPECT_EQ(fallback.op, ir::Op::kConst);
    EXPECT_EQ(fallback.scalar.as_int(), 0);
    const ir::KNode& in_range = k.nodes[size_t(index.inputs[0])];
    ASSERT_EQ(in_range.op, ir::Op::kAnd);
    const ir::KNode& upper = k.nodes[size_t(in_range.inputs[1])];
    ASSERT_EQ(upper.op, ir::Op::kLt);
    EXPECT_EQ(k.nodes[size_t(upper.inputs[1])].scalar.as_int(), 50);  // the table's rows
  }
}

TEST(GatherLowering, NoBufferIsPlacedOverAGatheredOne) {
  // exp(x) dies in the gather's kernel, whose result has its size: an elementwise kernel would
  // write in place over it, but the gather reads it at other positions than it writes. (Two
  // guards keep it apart: an indexed load's map never equals a store's, and plan_memory refuses
  // any buffer an indexed load reads; this checks the outcome, not which guard acts.)
  Tensor x = random_tensor({16, 16}, float32, 3);
  Tensor idx = random_tensor({16, 16}, int64, 4, 0, 16);
  Tensor z = take_along_axis(exp(x), idx, 1);
  Tensor m = matmul(z, random_tensor({16, 8}, float32, 5));
  ir::Program p = program_of({m});
  ASSERT_TRUE(ir::verify(p).ok());
  int gathered = -1, result = -1;
  for (const ir::Kernel& k : p.kernels)
    if (const ir::KNode* l = indexed_load(k)) {
      gathered = l->buffer;
      result = k.stores[0].buffer;
    }
  ASSERT_GE(gathered, 0);
  EXPECT_EQ(p.buffers[size_t(gathered)].kind, ir::BufferKind::kIntermediate);
  EXPECT_EQ(p.buffers[size_t(result)].kind, ir::BufferKind::kIntermediate);
  EXPECT_FALSE(ir::share_bytes(p, gathered, result));
  EXPECT_MATCHES_REFERENCE({m});
}

// A scatter is two kernels: the copy of its data (the data's producers fuse into it), then a
// serial kernel over the updates (their producers and the indices' fuse into it) that writes at
// run-time positions; its consumers read the result from memory.
TEST(ScatterLowering, CopyThenASerialKernelWritingAtRunTimePositions) {
  Tensor x = random_tensor({6, 5}, float32, 6);
  Tensor idx = random_tensor({6, 9}, int64, 7, -5, 5);
  Tensor u = random_tensor({6, 9}, float32, 8);
  Tensor s = scatter(x + 1.0, 1, idx + 0, exp(u) * 2.0, ScatterReduction::kAdd);
  for (const ir::TargetInfo& t : {testing::cpu_target(), testing::gpu_target()}) {
    ir::Program p = program_of({s * 3.0}, t);
    ASSERT_TRUE(ir::verify(p).ok());
    ASSERT_EQ(p.kernels.size(), 3u);
    const ir::Kernel &copy = p.kernels[0], &scatter = p.kernels[1];
    EXPECT_FALSE(copy.serial);
    EXPECT_FALSE(copy.has_reduce());
    EXPECT_TRUE(scatter.serial);
    ASSERT_EQ(scatter.stores.size(), 1u);
    EXPECT_TRUE(scatter.stores[0].indexed());
    EXPECT_EQ(scatter.stores[0].buffer, copy.stores[0].buffer);
    // The scatter kernel runs after the copy (it reads and writes what the copy wrote).
    bool after = false;
    for (int d : p.steps[1].deps) after = after || d == 0;
    EXPECT_TRUE(after);
  }
  EXPECT_MATCHES_REFERENCE({s * 3.0});
}

}  // namespace
}  // namespace kiln

// Chained reductions (passes/chain_reduce.h): on a GPU a split reduction's partials are folded by
// the workgroup that stores the last partial of each output, in the same launch, so the pair is
// one kernel. The programs are pinned for a GPU target (one kernel with its finish, a zeroed
// tickets buffer of its own) and for the CPU (two kernels, nothing chained); the values come from
// the test's device, three runs each with new data (each run must find its tickets back at zero).
#include <gtest/gtest.h>

#include "passes/helpers.h"
#include "testing/reference.h"

namespace kiln {
namespace {

using testing::program_of;
using testing::random_tensor;

bool gpu_device() { return default_device().name() != "cpu"; }

// The tickets buffer of a chained program's kernel: a zeroed uint32 intermediate, one per output.
void expect_chained(const ir::Program& p, int64_t outputs, int64_t partials) {
  ASSERT_EQ(p.kernels.size(), 1u) << p.to_string();
  const ir::Kernel& k = p.kernels[0];
  ASSERT_TRUE(k.chained()) << p.to_string();
  EXPECT_EQ(k.finish[0].outer_count(), outputs);
  EXPECT_EQ(k.finish[0].shape.back(), partials);
  const ir::BufferDesc& t = p.buffers[size_t(k.tickets)];
  EXPECT_TRUE(t.zeroed);
  EXPECT_EQ(t.dtype, uint32);
  EXPECT_EQ(t.shape, (Shape{outputs}));
  for (size_t b = 0; b < p.buffers.size(); ++b)
    EXPECT_FALSE(int(b) != k.tickets && ir::share_bytes(p, k.tickets, int(b))) << "buffer " << b;
  EXPECT_NE(p.to_string().find("finish (tickets buf"), std::string::npos);
}

TEST(Chain, AFullSumIsOneKernelOnAGpu) {
  Tensor x = random_tensor({1 << 21}, float32, 1, 0, 1);
  expect_chained(program_of({x.sum()}, testing::gpu_target()), 1, 512);
  // The CPU splits it too, into two kernels of its own.
  EXPECT_EQ(program_of({x.sum()}).kernels.size(), 2u);
  for (uint32_t run = 0; run < 3; ++run) {
    Tensor y = random_tensor({1 << 21}, float32, 10 + run, 0, 1);
    EXPECT_MATCHES_REFERENCE({y.sum(), y.max(), y.mean()}, {1e-4, 1e-6});
    reset_stats();
    realize({y.sum()});
    EXPECT_EQ(stats().kernels_launched, gpu_device() ? 1 : 2);
  }
}

TEST(Chain, AColumnMeanWithABiasIsOneKernelOnAGpu) {
  // 64 columns: column tiles, each storing partials that a thread per column folds; the bias is
  // read by the finish.
  Tensor x = random_tensor({65536, 64}, float32, 2, -1, 1), b = random_tensor({64}, float32, 3);
  auto net = [&](const Tensor& v) { return v.mean({0}) + b; };
  expect_chained(program_of({net(x)}, testing::gpu_target()), 64, 256);
  for (uint32_t run = 0; run < 3; ++run) {
    Tensor y = random_tensor({65536, 64}, float32, 20 + run, -1, 1);
    EXPECT_MATCHES_REFERENCE({net(y), y.max({0}), y.min({0}, true)}, {1e-4, 1e-5});
    reset_stats();
    realize({net(y)});
    if (gpu_device()) {
      EXPECT_EQ(stats().kernels_launched, 1);
    }
  }
}

TEST(Chain, RowsOfEveryChainedDtype) {
  // Partials of 4- and 8-byte dtypes are read back coherently; a few long rows split.
  for (uint32_t run = 0; run < 2; ++run) {
    EXPECT_MATCHES_REFERENCE({random_tensor({2, 1 << 20}, float64, 30 + run).sum({1}),
                              random_tensor({3, 1 << 19}, int32, 40 + run, -50, 50).sum({1}),
                              random_tensor({1 << 20}, int64, 50 + run, -1000, 1000).max(),
                              random_tensor({4, 1 << 18}, float32, 60 + run).min({1})},
                             {1e-4, 1e-5});
  }
}

TEST(Chain, SixteenBitPartialsKeepTwoKernels) {
  // Partials of 2-byte dtypes are not read back coherently: the pair stays two kernels.
  Tensor x = random_tensor({1 << 21}, float16, 4, 0, 1);
  EXPECT_EQ(program_of({x.max()}, testing::gpu_target()).kernels.size(), 2u);
  EXPECT_MATCHES_REFERENCE({x.max()});
}

}  // namespace
}  // namespace kiln

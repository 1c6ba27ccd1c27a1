// The chain pass and the Program verifier's rules for chained kernels (passes/chain_reduce.h):
// the tickets are a zeroed uint32 intermediate of their own, alive for the whole program (no
// later buffer takes their bytes), and a broken chain is refused with the reason.
#include <gtest/gtest.h>

#include "ir/verify_program.h"
#include "passes/chain_reduce.h"
#include "passes/helpers.h"
#include "testing/reference.h"
#include "testing/scoped_env.h"

namespace kiln {
namespace {

using testing::program_of;
using testing::random_tensor;

// A chained sum first, then a chain of elementwise kernels whose buffers the planner packs.
ir::Program chained_then_more() {
  Tensor x = random_tensor({1 << 21}, float32, 1), y = random_tensor({1 << 16}, float32, 2);
  Tensor s = x.sum();
  Tensor z = (y.reshape({256, 256}).matmul(y.reshape({256, 256})) + s).exp();
  return program_of({z, s}, testing::gpu_target());
}

const ir::Kernel* chained_kernel(const ir::Program& p) {
  for (const ir::Kernel& k : p.kernels)
    if (k.chained()) return &k;
  return nullptr;
}

std::string error_of(const ir::Program& p) {
  absl::Status s = ir::verify(p);
  return s.ok() ? "" : std::string(s.message());
}

TEST(ChainReduce, TicketsKeepTheirBytesForTheWholeProgram) {
  ir::Program p = chained_then_more();
  const ir::Kernel* k = chained_kernel(p);
  ASSERT_NE(k, nullptr) << p.to_string();
  ASSERT_GE(p.kernels.size(), 2u) << p.to_string();
  EXPECT_TRUE(ir::verify(p).ok()) << ir::verify(p);
  for (size_t b = 0; b < p.buffers.size(); ++b)
    EXPECT_FALSE(int(b) != k->tickets && ir::share_bytes(p, k->tickets, int(b))) << "buffer " << b << "\n" << p.to_string();
  EXPECT_NE(p.to_string().find(" zeroed"), std::string::npos);
  // Chaining again finds nothing left to chain.
  ir::Program again = p;
  EXPECT_EQ(passes::chain_reduce(&again), 0);
  EXPECT_EQ(again.kernels.size(), p.kernels.size());
}

TEST(ChainReduce, TheVerifierRefusesABrokenChain) {
  const ir::Program p = chained_then_more();
  const ir::Kernel* k = chained_kernel(p);
  ASSERT_NE(k, nullptr) << p.to_string();
  const size_t ki = size_t(k - p.kernels.data());
  {
    ir::Program bad = p;
    bad.buffers[size_t(k->tickets)].zeroed = false;
    EXPECT_NE(error_of(bad).find("is not a zeroed uint32 intermediate"), std::string::npos) << error_of(bad);
  }
  {
    ir::Program bad = p;
    bad.buffers[size_t(k->tickets)].dtype = DType::kInt32;
    EXPECT_NE(error_of(bad).find("is not a zeroed uint32 intermediate"), std::string::npos) << error_of(bad);
  }
  {
    ir::Program bad = p;
    bad.kernels[ki].tickets = -1;
    EXPECT_NE(error_of(bad).find("a finish without tickets"), std::string::npos) << error_of(bad);
  }
  {
    ir::Program bad = p;  // the finish folds the input itself, not partials this kernel stores
    for (ir::KNode& n : bad.kernels[ki].finish[0].nodes)
      if (n.op == ir::Op::kLoad && n.inner) n.buffer = 0;
    EXPECT_NE(error_of(bad).find("which it does not store"), std::string::npos) << error_of(bad);
  }
  {
    ir::Program bad = p;  // a second kernel claims the same tickets
    for (ir::Kernel& o : bad.kernels)
      if (&o != &bad.kernels[ki]) {
        o.tickets = k->tickets;
        break;
      }
    EXPECT_NE(error_of(bad).find("tickets without a finish"), std::string::npos) << error_of(bad);
  }
  {
    ir::Program bad = p;  // a zeroed buffer nobody counts in
    ir::BufferDesc extra = bad.buffers[size_t(k->tickets)];
    extra.offset = 0;
    bad.buffers.push_back(extra);
    EXPECT_NE(error_of(bad).find("is the tickets of 0 kernels"), std::string::npos) << error_of(bad);
  }
}

TEST(ChainReduce, CpuProgramsAndSwitchedOffChainNothing) {
  Tensor x = random_tensor({1 << 21}, float32, 3);
  EXPECT_EQ(chained_kernel(program_of({x.sum()})), nullptr);  // the CPU's target
  ir::Program gpu = program_of({x.sum()}, testing::gpu_target());
  EXPECT_NE(chained_kernel(gpu), nullptr) << gpu.to_string();
  EXPECT_EQ(gpu.kernels.size(), 1u);
  testing::ScopedEnv off({{"KILN_CHAIN_REDUCE", "0"}});
  ir::Program two = program_of({x.sum()}, testing::gpu_target());
  EXPECT_EQ(chained_kernel(two), nullptr) << two.to_string();
  EXPECT_EQ(two.kernels.size(), 2u);
}

}  // namespace
}  // namespace kiln

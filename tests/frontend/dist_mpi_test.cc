// Collectives between processes: run under Open MPI's mpirun with two ranks (ctest
// dist_mpi.np2), or as two processes given RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT (ctest
// dist_tcp.np2: the TCP group); each process is one rank on the cpu device. Values of every op written out,
// against the reference interpreter (which exchanges through the same MPI group), the dtypes
// MPI lacks (f16, bool) through the host fold, the tensor-parallel block against one rank, a
// mismatch between the processes reported on both.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "kiln/kiln.h"
#include "testing/error_of.h"
#include "testing/reference.h"

namespace kiln {
namespace {

using dist::ProcessGroup;
using dist::ReduceOp;

const ProcessGroup& world() {
  static ProcessGroup g = [] {
    auto r = dist::init();
    if (!r.ok()) {
      ADD_FAILURE() << r.status();
      return ProcessGroup();
    }
    return *r;
  }();
  return g;
}

Device cpu() { return Device("cpu"); }

float at(int r, int64_t k) { return float(r + 1 + double(k) / 4) * (k % 2 ? -1.0f : 1.0f); }
Tensor operand(int r, Shape shape) {
  std::vector<float> v(size_t(shape_numel(shape)));
  for (size_t k = 0; k < v.size(); ++k) v[k] = at(r, int64_t(k));
  return from_vector(v, shape, cpu());
}

TEST(Mpi, TheGroupIsTheLaunchersWorld) {
  ASSERT_TRUE(world().valid());
  EXPECT_EQ(world().backend(), std::getenv("OMPI_COMM_WORLD_SIZE") ? "mpi" : "tcp");
  EXPECT_EQ(world().size(), 2) << "run under mpirun -np 2";
}

TEST(Mpi, EveryCollective) {
  const ProcessGroup& g = world();
  ASSERT_TRUE(g.valid());
  const int W = g.size(), r = g.rank();
  Tensor x = operand(r, {2 * W, 3});
  Tensor sum = dist::all_reduce(x, g), mx = dist::all_reduce(x, g, ReduceOp::kMax), gathered = dist::all_gather(x, g, 1),
         scattered = dist::reduce_scatter(x, g), bcast = dist::broadcast(x, g, W - 1), swapped = dist::all_to_all(x, g);
  std::vector<float> s = sum.to_vector<float>(), m = mx.to_vector<float>(), rs = scattered.to_vector<float>(),
                     b = bcast.to_vector<float>(), a2a = swapped.to_vector<float>();
  const int64_t n = 6 * W, chunk = n / W;
  for (int64_t k = 0; k < n; ++k) {
    double e = 0, hi = -INFINITY;
    for (int q = 0; q < W; ++q) {
      e += at(q, k);
      hi = std::max<double>(hi, at(q, k));
    }
    EXPECT_NEAR(s[size_t(k)], e, 1e-5);
    EXPECT_EQ(m[size_t(k)], float(hi));
    EXPECT_EQ(b[size_t(k)], at(W - 1, k));
    EXPECT_EQ(a2a[size_t(k)], at(int(k / chunk), r * chunk + k % chunk));
  }
  for (int64_t k = 0; k < chunk; ++k) {
    double e = 0;
    for (int q = 0; q < W; ++q) e += at(q, r * chunk + k);
    EXPECT_NEAR(rs[size_t(k)], e, 1e-5);
  }
  EXPECT_MATCHES_REFERENCE({sum, mx, gathered, scattered, bcast, swapped});
}

TEST(Mpi, DtypesMpiLacksFoldOnTheHost) {
  const ProcessGroup& g = world();
  ASSERT_TRUE(g.valid());
  Tensor h = operand(g.rank(), {5}).cast(float16);
  Tensor flags = from_vector<float>({float(g.rank()), 1, 0}, {3}, cpu()) > 0.5;
  EXPECT_EQ(dist::all_reduce(flags, g, ReduceOp::kMax).to_vector<bool>(), (std::vector<bool>{true, true, false}));
  EXPECT_MATCHES_REFERENCE({dist::all_reduce(h, g), dist::all_reduce(h, g, ReduceOp::kMin), dist::all_reduce(flags, g, ReduceOp::kMin),
                            dist::all_reduce(operand(g.rank(), {4}).cast(int64), g, ReduceOp::kProd)});
}

TEST(Mpi, TensorParallelBlockMatchesOneRank) {
  const ProcessGroup& g = world();
  ASSERT_TRUE(g.valid());
  const int64_t B = 4, D = 8, H = 8 * g.size();
  Tensor x = testing::random_tensor({B, D}, float32, 1).to(cpu());
  Tensor w1 = testing::random_tensor({D, H}, float32, 2).to(cpu()) * 0.3;
  Tensor w2 = testing::random_tensor({H, D}, float32, 3).to(cpu()) * 0.3;
  const std::vector<float> whole = matmul(gelu(matmul(x, w1)), w2).to_vector<float>();
  const int64_t part = H / g.size(), r = g.rank();
  Tensor y = dist::all_reduce(matmul(gelu(matmul(x, w1.slice(1, r * part, (r + 1) * part))), w2.slice(0, r * part, (r + 1) * part)), g);
  std::vector<float> v = y.to_vector<float>();
  ASSERT_EQ(v.size(), whole.size());
  for (size_t k = 0; k < v.size(); ++k) EXPECT_NEAR(v[k], whole[k], 1e-4) << k;
}

TEST(Mpi, ProcessesThatDisagreeFailTogether) {
  const ProcessGroup& g = world();
  ASSERT_TRUE(g.valid());
  Tensor x = operand(g.rank(), {g.rank() == 0 ? 4 : 6});
  EXPECT_EQ(testing::error_of([&] { dist::all_gather(x, g).to_vector<float>(); }),
            "collective mismatch between ranks: rank 0 runs all_gather of 4 f32 elements, rank 1 runs all_gather of 6 f32 "
            "elements (every rank must run the same collectives in the same order)");
}

}  // namespace
}  // namespace kiln

// Collectives on a process group of threads (kiln::dist::local_group): each rank a thread, each
// recording and realizing its own graph on the cpu device, or with KILN_DEVICE=cuda on its own
// GPU, cuda:<rank> (NCCL; tests needing more ranks than GPUs skip). Every op's values written out and
// against the reference interpreter (which exchanges the ranks' exact values through the same
// group), along other axes, in several dtypes, for groups of 2 and 3; the kernels around a
// collective and its step in the program; replays that compile nothing; a Megatron-style
// tensor-parallel block against the same block on one rank; and the errors: record-time checks,
// ranks disagreeing, a rank that never comes, a group that no longer exists.
#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <barrier>
#include <cmath>
#include <functional>
#include <thread>

#include "absl/strings/str_cat.h"
#include "frontend/capture.h"
#include "kiln/kiln.h"
#include "passes/pipeline.h"
#include "runtime/registry.h"
#include "testing/error_of.h"
#include "testing/reference.h"
#include "testing/scoped_env.h"

namespace kiln {
namespace {

using dist::ProcessGroup;
using dist::ReduceOp;
using testing::error_of;

bool on_cuda() {
  const char* d = std::getenv("KILN_DEVICE");
  return d && std::string(d) == "cuda";
}

// Rank r's device: cuda:<r> under KILN_DEVICE=cuda, else the cpu.
Device dev(int r) { return on_cuda() ? Device("cuda:" + std::to_string(r)) : Device("cpu"); }

// Runs f(rank, group) on one thread per rank of a fresh group of `size`; rethrows nothing (gtest
// assertions inside report themselves). Skips when the ranks need more GPUs than there are.
void on_ranks(int size, const std::function<void(int, const ProcessGroup&)>& f) {
  if (on_cuda())
    for (int r = 0; r < size; ++r)
      if (auto d = Device::get("cuda:" + std::to_string(r)); !d.ok()) {
        GTEST_SKIP() << size << " ranks need " << size << " GPUs: " << d.status();
      }
  auto group = dist::local_group(size);
  ASSERT_TRUE(group.ok()) << group.status();
  std::vector<std::thread> threads;
  for (int r = 0; r < size; ++r) threads.emplace_back([&, r] {
      try {
        f(r, (*group)[size_t(r)]);
      } catch (const std::exception& e) {
        ADD_FAILURE() << "rank " << r << " threw: " << e.what();
      }
    });
  for (std::thread& t : threads) t.join();
}

// Rank r's operand: r + 1 + k / 8 at element k, negated at odd k.
Tensor operand(int r, Shape shape, DType dtype = float32) {
  const int64_t n = shape_numel(shape);
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) v[size_t(k)] = float(r + 1 + double(k) / 8) * (k % 2 ? -1.0f : 1.0f);
  return from_vector(v, shape, dev(r)).cast(dtype);
}
float operand_at(int r, int64_t k) { return float(r + 1 + double(k) / 8) * (k % 2 ? -1.0f : 1.0f); }

class Collectives : public ::testing::TestWithParam<int> {};

TEST_P(Collectives, AllReduceEveryFold) {
  const int W = GetParam();
  on_ranks(W, [&](int r, const ProcessGroup& g) {
    EXPECT_EQ(g.rank(), r);
    EXPECT_EQ(g.size(), W);
    EXPECT_EQ(g.backend(), "threads");
    Tensor x = operand(r, {2, 5});
    Tensor sum = dist::all_reduce(x, g), prod = dist::all_reduce(x, g, ReduceOp::kProd),
           mx = dist::all_reduce(x, g, ReduceOp::kMax), mn = dist::all_reduce(x, g, ReduceOp::kMin),
           mean = dist::all_reduce(x, g, ReduceOp::kMean);
    EXPECT_EQ(sum.shape(), (Shape{2, 5}));
    std::vector<float> s = sum.to_vector<float>(), p = prod.to_vector<float>(), hi = mx.to_vector<float>(),
                       lo = mn.to_vector<float>(), m = mean.to_vector<float>();
    for (int64_t k = 0; k < 10; ++k) {
      double es = 0, ep = 1, ehi = -INFINITY, elo = INFINITY;
      for (int q = 0; q < W; ++q) {
        es += operand_at(q, k);
        ep *= operand_at(q, k);
        ehi = std::max<double>(ehi, operand_at(q, k));
        elo = std::min<double>(elo, operand_at(q, k));
      }
      EXPECT_NEAR(s[size_t(k)], es, 1e-4) << k;
      EXPECT_NEAR(p[size_t(k)], ep, 1e-3 * std::fabs(ep)) << k;
      EXPECT_EQ(hi[size_t(k)], float(ehi)) << k;
      EXPECT_EQ(lo[size_t(k)], float(elo)) << k;
      EXPECT_NEAR(m[size_t(k)], es / W, 1e-5) << k;
    }
    EXPECT_MATCHES_REFERENCE({sum, prod, mx, mn, mean});
  });
}

TEST_P(Collectives, AllGatherAlongEitherAxis) {
  const int W = GetParam();
  on_ranks(W, [&](int r, const ProcessGroup& g) {
    Tensor x = operand(r, {2, 3});
    Tensor rows = dist::all_gather(x, g), cols = dist::all_gather(x, g, 1);
    EXPECT_EQ(rows.shape(), (Shape{2 * W, 3}));
    EXPECT_EQ(cols.shape(), (Shape{2, 3 * W}));
    std::vector<float> a = rows.to_vector<float>(), b = cols.to_vector<float>();
    for (int q = 0; q < W; ++q)
      for (int64_t k = 0; k < 6; ++k) {
        EXPECT_EQ(a[size_t(q * 6 + k)], operand_at(q, k));
        EXPECT_EQ(b[size_t((k / 3) * 3 * W + q * 3 + k % 3)], operand_at(q, k));
      }
    EXPECT_MATCHES_REFERENCE({rows, cols});
  });
}

TEST_P(Collectives, ReduceScatterKeepsThisRanksChunk) {
  const int W = GetParam();
  on_ranks(W, [&](int r, const ProcessGroup& g) {
    Tensor x = operand(r, {2 * W, 3});
    Tensor y = dist::reduce_scatter(x, g), z = dist::reduce_scatter(x.transpose(0, 1), g, ReduceOp::kMax, 1);
    EXPECT_EQ(y.shape(), (Shape{2, 3}));
    EXPECT_EQ(z.shape(), (Shape{3, 2}));
    std::vector<float> v = y.to_vector<float>(), u = z.to_vector<float>();
    for (int64_t k = 0; k < 6; ++k) {
      double e = 0, hi = -INFINITY;
      for (int q = 0; q < W; ++q) {
        e += operand_at(q, r * 6 + k);
        hi = std::max<double>(hi, operand_at(q, r * 6 + k));
      }
      EXPECT_NEAR(v[size_t(k)], e, 1e-4);
      EXPECT_EQ(u[size_t((k % 3) * 2 + k / 3)], float(hi));
    }
    EXPECT_MATCHES_REFERENCE({y, z});
  });
}

TEST_P(Collectives, BroadcastFromEachRoot) {
  const int W = GetParam();
  on_ranks(W, [&](int r, const ProcessGroup& g) {
    Tensor x = operand(r, {4});
    for (int root = 0; root < W; ++root) {
      Tensor y = dist::broadcast(x, g, root);
      std::vector<float> v = y.to_vector<float>();
      for (int64_t k = 0; k < 4; ++k) EXPECT_EQ(v[size_t(k)], operand_at(root, k));
    }
    EXPECT_MATCHES_REFERENCE({dist::broadcast(x * 2.0, g, W - 1)});
  });
}

TEST_P(Collectives, AllToAllTransposesChunks) {
  const int W = GetParam();
  on_ranks(W, [&](int r, const ProcessGroup& g) {
    Tensor x = operand(r, {W * 2, 2});
    Tensor y = dist::all_to_all(x, g);
    EXPECT_EQ(y.shape(), x.shape());
    std::vector<float> v = y.to_vector<float>();
    for (int q = 0; q < W; ++q)  // chunk q of the result is chunk r of rank q's operand
      for (int64_t k = 0; k < 4; ++k) EXPECT_EQ(v[size_t(q * 4 + k)], operand_at(q, r * 4 + k));
    EXPECT_MATCHES_REFERENCE({y, dist::all_to_all(x.transpose(0, 1), g, 1)});
  });
}

INSTANTIATE_TEST_SUITE_P(Ranks, Collectives, ::testing::Values(2, 3));

// Integers fold exactly (wrapping like the dtype), f16 and bf16 through the host fold, bool
// reduces with max (any) and min (all).
TEST(Dist, OtherDtypes) {
  on_ranks(2, [&](int r, const ProcessGroup& g) {
    Tensor i = from_vector<int32_t>({r + 1, -(r + 5), 2147483647}, {3}, int32, dev(r));
    EXPECT_EQ(dist::all_reduce(i, g).to_vector<int32_t>(), (std::vector<int32_t>{3, -11, -2}));
    EXPECT_EQ(dist::all_reduce(i, g, ReduceOp::kMax).to_vector<int32_t>(), (std::vector<int32_t>{2, -5, 2147483647}));
    Tensor h = operand(r, {6}, float16), b = operand(r, {6}, bfloat16);
    Tensor flags = from_vector<float>({float(r), 1, 0}, {3}, dev(r)) > 0.5;
    EXPECT_EQ(dist::all_reduce(flags, g, ReduceOp::kMax).to_vector<bool>(), (std::vector<bool>{true, true, false}));
    EXPECT_EQ(dist::all_reduce(flags, g, ReduceOp::kMin).to_vector<bool>(), (std::vector<bool>{false, true, false}));
    EXPECT_MATCHES_REFERENCE({dist::all_reduce(i, g, ReduceOp::kProd), dist::all_reduce(h, g), dist::all_reduce(b, g, ReduceOp::kMean),
                              dist::all_gather(h, g), dist::all_reduce(flags, g, ReduceOp::kMax)});
    // uint32 wraps at 2^32 and compares unsigned; 16-bit integers gather everywhere and reduce on
    // the cpu (NCCL has no 16-bit integer type: a clear error on cuda).
    Tensor u = from_vector<uint32_t>({4000000000u, uint32_t(r + 1)}, {2}, uint32, dev(r));
    EXPECT_EQ(dist::all_reduce(u, g).to_vector<int64_t>(), (std::vector<int64_t>{8000000000LL - 4294967296LL, 3}));
    EXPECT_EQ(dist::all_reduce(u, g, ReduceOp::kMax).to_vector<int64_t>(), (std::vector<int64_t>{4000000000LL, 2}));
    Tensor s = from_vector<int16_t>({int16_t(30000 + r), -7}, {2}, int16, dev(r));
    EXPECT_EQ(dist::all_gather(s, g).to_vector<int64_t>(), (std::vector<int64_t>{30000, -7, 30001, -7}));
    if (on_cuda()) {
      const std::string e = error_of([&] { dist::all_reduce(s, g).realize(); });
      EXPECT_NE(e.find("NCCL reduces no 16-bit integer type"), std::string::npos) << e;
    } else {
      EXPECT_EQ(dist::all_reduce(s, g).to_vector<int64_t>(), (std::vector<int64_t>{60001 - 65536, -14}));
    }
  });
}

// The collective is a step between two fused kernels: the producer (x * 2 + 1) and the consumer
// (relu(y) * 3) stay one kernel each, and a second step with new data compiles nothing. (The
// counters are the process's: the ranks meet at a barrier around each count.)
TEST(Dist, KernelsAroundACollectiveAndReplays) {
  std::barrier sync(2);
  on_ranks(2, [&](int r, const ProcessGroup& g) {
    auto step = [&](float base) {
      Tensor x = from_vector<float>({base + r, -base, 2 * base + r, -1}, {4}, dev(r));
      return relu(dist::all_reduce(x * 2.0 + 1.0, g)) * 3.0;
    };
    Tensor first = step(1);
    if (r == 0) {
      std::vector<std::shared_ptr<runtime::Buffer>> bufs;
      ir::Graph graph = detail::capture({first}, &bufs);
      auto target = runtime::get_device(on_cuda() ? "cuda:0" : "cpu");
      ASSERT_TRUE(target.ok());
      auto c = passes::compile_graph(graph, (*target)->target(), passes::Options{});
      ASSERT_TRUE(c.ok()) << c.status();
      int collectives = 0;
      for (const ir::Step& s : c->program.steps) collectives += s.is_collective();
      EXPECT_EQ(collectives, 1) << c->program.to_string();
      EXPECT_EQ(c->program.kernels.size(), 2u) << c->program.to_string();
      reset_stats();
    }
    sync.arrive_and_wait();
    // rank r: 2x + 1 = [3 + 2r, -1, 5 + 2r, -1]; summed over both ranks, relu, times 3
    EXPECT_EQ(first.to_vector<float>(), (std::vector<float>{24, 0, 36, 0}));
    sync.arrive_and_wait();
    if (r == 0) {
      EXPECT_EQ(stats().kernels_launched, 4);  // two per rank
      reset_stats();
    }
    sync.arrive_and_wait();
    EXPECT_EQ(step(2).to_vector<float>(), (std::vector<float>{36, 0, 60, 0}));
    sync.arrive_and_wait();
    if (r == 0) {
      EXPECT_EQ(stats().kernels_compiled, 0);
    }
  });
}

// Work that does not depend on a collective does not wait for it: the step's deps are its
// operand's producer only, an independent matmul depends on neither, and only the collective's
// consumer waits for it (on CUDA these deps are the graph's edges, so the matmul may run while
// the all_reduce is in flight).
TEST(Dist, OnlyTrueDependenciesWaitForACollective) {
  on_ranks(1, [&](int r, const ProcessGroup& g) {
    Tensor x = operand(r, {64, 64});
    Tensor w = operand(r, {64, 64}) * 0.5;
    Tensor reduced = dist::all_reduce(exp(x), g);
    Tensor independent = matmul(w, w);
    Tensor after = reduced + 1.0;
    std::vector<std::shared_ptr<runtime::Buffer>> bufs;
    ir::Graph graph = detail::capture({after, independent}, &bufs);
    auto device = runtime::get_device(on_cuda() ? "cuda:0" : "cpu");
    ASSERT_TRUE(device.ok());
    auto c = passes::compile_graph(graph, (*device)->target(), passes::Options{});
    ASSERT_TRUE(c.ok()) << c.status();
    const ir::Program& p = c->program;
    int coll = -1, producer = -1, consumer = -1, dot = -1;
    for (size_t i = 0; i < p.steps.size(); ++i) {
      const ir::Step& s = p.steps[i];
      if (s.is_collective()) coll = int(i);
      else if (p.kernels[size_t(s.kernel)].contraction.reduce >= 0) dot = int(i);
    }
    ASSERT_GE(coll, 0) << p.to_string();
    ASSERT_GE(dot, 0) << p.to_string();
    for (size_t i = 0; i < p.steps.size(); ++i) {
      if (int(i) == coll) continue;
      std::vector<int> reads, writes;
      ir::step_buffers(p, i, &reads, &writes);
      if (std::find(writes.begin(), writes.end(), p.steps[size_t(coll)].in) != writes.end()) producer = int(i);
      if (std::find(reads.begin(), reads.end(), p.steps[size_t(coll)].out) != reads.end()) consumer = int(i);
    }
    ASSERT_GE(producer, 0) << p.to_string();
    ASSERT_GE(consumer, 0) << p.to_string();
    EXPECT_EQ(p.steps[size_t(coll)].deps, std::vector<int>{producer}) << p.to_string();
    const std::vector<int>& dd = p.steps[size_t(dot)].deps;
    EXPECT_EQ(std::count(dd.begin(), dd.end(), coll), 0) << p.to_string();
    EXPECT_NE(std::count(p.steps[size_t(consumer)].deps.begin(), p.steps[size_t(consumer)].deps.end(), coll), 0) << p.to_string();
  });
}

// Work beside a collective: on CUDA a persistent matmul that may run while the all_reduce is in
// flight launches only on the multiprocessors NCCL leaves free, and still computes every tile
// (the same values as the matmul alone).
TEST(Dist, AMatmulBesideACollectiveComputesEveryTile) {
  on_ranks(2, [&](int r, const ProcessGroup& g) {
    Tensor a = (randn({512, 1024}, 7 + r) * 0.1).cast(bfloat16).to(dev(r));
    Tensor b = (randn({1024, 768}, 9) * 0.1).cast(bfloat16).to(dev(r));
    realize({a, b});
    const std::vector<float> alone = matmul(a, b).cast(float32).to_vector<float>();
    Tensor y = dist::all_reduce(operand(r, {1 << 16}) * 2.0, g);
    Tensor c = matmul(a, b);
    realize({y, c});
    EXPECT_EQ(c.cast(float32).to_vector<float>(), alone);
    EXPECT_EQ(y.to_vector<float>()[3], 2 * (operand_at(0, 3) + operand_at(1, 3)));
  });
}

// Megatron-style tensor parallelism: W1 split by columns, W2 by rows, one all_reduce per block;
// the result equals the whole block on one rank.
TEST(Dist, TensorParallelBlockMatchesOneRank) {
  const int64_t B = 4, D = 8, H = 16;
  Tensor x = testing::random_tensor({B, D}, float32, 1).to(dev(0));
  Tensor w1 = testing::random_tensor({D, H}, float32, 2).to(dev(0)) * 0.3;
  Tensor w2 = testing::random_tensor({H, D}, float32, 3).to(dev(0)) * 0.3;
  const std::vector<float> whole = matmul(gelu(matmul(x, w1)), w2).to_vector<float>();
  on_ranks(2, [&](int r, const ProcessGroup& g) {
    Tensor w1r = w1.slice(1, r * H / 2, (r + 1) * H / 2).to(dev(r)), w2r = w2.slice(0, r * H / 2, (r + 1) * H / 2).to(dev(r));
    Tensor y = dist::all_reduce(matmul(gelu(matmul(x.to(dev(r)), w1r)), w2r), g);
    std::vector<float> v = y.to_vector<float>();
    ASSERT_EQ(v.size(), whole.size());
    for (size_t k = 0; k < v.size(); ++k) EXPECT_NEAR(v[k], whole[k], 1e-4) << k;
  });
}

TEST(Dist, RecordTimeErrors) {
  on_ranks(2, [&](int r, const ProcessGroup& g) {
    Tensor x = from_vector<float>({1, 2, 3}, {3}, dev(r));
    EXPECT_EQ(error_of([&] { dist::reduce_scatter(x, g); }),
              "reduce_scatter: reduce_scatter(sum): axis 0 of [3] does not split into 2 equal chunks (one per rank)");
    EXPECT_EQ(error_of([&] { dist::all_to_all(x.reshape({1, 3}), g, 1); }),
              "all_to_all: all_to_all: axis 0 of [3,1] does not split into 2 equal chunks (one per rank) (axis 1)");
    EXPECT_EQ(error_of([&] { dist::broadcast(x, g, 2); }), "broadcast: root 2 is not a rank of the 2-rank group");
    EXPECT_EQ(error_of([&] { dist::all_reduce(x.cast(int32), g, ReduceOp::kMean); }), "all_reduce: mean needs a float tensor, got i32");
    EXPECT_EQ(error_of([&] { dist::all_reduce(x > 1.0, g); }),
              "all_reduce: a bool tensor reduces with kMax (any rank true) or kMin (all ranks true)");
    EXPECT_EQ(error_of([&] { dist::all_gather(x.sum(), g); }), "all_gather: needs a tensor with at least one axis, got a scalar");
    EXPECT_EQ(error_of([&] { dist::all_gather(x, g, 1); }), "all_gather: axis 1 out of range for a tensor of rank 1");
    EXPECT_EQ(error_of([&] { dist::all_reduce(x, ProcessGroup()); }),
              "all_reduce: the process group is empty (a default-constructed ProcessGroup; use init() or local_group())");
  });
  EXPECT_EQ(dist::local_group(0).status().message(), "kiln::dist::local_group: 0 ranks");
}

// Ranks that call the same collective on different shapes fail together, naming the ranks that
// differ from rank 0 (with three ranks: only the odd one out).
TEST_P(Collectives, RanksThatDisagreeFailNamingThem) {
  const int W = GetParam();
  on_ranks(W, [&](int r, const ProcessGroup& g) {
    Tensor x = operand(r, {r == W - 1 ? 5 : 4});
    const std::string e = error_of([&] { dist::all_reduce(x, g).to_vector<float>(); });
    EXPECT_EQ(e, absl::StrCat("collective mismatch between ranks: rank 0 runs all_reduce(sum) of 4 f32 elements, rank ", W - 1,
                              " runs all_reduce(sum) of 5 f32 elements (every rank must run the same collectives in the same order)"));
  });
}

TEST(Dist, ARankThatNeverComesTimesOut) {
  testing::ScopedEnv env({{"KILN_DIST_TIMEOUT", "1"}});
  on_ranks(2, [&](int r, const ProcessGroup& g) {
    if (r == 1) return;  // rank 1 records nothing
    const std::string e = error_of([&] { dist::all_reduce(operand(r, {4}), g).to_vector<float>(); });
    // (the cpu waits in the collective itself; cuda already where the ranks compare programs at load)
    EXPECT_NE(e.find(": rank 1 of the 2-rank thread group did not join within 1 s (KILN_DIST_TIMEOUT); the group is unusable now"),
              std::string::npos)
        << e;
    if (!on_cuda()) {
      EXPECT_EQ(e.substr(0, 17), "all_reduce(sum): ");
    }
  });
}

// A rank that stops coming after some steps: the next step's collective fails for the others
// after the timeout instead of hanging (the cpu: the meeting times out; cuda: the watchdog
// aborts the NCCL communicator, whose waiting kernels return, and the step's results are
// reported lost), and so does every later use of the group.
TEST(Dist, ARankThatStopsComingFailsTheOthersStep) {
  testing::ScopedEnv env({{"KILN_DIST_TIMEOUT", "2"}});
  on_ranks(2, [&](int r, const ProcessGroup& g) {
    auto step = [&](float base) { return dist::all_reduce(operand(r, {8}) * base, g).to_vector<float>(); };
    EXPECT_NEAR(step(2)[0], 2 * (operand_at(0, 0) + operand_at(1, 0)), 1e-5);
    if (r == 1) return;  // rank 1 stops here
    // (the same executable: the factor is a run-time param, so no load meets the ranks again)
    const std::string e = error_of([&] { step(3); });
    EXPECT_NE(e.find("within 2 s (KILN_DIST_TIMEOUT)"), std::string::npos) << e;
    EXPECT_NE(error_of([&] { step(4); }), "") << "a later step on the same group";
  });
}

// A collective inside a device loop and a branch: each trip all-reduces the carried value, and
// the trip count depends on the reduced values (every rank sees the same sums, so every rank runs
// the same trips). CUDA refuses it with a clear error (NCCL's captured work cannot sit in a
// conditional node).
TEST(Dist, CollectivesInsideALoopAndABranch) {
  on_ranks(2, [&](int r, const ProcessGroup& g) {
    Tensor x = from_vector<float>({1.0f + r, -0.5f, 0.25f * float(r)}, {3}, dev(r));
    Values out = while_loop([](const Values& v) { return abs(v[0]).max() < 100.0f; },
                            [&](const Values& v) { return Values{dist::all_reduce(v[0], g) * 1.5, v[1] + 1.0}; },
                            {x, full({}, 0.0f, float32, dev(r))});
    if (on_cuda()) {  // (CUDA refuses NCCL's captured work inside a conditional node)
      const std::string e = error_of([&] { out[0].to_vector<float>(); });
      EXPECT_NE(e.find("all_reduce(sum) inside a device loop or branch"), std::string::npos) << e;
      return;
    }
    // trip 1: sums [3, -1, 0.25] * 1.5; then each trip doubles and scales by 1.5 (x3) until |x| >= 100
    std::vector<float> want = {4.5f, -1.5f, 0.375f};
    int trips = 1;
    while (std::max({std::fabs(want[0]), std::fabs(want[1]), std::fabs(want[2])}) < 100.0f) {
      for (float& w : want) w *= 3.0f;
      ++trips;
    }
    EXPECT_EQ(out[0].to_vector<float>(), want);
    EXPECT_EQ(out[1].to_vector<float>(), std::vector<float>{float(trips)});
    // A branch whose collective reads an input and writes an output, run on two inputs (buffers
    // at other addresses: the second run rebinds the collective inside the branch).
    auto branch = [&](const Tensor& in) {
      Tensor p = dist::all_reduce(from_vector<float>({float(r)}, {1}, dev(r)), g, ReduceOp::kMax).sum() > 0.5f;
      return cond(p, [&](const Values& v) { return Values{dist::all_reduce(v[0], g, ReduceOp::kMin)}; },
                  [&](const Values& v) { return Values{v[0] * 0.0}; }, {in})[0];
    };
    EXPECT_EQ(branch(x).to_vector<float>(), (std::vector<float>{1.0f, -0.5f, 0.0f}));
    Tensor x2 = from_vector<float>({3.0f - r, 7.0f, -2.0f * float(r)}, {3}, dev(r));
    Tensor b2 = branch(x2);
    EXPECT_EQ(b2.to_vector<float>(), (std::vector<float>{2.0f, 7.0f, -2.0f}));
    EXPECT_EQ(branch(x).to_vector<float>(), (std::vector<float>{1.0f, -0.5f, 0.0f}));
  });
}

TEST(Dist, AGroupThatNoLongerExists) {
  Tensor y;
  {
    auto g = dist::local_group(1);
    ASSERT_TRUE(g.ok());
    y = dist::all_reduce(operand(0, {3}), (*g)[0]);
  }
  EXPECT_NE(error_of([&] { y.to_vector<float>(); }).find("no longer exists"), std::string::npos);
}

// A group takes its executables and device communicators (NCCL) with it when its last handle
// goes: a program that makes groups over and over holds steady memory.
TEST(Dist, ADestroyedGroupReleasesItsExecutablesAndCommunicators) {
  const Stats before = stats();
  for (int round = 0; round < 3; ++round) {
    on_ranks(2, [&](int r, const ProcessGroup& g) {
      const float want = 3 * (operand_at(0, 5) + operand_at(1, 5));
      EXPECT_EQ(dist::all_reduce(operand(r, {64}) * 3.0, g).to_vector<float>()[5], want);
      if (on_cuda()) {
        EXPECT_GE(stats().device_communicators, before.device_communicators + 1);
      }
    });
    if (IsSkipped() || HasFatalFailure()) return;
    // (on_ranks' group is gone here)
    EXPECT_EQ(stats().device_communicators, before.device_communicators) << "round " << round;
    EXPECT_EQ(stats().executable_cache_bytes, before.executable_cache_bytes) << "round " << round;
  }
}

TEST(Dist, GraphsWithCollectivesAreNotExported) {
  on_ranks(1, [&](int r, const ProcessGroup& g) {
    Tensor x = operand(r, {4});
    EXPECT_EQ(error_of([&] {
                export_graph([&](const std::vector<Tensor>& in) { return std::vector<Tensor>{dist::all_reduce(in[0], g)}; }, {x});
              }),
              "export_graph: the graph has collectives (kiln::dist); their process group lives in this process, so it cannot be "
              "exported");
  });
}

// (The library is opened once per process: this is the only test here that asks for MPI.)
TEST(Dist, AMissingMpiLibraryIsUnavailable) {
  testing::ScopedEnv env({{"KILN_MPI_LIBRARY", "/nonexistent/libmpi.so.40"}});
  auto g = dist::init_mpi();
  EXPECT_EQ(g.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(g.status().message().find("mpi: cannot open /nonexistent/libmpi.so.40"), std::string::npos) << g.status();
}

// A free TCP port of this machine (bound, read, released: another process could take it in
// between, which these tests accept).
int free_port() {
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t len = sizeof a;
  int port = 0;
  if (::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 && ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0)
    port = ntohs(a.sin_port);
  ::close(fd);
  return port;
}

// Two ranks meeting over TCP (the group init() makes from RANK / WORLD_SIZE / MASTER_ADDR /
// MASTER_PORT), here on two threads of one process.
TEST(Dist, TcpGroup) {
  const int port = free_port();
  ASSERT_GT(port, 0);
  std::vector<std::thread> threads;
  for (int r = 0; r < 2; ++r) threads.emplace_back([&, r] {
      try {
        auto g = dist::init_tcp(r, 2, "127.0.0.1", port);
        ASSERT_TRUE(g.ok()) << g.status();
        EXPECT_EQ(g->backend(), "tcp");
        EXPECT_EQ(g->rank(), r);
        EXPECT_EQ(g->local_rank(), r);
        Tensor x = operand(r, {4, 3});
        Tensor sum = dist::all_reduce(x, *g), cols = dist::all_gather(x, *g, 1), mine = dist::reduce_scatter(x, *g, ReduceOp::kMax);
        std::vector<float> s = sum.to_vector<float>();
        for (int64_t k = 0; k < 12; ++k) EXPECT_NEAR(s[size_t(k)], operand_at(0, k) + operand_at(1, k), 1e-5);
        EXPECT_MATCHES_REFERENCE({sum, cols, mine, dist::all_to_all(x, *g), dist::broadcast(x, *g, 1)});
        Tensor odd = operand(r, {r == 1 ? 5 : 4});
        EXPECT_EQ(error_of([&] { dist::all_reduce(odd, *g).to_vector<float>(); }),
                  "collective mismatch between ranks: rank 0 runs all_reduce(sum) of 4 f32 elements, rank 1 runs all_reduce(sum) of 5 "
                  "f32 elements (every rank must run the same collectives in the same order)");
      } catch (const std::exception& e) {
        ADD_FAILURE() << "rank " << r << " threw: " << e.what();
      }
    });
  for (std::thread& t : threads) t.join();
}

TEST(Dist, TcpRankThatNeverJoins) {
  testing::ScopedEnv env({{"KILN_DIST_TIMEOUT", "1"}});
  const int port = free_port();
  auto g = dist::init_tcp(0, 2, "127.0.0.1", port);
  EXPECT_EQ(g.status().code(), absl::StatusCode::kDeadlineExceeded);
  EXPECT_EQ(g.status().message(), absl::StrCat("kiln::dist: rank(s) 1 of 2 did not join at 127.0.0.1:", port,
                                               " within 1 s (KILN_DIST_TIMEOUT)"));
  EXPECT_EQ(dist::init_tcp(2, 2, "127.0.0.1", port).status().message(), "kiln::dist: rank 2 of a 2-rank group");
}

TEST(Dist, InitWithoutALauncher) {
  testing::ScopedEnv env({{"OMPI_COMM_WORLD_SIZE", ""}, {"RANK", ""}, {"MASTER_ADDR", ""}});
  EXPECT_EQ(dist::init().status().code(), absl::StatusCode::kFailedPrecondition);
  testing::ScopedEnv bad({{"RANK", "one"}});
  EXPECT_EQ(dist::init().status().message(), "kiln::dist::init: RANK=one is not a number");
}

// Devices without collectives refuse them when they are recorded.
TEST(Dist, DevicesWithoutCollectivesRefuseThem) {
  auto vk = Device::get("vulkan");
  if (!vk.ok()) GTEST_SKIP() << "no vulkan device: " << vk.status();
  on_ranks(1, [&](int, const ProcessGroup& g) {
    Tensor x = from_vector<float>({1, 2}, {2}, *vk);
    EXPECT_EQ(error_of([&] { dist::all_reduce(x, g); }),
              "all_reduce: vulkan has no collectives in this build (they run on cpu and cuda)");
  });
}

}  // namespace
}  // namespace kiln

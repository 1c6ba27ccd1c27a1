// The executable cache: a second graph of the same structure compiles nothing.
#include <gtest/gtest.h>

#include "frontend/capture.h"
#include "frontend/lazy.h"
#include "ir/params.h"
#include "kiln/kiln.h"
#include "replay/executable_cache.h"
#include "replay/compile_or_replay.h"
#include "testing/reference.h"

namespace kiln {
namespace {

Tensor model(const Tensor& x, const Tensor& w) { return softmax(matmul(x, w).tanh() * 2.0, -1); }

TEST(Cache, SameStructureNewDataCompilesNothing) {
  Tensor x1 = testing::random_tensor({8, 16}, float32, 1), w1 = testing::random_tensor({16, 4}, float32, 2);
  std::vector<float> first = model(x1, w1).to_vector<float>();
  reset_stats();
  Tensor x2 = testing::random_tensor({8, 16}, float32, 3), w2 = testing::random_tensor({16, 4}, float32, 4);
  Tensor y2 = model(x2, w2);
  EXPECT_MATCHES_REFERENCE({y2});
  Stats s = stats();
  EXPECT_EQ(s.kernels_compiled, 0);
  EXPECT_EQ(s.executables_built, 0);
  EXPECT_EQ(s.executable_cache_hits, 1);
  EXPECT_EQ(s.graphs_realized, 1);
  EXPECT_GE(s.kernels_launched, 1);
  EXPECT_NE(y2.to_vector<float>(), first);  // new data, new result
}

// Restores the executable cache's budget when a test ends.
struct BudgetScope {
  int64_t saved = executable_cache_budget();
  ~BudgetScope() { set_executable_cache_budget(saved); }
};

// A graph whose intermediate arena is `rows` x 1024 floats (a reduction read twice).
Tensor arena_graph(int64_t rows, uint32_t seed) {
  Tensor x = testing::random_tensor({rows, 1024}, float32, seed);
  Tensor m = (x * 2.0).exp().sum({1}, true);
  return x / m + m.sqrt();
}

TEST(Cache, EvictsLeastRecentlyUsedBeyondItsBudget) {
  BudgetScope scope;
  replay::cache_clear();
  const int64_t entry = replay::kMinEntryBytes;  // these graphs' arenas are smaller
  set_executable_cache_budget(3 * entry);
  reset_stats();
  std::vector<Tensor> outs;
  for (int64_t n = 1; n <= 5; ++n) outs.push_back(testing::random_tensor({n}, float32, uint32_t(n)) * 2.0 + 1.0);
  for (const Tensor& t : outs) t.realize();
  EXPECT_EQ(stats().executables_built, 5);
  EXPECT_EQ(stats().executables_evicted, 2);
  EXPECT_EQ(stats().executable_cache_bytes, 3 * entry);
  // The newest three are still cached; the oldest was dropped and is built again.
  reset_stats();
  (testing::random_tensor({5}, float32, 9) * 2.0 + 1.0).realize();
  (testing::random_tensor({4}, float32, 9) * 2.0 + 1.0).realize();
  EXPECT_EQ(stats().executables_built, 0);
  Tensor again = testing::random_tensor({1}, float32, 9) * 2.0 + 1.0;
  EXPECT_MATCHES_REFERENCE({again});
  EXPECT_EQ(stats().executables_built, 1);
  EXPECT_EQ(stats().executables_evicted, 1);  // {3} was the least recently used
}

TEST(Cache, AnEvictedExecutableFreesItsMemory) {
  BudgetScope scope;
  replay::cache_clear();
  Tensor big = arena_graph(4096, 1);
  std::vector<std::shared_ptr<runtime::Buffer>> bufs;
  ir::Graph g = detail::capture({big}, &bufs);
  auto compiled = replay::compile_graph(detail::impl_of(default_device()), g);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  std::weak_ptr<const runtime::Executable> exe = (*compiled)->exe;
  const int64_t held = (*compiled)->bytes;
  EXPECT_EQ(stats().executable_cache_bytes, held);
  compiled = absl::StatusOr<std::shared_ptr<const replay::CompiledGraph>>(nullptr);
  EXPECT_FALSE(exe.expired());  // the cache holds it
  set_executable_cache_budget(held - 1);
  EXPECT_TRUE(exe.expired());  // evicted: nothing holds it, its arena is freed
  EXPECT_EQ(stats().executable_cache_bytes, 0);
}

TEST(Cache, AnExecutableLargerThanTheBudgetRunsUncached) {
  BudgetScope scope;
  replay::cache_clear();
  set_executable_cache_budget(1);
  reset_stats();
  for (int i = 0; i < 3; ++i) {
    Tensor y = arena_graph(64, uint32_t(i));
    EXPECT_MATCHES_REFERENCE({y});
  }
  EXPECT_EQ(stats().executables_built, 3);
  EXPECT_EQ(stats().executable_cache_bytes, 0);
  EXPECT_EQ(stats().executables_evicted, 0);
  EXPECT_THROW(set_executable_cache_budget(-1), Error);
}

// A new shape or a value compiled into the code (a pow exponent) compiles again; a new float
// scalar does not (a param, ir/params.h).
TEST(Cache, DifferentShapesOrCodeValuesCompileAgain) {
  Tensor x = testing::random_tensor({5}, float32, 1);
  (x * 3.0).realize();
  reset_stats();
  (x * 4.0).realize();
  EXPECT_EQ(stats().executables_built, 0);
  Tensor y = testing::random_tensor({6}, float32, 2);
  (y * 4.0).realize();
  EXPECT_EQ(stats().executables_built, 1);
  pow(y, 3.0).realize();
  pow(y, 4.0).realize();
  EXPECT_EQ(stats().executables_built, 3);
}

// A repeated realize is recognized from its recorded ops without building the graph (the
// realize shortcut); what it runs must still be exactly the graph's executable.
TEST(Cache, ARepeatedRealizeReplaysWithoutCompiling) {
  Tensor x = testing::random_tensor({32}, float32, 11), y = testing::random_tensor({32}, float32, 12);
  auto step = [](const Tensor& a, const Tensor& b) { return ((a * 1.5 + b).tanh() - a) * 0.5; };
  step(x, y).realize();
  reset_stats();
  for (int i = 0; i < 3; ++i) {
    Tensor r = step(x, y);
    EXPECT_MATCHES_REFERENCE({r});
  }
  EXPECT_EQ(stats().executables_built, 0);
  EXPECT_EQ(stats().executable_cache_hits, 3);
  // The same ops on one tensor twice is another graph (one input, not two): built, and right.
  Tensor same = step(x, x);
  EXPECT_MATCHES_REFERENCE({same});
  EXPECT_EQ(stats().executables_built, 1);
  // Operands swapped and another scalar share the first executable (the scalar is a param);
  // another shape is its own.
  Tensor swapped = step(y, x);
  EXPECT_MATCHES_REFERENCE({swapped});
  Tensor other = ((x * 2.5 + y).tanh() - x) * 0.5;
  EXPECT_MATCHES_REFERENCE({other});
  Tensor wider = step(testing::random_tensor({33}, float32, 13), testing::random_tensor({33}, float32, 14));
  EXPECT_MATCHES_REFERENCE({wider});
  EXPECT_EQ(stats().executables_built, 2);
  // Several outputs, one of them twice.
  Tensor a = step(x, y), b = a * 3.0;
  realize({a, b, a});
  EXPECT_EQ(a.to_vector<float>(), step(x, y).to_vector<float>());
}

TEST(Cache, TheRealizeShortcutHonoursClearsAndEvictions) {
  BudgetScope scope;
  Tensor x = testing::random_tensor({16}, float32, 15);
  (x * 7.0 - 1.0).realize();
  reset_stats();
  replay::cache_clear();
  (x * 7.0 - 1.0).realize();
  EXPECT_EQ(stats().executables_built, 1);  // a cleared cache compiles again
  // An executable still held elsewhere but evicted from the cache is not replayed.
  Tensor y = x * 7.0 - 1.0;
  std::vector<std::shared_ptr<runtime::Buffer>> bufs;
  // (The realize compiled the graph with its scalars lifted into params: the same graph here.)
  auto held = replay::compile_graph(detail::impl_of(default_device()), ir::lift_params(detail::capture({y}, &bufs)));
  ASSERT_TRUE(held.ok()) << held.status();
  EXPECT_EQ(stats().executables_built, 1);  // the cached one
  set_executable_cache_budget(1);           // evicts it (and the cache holds nothing more)
  set_executable_cache_budget(scope.saved);
  reset_stats();
  EXPECT_MATCHES_REFERENCE({y});
  EXPECT_EQ(stats().executables_built, 1);
  EXPECT_EQ(stats().executable_cache_hits, 0);
}

TEST(Cache, RealizedOutputsAreNeverOverwrittenByLaterRuns) {
  Tensor a = testing::random_tensor({64}, float32, 5);
  Tensor r1 = (a + 1).realize();
  std::vector<float> v1 = r1.to_vector<float>();
  Tensor b = testing::random_tensor({64}, float32, 6);
  Tensor r2 = (b + 1).realize();  // same executable, replayed
  EXPECT_EQ(r1.to_vector<float>(), v1);
  EXPECT_NE(r2.to_vector<float>(), v1);
}

TEST(Cache, SeveralOutputsRealizeAsOneGraph) {
  Tensor x = testing::random_tensor({32, 32}, float32, 7);
  Tensor s = x.sum({1}), m = x.max({1}), e = x.exp();
  reset_stats();
  realize({s, m, e});
  EXPECT_EQ(stats().graphs_realized, 1);
  EXPECT_TRUE(s.is_realized() && m.is_realized() && e.is_realized());
}

}  // namespace
}  // namespace kiln

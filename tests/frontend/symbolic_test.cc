// Symbolic dimensions (kiln::Dim, passes/symbolic.h): one compile serves every size.
#include <gtest/gtest.h>

#include <thread>

#include "kiln/kiln.h"
#include "testing/reference.h"

namespace kiln {
namespace {

using testing::random_tensor;

// A small MLP over a batch: matmuls, a bias broadcast, activations, a row softmax and a layer
// norm (row reductions), with the weights as captured constants.
struct Mlp {
  Tensor w1 = random_tensor({24, 40}, float32, 11, -0.5, 0.5), b1 = random_tensor({40}, float32, 12);
  Tensor w2 = random_tensor({40, 12}, float32, 13, -0.5, 0.5), b2 = random_tensor({12}, float32, 14);
  Tensor g = random_tensor({12}, float32, 15), beta = random_tensor({12}, float32, 16);
  std::vector<Tensor> operator()(const std::vector<Tensor>& in) const {
    Tensor h = relu(matmul(in[0], w1) + b1);
    Tensor y = matmul(h, w2) + b2;
    return {softmax(y, -1), layer_norm(y, g, beta, 1e-5), tanh(in[0]) * 0.5f};
  }
};

TEST(Symbolic, EveryBatchSizeRunsOnTheFirstCompile) {
  Mlp mlp;
  Jit f([&](const std::vector<Tensor>& in) { return mlp(in); }, {{Dim("batch"), 24}});
  auto check = [&](int64_t n) {
    Tensor x = random_tensor({n, 24}, float32, uint32_t(100 + n));
    std::vector<Tensor> got = f({x});
    EXPECT_TRUE(testing::MatchesInterpreter(mlp({x}), got)) << "batch " << n;
  };
  // The first call compiles: its own size (1, where the batch axis vanishes from the views, so
  // its code is its own) and the code of the probe size that every larger size shares.
  reset_stats();
  check(1);
  EXPECT_GT(stats().kernels_compiled + stats().kernel_disk_cache_hits, 0);
  std::vector<int64_t> sizes;
  for (int64_t n = 2; n <= 40; ++n) sizes.push_back(n);
  for (int64_t n : {63, 64, 65, 127, 128, 129, 255, 256, 257, 500, 999, 1000, 1024, 2047, 4096}) sizes.push_back(n);
  reset_stats();
  for (int64_t n : sizes) check(n);
  // Neither compiled nor read from the disk cache (a warm cache would hide a size of its own).
  EXPECT_EQ(stats().kernels_compiled + stats().kernel_disk_cache_hits, 0) << "a size has code of its own";
  EXPECT_GT(stats().kernels_reused, 0);
  // Size 1's executable runs its own code; the sizes after it share the executable of size 2:
  // every size after 2 resizes it.
  EXPECT_EQ(stats().executables_resized, int64_t(sizes.size()) - 1);
  EXPECT_EQ(f.traces(), int(sizes.size()) + 1);
  // A size seen before replays without tracing or compiling.
  reset_stats();
  check(7);
  EXPECT_EQ(stats().kernels_compiled + stats().kernels_reused + stats().executables_built, 0);
}

TEST(Symbolic, AFirstCallAtALargeSizeProbesAtThatSize) {
  // From 256 up, the first call's own size is a probe: smaller and larger sizes share its code.
  Mlp mlp;
  Jit f([&](const std::vector<Tensor>& in) { return mlp(in); }, {{Dim("batch"), 24}});
  for (int64_t n : {300, 7, 1000, 2}) {
    Tensor x = random_tensor({n, 24}, float32, uint32_t(500 + n));
    EXPECT_TRUE(testing::MatchesInterpreter(mlp({x}), f({x}))) << n;
    if (n == 300) reset_stats();
  }
  EXPECT_EQ(stats().kernels_compiled + stats().kernel_disk_cache_hits, 0);
}

TEST(Symbolic, HalfPrecisionMatmulsShareCodeToo) {
  // 16-bit products of 16-byte rows: the tensor-core kernels with the batch read at run time (on
  // an H100 the Hopper GEMM, with KILN_CUDA_SM90_GEMM=0 the sm_80 one; on Vulkan f16 the
  // cooperative-matrix kernel where the device has one).
  for (DType dt : {bfloat16, float16}) {
    Tensor w1 = random_tensor({256, 512}, dt, 21, -0.1, 0.1), b1 = random_tensor({512}, dt, 22);
    Tensor w2 = random_tensor({512, 256}, dt, 23, -0.1, 0.1);
    auto block = [&](const Tensor& x) { return x + matmul(gelu(matmul(x, w1) + b1, true), w2); };
    Jit f([&](const std::vector<Tensor>& in) { return std::vector<Tensor>{block(in[0])}; }, {{Dim("batch"), 256}});
    bool first = true;
    for (int64_t n : {3, 130, 64, 300, 1000, 129, 2}) {
      Tensor x = random_tensor({n, 256}, dt, uint32_t(200 + n));
      std::vector<Tensor> got = f({x});
      EXPECT_TRUE(testing::MatchesInterpreter({block(x)}, got, {2e-2, 2e-2})) << dtype_name(dt) << " batch " << n;
      if (first) reset_stats();
      first = false;
    }
    EXPECT_EQ(stats().kernels_compiled + stats().kernel_disk_cache_hits, 0) << dtype_name(dt);
  }
}

TEST(Symbolic, TwoInputsShareASymbolAndOthersStayFixed) {
  Jit f([](const std::vector<Tensor>& in) { return std::vector<Tensor>{sum(in[0] * in[1], {1}) + in[2]}; },
        {{Dim("rows"), 16}, {Dim("rows"), 16}, {}});
  Tensor bias = random_tensor({1}, float32, 3);
  for (int64_t n : {3, 9, 300}) {
    Tensor a = random_tensor({n, 16}, float32, uint32_t(n)), b = random_tensor({n, 16}, float32, uint32_t(n + 1));
    std::vector<Tensor> got = f({a, b, bias});
    EXPECT_TRUE(testing::MatchesInterpreter({sum(a * b, {1}) + bias}, got)) << n;
    if (n == 3) reset_stats();
  }
  EXPECT_EQ(stats().kernels_compiled + stats().kernel_disk_cache_hits, 0);
}

TEST(Symbolic, InputsThatDoNotFitTheDeclaredDimsAreRefused) {
  Jit f([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] + in[1]}; },
        {{Dim("batch"), 8}, {Dim("batch"), 8}});
  auto message = [&](const std::vector<Tensor>& in) -> std::string {
    try {
      f(in);
    } catch (const Error& e) {
      EXPECT_EQ(e.status().code(), absl::StatusCode::kInvalidArgument);
      return e.what();
    }
    return "no error";
  };
  EXPECT_EQ(message({zeros({7, 8}), zeros({8, 8})}),
            "jit: symbolic dimension 'batch' is 7 at input 0 dim 0 and 8 at input 1 dim 0");
  EXPECT_EQ(message({zeros({7, 9}), zeros({7, 8})}), "jit: input 0 has shape [7,9]; declared [batch,8] (dim 1 is 9, not 8)");
  EXPECT_EQ(message({zeros({7}), zeros({7, 8})}), "jit: input 0 has shape [7]; declared [batch,8]");
  EXPECT_EQ(message({zeros({7, 8})}), "jit: dims declared for 2 inputs; the call passes 1");
  EXPECT_THROW(Jit([](const std::vector<Tensor>& in) { return in; }, {{Dim(-3)}}), Error);
  // Two symbols combined where they must be equal: the call at equal sizes traces, but the
  // function does not hold for the declared dims.
  Jit mixed([](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] + in[1]}; }, {{Dim("a")}, {Dim("b")}});
  try {
    mixed({random_tensor({6}, float32, 1), random_tensor({6}, float32, 2)});
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()),
              "jit: the function does not hold for its declared symbolic dims: at 'a' = 264, 'b' = 258: "
              "add: shapes [264] and [258] cannot be broadcast together");
  }
  // A good call still works after the refused ones.
  Tensor a = random_tensor({7, 8}, float32, 1), b = random_tensor({7, 8}, float32, 2);
  EXPECT_TRUE(testing::MatchesInterpreter({a + b}, f({a, b})));
}

TEST(Symbolic, NewSizesResizeOneExecutable) {
  // Every size runs through the first size's executable (cuda: the instantiated graph's nodes
  // updated in place; vulkan: the slots' command buffers recorded again; cpu: new tiles), resized
  // when the size changes; alternating sizes resize again, with each size's own values.
  Mlp mlp;
  // A structure of its own (another test's sizes of the plain MLP may still be cached).
  auto fn = [&](const std::vector<Tensor>& in) {
    std::vector<Tensor> out = mlp(in);
    out.push_back(sigmoid(in[0]));
    return out;
  };
  Jit f(fn, {{Dim("batch"), 24}});
  const std::vector<int64_t> sizes = {300, 5, 70, 5, 300, 1000, 70};
  reset_stats();
  for (size_t i = 0; i < sizes.size(); ++i) {
    Tensor x = random_tensor({sizes[i], 24}, float32, uint32_t(700 + i));
    EXPECT_TRUE(testing::MatchesInterpreter(fn({x}), f({x}))) << "call " << i << ", batch " << sizes[i];
  }
  EXPECT_EQ(stats().executables_built, 4) << "one per size";
  EXPECT_EQ(stats().executables_resized, 6) << "every call after the first switches the size";
}

TEST(Symbolic, AttentionSharesItsKernelAcrossBatchSizes) {
  // Causal attention over a symbolic batch (on CUDA the fused attention kernel, whose tile loop
  // reads the batch size): the first call compiles, later batch sizes compile nothing.
  auto fn = [](const std::vector<Tensor>& in) {
    AttentionOptions o;
    o.causal = true;
    return std::vector<Tensor>{scaled_dot_product_attention(in[0], in[1], in[2], o)};
  };
  Dim b("batch");
  Jit f(fn, {{b, 2, 192, 64}, {b, 2, 192, 64}, {b, 2, 192, 64}});
  auto inputs = [](int64_t n, uint32_t seed) {
    std::vector<Tensor> in;
    for (uint32_t i = 0; i < 3; ++i) in.push_back(random_tensor({n, 2, 192, 64}, bfloat16, seed + i, -1, 1));
    return in;
  };
  std::vector<Tensor> first = inputs(3, 10);
  EXPECT_TRUE(testing::MatchesInterpreter(fn(first), f(first)));
  reset_stats();
  for (int64_t n : {2, 5, 9}) {
    std::vector<Tensor> in = inputs(n, uint32_t(20 * n));
    EXPECT_TRUE(testing::MatchesInterpreter(fn(in), f(in))) << "batch " << n;
  }
  EXPECT_EQ(stats().kernels_compiled + stats().kernel_disk_cache_hits, 0) << "a batch size compiled code of its own";
}

TEST(Symbolic, ThreadsCallingWithDifferentSizesGetTheirOwnValues) {
  Mlp mlp;
  Jit f([&](const std::vector<Tensor>& in) { return mlp(in); }, {{Dim("batch"), 24}});
  std::vector<Tensor> xs;
  for (int64_t n : {2, 9, 33, 70}) xs.push_back(random_tensor({n, 24}, float32, uint32_t(300 + n)));
  std::vector<std::vector<Tensor>> got(xs.size());
  std::vector<std::thread> threads;
  for (size_t i = 0; i < xs.size(); ++i)
    threads.emplace_back([&, i] {
      for (int r = 0; r < 3; ++r) got[i] = f({xs[i]});
    });
  for (std::thread& t : threads) t.join();
  for (size_t i = 0; i < xs.size(); ++i) EXPECT_TRUE(testing::MatchesInterpreter(mlp({xs[i]}), got[i])) << i;
}

TEST(Symbolic, SizesStayWithinTheExecutableCacheBudget) {
  // Each size's executable counts against the cache's budget: a budget of two entries evicts the
  // older sizes' executables (their arenas freed) while the code stays shared and the values right.
  const int64_t budget = executable_cache_budget();
  Mlp mlp;
  Jit f([&](const std::vector<Tensor>& in) { return mlp(in); }, {{Dim("batch"), 24}});
  set_executable_cache_budget(2 * (64 << 10));
  reset_stats();
  for (int64_t n = 2; n < 14; ++n) {
    Tensor x = random_tensor({n, 24}, float32, uint32_t(400 + n));
    EXPECT_TRUE(testing::MatchesInterpreter(mlp({x}), f({x}))) << n;
  }
  EXPECT_GT(stats().executables_evicted, 0);
  EXPECT_LE(stats().executable_cache_bytes, 2 * (64 << 10));
  set_executable_cache_budget(budget);
}

TEST(Symbolic, AFunctionThatPlansPerSizeStillComputesEverySize) {
  // A sum over the symbolic axis: its reduce extent changes with the size, so each size
  // compiles its own kernel, with the right values.
  Jit f([](const std::vector<Tensor>& in) { return std::vector<Tensor>{sum(in[0], {0})}; }, {{Dim("n"), 4}});
  for (int64_t n : {2, 5, 33}) {
    Tensor x = random_tensor({n, 4}, float32, uint32_t(n));
    EXPECT_TRUE(testing::MatchesInterpreter({sum(x, {0})}, f({x}))) << n;
  }
}

}  // namespace
}  // namespace kiln

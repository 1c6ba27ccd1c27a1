// Test helpers: compare what a device computes with the reference interpreter.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "kiln/kiln.h"

namespace kiln::testing {

struct Tolerance {
  double rtol = -1, atol = -1;  // < 0: the default for the dtype
};

// Captures the graph of `outs`, checks that its IR text round-trips byte for byte, evaluates it
// with the reference interpreter, realizes `outs` on their device as one graph, and compares
// every element (NaN must match NaN, infinities must match exactly, integers exactly).
::testing::AssertionResult MatchesReference(const std::vector<Tensor>& outs, Tolerance tol = {});
// Compares `got` (computed some other way, e.g. by a kiln::Jit) with the interpreter's values of
// the unrealized tensors `lazy` (the same computation recorded eagerly; they are not realized).
::testing::AssertionResult MatchesInterpreter(const std::vector<Tensor>& lazy, const std::vector<Tensor>& got,
                                              Tolerance tol = {});

// Random host data, never all zeros: uniform in [lo, hi).
std::vector<float> random_floats(size_t n, uint32_t seed, float lo = -2.0f, float hi = 2.0f);
std::vector<int64_t> random_ints(size_t n, uint32_t seed, int64_t lo, int64_t hi);

// A random tensor of any dtype on the default device.
Tensor random_tensor(Shape shape, DType dtype, uint32_t seed, double lo = -2.0, double hi = 2.0);

}  // namespace kiln::testing

#define EXPECT_MATCHES_REFERENCE(...) EXPECT_TRUE(::kiln::testing::MatchesReference(__VA_ARGS__))

// Composites against closed-form values computed here in double precision.
#include <gtest/gtest.h>

#include <cmath>

#include "kiln/kiln.h"
#include "testing/reference.h"

namespace kiln {
namespace {

using testing::random_floats;

constexpr int kRows = 5, kCols = 37;

std::vector<float> data() { return random_floats(kRows * kCols, 42, -4, 4); }

TEST(Composite, SoftmaxAndLogSoftmaxMatchClosedForm) {
  std::vector<float> v = data();
  Tensor x = from_vector(v, {kRows, kCols});
  auto s = softmax(x, 1).to_vector<double>();
  auto ls = log_softmax(x, -1).to_vector<double>();
  for (int r = 0; r < kRows; ++r) {
    double m = -INFINITY, sum = 0;
    for (int c = 0; c < kCols; ++c) m = std::max(m, double(v[r * kCols + c]));
    for (int c = 0; c < kCols; ++c) sum += std::exp(double(v[r * kCols + c]) - m);
    double total = 0;
    for (int c = 0; c < kCols; ++c) {
      double want = std::exp(double(v[r * kCols + c]) - m) / sum;
      EXPECT_NEAR(s[r * kCols + c], want, 1e-6);
      EXPECT_NEAR(ls[r * kCols + c], std::log(want), 1e-5);
      total += s[r * kCols + c];
    }
    EXPECT_NEAR(total, 1.0, 1e-5);
  }
  // Axis 0 as well, through the interpreter.
  EXPECT_MATCHES_REFERENCE({softmax(x, 0), log_softmax(x, 0)});
}

TEST(Composite, LayerNormAndRmsNormMatchClosedForm) {
  std::vector<float> v = data();
  std::vector<float> w = random_floats(kCols, 7, 0.5, 1.5), bvec = random_floats(kCols, 8);
  Tensor x = from_vector(v, {kRows, kCols});
  Tensor weight = from_vector(w, {kCols}), bias = from_vector(bvec, {kCols});
  auto ln = layer_norm(x, weight, bias, 1e-5).to_vector<double>();
  auto rn = rms_norm(x, weight, 1e-6).to_vector<double>();
  for (int r = 0; r < kRows; ++r) {
    double mean = 0, var = 0, ms = 0;
    for (int c = 0; c < kCols; ++c) mean += v[r * kCols + c] / double(kCols);
    for (int c = 0; c < kCols; ++c) {
      double d = v[r * kCols + c] - mean;
      var += d * d / kCols;
      ms += double(v[r * kCols + c]) * v[r * kCols + c] / kCols;
    }
    for (int c = 0; c < kCols; ++c) {
      double want = (v[r * kCols + c] - mean) / std::sqrt(var + 1e-5) * w[c] + bvec[c];
      EXPECT_NEAR(ln[r * kCols + c], want, 2e-5);
      double want_rms = v[r * kCols + c] / std::sqrt(ms + 1e-6) * w[c];
      EXPECT_NEAR(rn[r * kCols + c], want_rms, 2e-5);
    }
  }
}

TEST(Composite, GeluSiluSigmoidMatchClosedForm) {
  std::vector<float> v = data();
  Tensor x = from_vector(v, {kRows, kCols});
  auto g = gelu(x).to_vector<double>();
  auto gt = gelu(x, true).to_vector<double>();
  auto si = silu(x).to_vector<double>();
  for (size_t i = 0; i < v.size(); ++i) {
    double a = v[i];
    EXPECT_NEAR(g[i], 0.5 * a * (1 + std::erf(a / std::sqrt(2.0))), 1e-5);
    EXPECT_NEAR(gt[i], 0.5 * a * (1 + std::tanh(std::sqrt(2 / M_PI) * (a + 0.044715 * a * a * a))), 1e-5);
    EXPECT_NEAR(si[i], a / (1 + std::exp(-a)), 1e-5);
  }
}

TEST(Composite, NormsOverSeveralTrailingAxes) {
  Tensor x = testing::random_tensor({3, 4, 5}, float32, 9);
  Tensor w = testing::random_tensor({4, 5}, float32, 10);
  Tensor b = testing::random_tensor({4, 5}, float32, 11);
  EXPECT_MATCHES_REFERENCE({layer_norm(x, w, b), rms_norm(x, w)});
}

}  // namespace
}  // namespace kiln

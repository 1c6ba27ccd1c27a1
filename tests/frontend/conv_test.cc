// Convolution and pooling: values against a direct loop written here (the independent check of
// the window arithmetic) and against the reference interpreter on the test's device, kernel
// counts (conv + bias + relu and every pooling are one kernel, on the CPU and on a GPU target,
// where the windows are read in place: no im2col copy), and record-time errors.
#include <gtest/gtest.h>

#include <cmath>

#include "passes/helpers.h"
#include "testing/error_of.h"
#include "testing/reference.h"

namespace kiln {
namespace {

using testing::error_of;
using testing::program_of;

// A host tensor viewed as [N, C, D, H, W] (1-D and 2-D cases have trailing unit dims).
struct Host {
  Shape shape;  // the real shape
  std::vector<float> v;
  int64_t dim(size_t d) const { return d < shape.size() ? shape[d] : 1; }
  float at(int64_t n, int64_t c, int64_t z, int64_t y, int64_t x) const {
    return v[size_t((((n * dim(1) + c) * dim(2) + z) * dim(3) + y) * dim(4) + x)];
  }
};

Host host(const Tensor& t) { return {t.shape(), t.to_vector<float>()}; }
Tensor rnd(Shape s, uint32_t seed) { return testing::random_tensor(std::move(s), float32, seed); }

// Per spatial dim, filled to three dims (the missing ones trivial).
struct Win {
  int64_t k[3] = {1, 1, 1}, s[3] = {1, 1, 1}, d[3] = {1, 1, 1}, lo[3] = {0, 0, 0}, hi[3] = {0, 0, 0};
};
Win win(size_t n, const std::vector<int64_t>& k, const std::vector<int64_t>& s, const std::vector<int64_t>& dil,
        const std::vector<std::pair<int64_t, int64_t>>& pad) {
  Win w;
  for (size_t i = 0; i < n; ++i) {
    w.k[i] = k.empty() ? 1 : k[i];
    w.s[i] = s.empty() ? 1 : s[i];
    w.d[i] = dil.empty() ? 1 : dil[i];
    w.lo[i] = pad.empty() ? 0 : pad[i].first;
    w.hi[i] = pad.empty() ? 0 : pad[i].second;
  }
  return w;
}

// Calls f(at, k) for every kernel cell k of the window at output (a, b, c): at = o * s + k * d - lo.
template <typename F>
void for_window(const Win& p, int64_t a, int64_t b, int64_t c, F f) {
  for (int64_t ka = 0; ka < p.k[0]; ++ka)
    for (int64_t kb = 0; kb < p.k[1]; ++kb)
      for (int64_t kc = 0; kc < p.k[2]; ++kc) {
        const int64_t at[3] = {a * p.s[0] + ka * p.d[0] - p.lo[0], b * p.s[1] + kb * p.d[1] - p.lo[1],
                               c * p.s[2] + kc * p.d[2] - p.lo[2]};
        const int64_t k[3] = {ka, kb, kc};
        f(at, k);
      }
}
bool inside(const int64_t at[3], const int64_t size[3]) {
  for (int i = 0; i < 3; ++i)
    if (at[i] < 0 || at[i] >= size[i]) return false;
  return true;
}

void expect_near(const std::vector<float>& got, const std::vector<float>& want, const Shape& got_shape,
                 const Shape& want_shape, double tol = 1e-4) {
  ASSERT_EQ(shape_str(got_shape), shape_str(want_shape));
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]) << "at " << i;
      continue;
    }
    ASSERT_NEAR(got[i], want[i], tol + tol * std::fabs(want[i])) << "at " << i;
  }
}

// The direct loop: y[n, co, o] = sum over the group's channels and the kernel of
// x[n, ci, o * s + k * d - lo] * w[co, ci, k].
void check_conv(const Tensor& x, const Tensor& w, const ConvOptions& o, const Tensor& y, double tol = 1e-4) {
  size_t sp = x.shape().size() - 2;
  Host X = host(x), W = host(w);
  Win p = win(sp, std::vector<int64_t>(w.shape().begin() + 2, w.shape().end()), o.strides, o.dilation, o.padding);
  int64_t G = o.groups, Cout = W.dim(0), Cg = W.dim(1), Cog = Cout / G, out[3];
  Shape want_shape = {X.dim(0), Cout};
  for (size_t i = 0; i < 3; ++i) {
    out[i] = (X.dim(i + 2) + p.lo[i] + p.hi[i] - p.d[i] * (p.k[i] - 1) - 1) / p.s[i] + 1;
    if (i < sp) want_shape.push_back(out[i]);
  }
  std::vector<float> want;
  for (int64_t n = 0; n < X.dim(0); ++n)
    for (int64_t co = 0; co < Cout; ++co)
      for (int64_t a = 0; a < out[0]; ++a)
        for (int64_t b = 0; b < out[1]; ++b)
          for (int64_t c = 0; c < out[2]; ++c) {
            double acc = 0;
            const int64_t size[3] = {X.dim(2), X.dim(3), X.dim(4)};
            for (int64_t ci = 0; ci < Cg; ++ci)
              for_window(p, a, b, c, [&](const int64_t at[3], const int64_t k[3]) {
                if (inside(at, size))
                  acc += double(X.at(n, co / Cog * Cg + ci, at[0], at[1], at[2])) * W.at(co, ci, k[0], k[1], k[2]);
              });
            want.push_back(float(acc));
          }
  expect_near(y.to_vector<float>(), want, y.shape(), want_shape, tol);
}

// y[n, co, i * s + k * d - lo] += x[n, ci, i] * w[ci, co % (C_out / G), k] over the group's ci.
void check_conv_transpose(const Tensor& x, const Tensor& w, const ConvTransposeOptions& o, const Tensor& y) {
  size_t sp = x.shape().size() - 2;
  Host X = host(x), W = host(w);
  Win p = win(sp, std::vector<int64_t>(w.shape().begin() + 2, w.shape().end()), o.strides, o.dilation, o.padding);
  int64_t G = o.groups, Cin = X.dim(1), Cig = Cin / G, Cog = W.dim(1), Cout = Cog * G, out[3];
  Shape want_shape = {X.dim(0), Cout};
  for (size_t i = 0; i < 3; ++i) {
    int64_t op = i < sp && !o.output_padding.empty() ? o.output_padding[i] : 0;
    out[i] = (X.dim(i + 2) - 1) * p.s[i] - p.lo[i] - p.hi[i] + p.d[i] * (p.k[i] - 1) + op + 1;
    if (i < sp) want_shape.push_back(out[i]);
  }
  std::vector<double> acc(size_t(X.dim(0) * Cout * out[0] * out[1] * out[2]), 0.0);
  for (int64_t n = 0; n < X.dim(0); ++n)
    for (int64_t ci = 0; ci < Cin; ++ci)
      for (int64_t a = 0; a < X.dim(2); ++a)
        for (int64_t b = 0; b < X.dim(3); ++b)
          for (int64_t c = 0; c < X.dim(4); ++c)
            for (int64_t cl = 0; cl < Cog; ++cl)
              for_window(p, a, b, c, [&](const int64_t at[3], const int64_t k[3]) {
                if (!inside(at, out)) return;
                int64_t co = ci / Cig * Cog + cl;
                acc[size_t((((n * Cout + co) * out[0] + at[0]) * out[1] + at[1]) * out[2] + at[2])] +=
                    double(X.at(n, ci, a, b, c)) * W.at(ci, cl, k[0], k[1], k[2]);
              });
  std::vector<float> want(acc.begin(), acc.end());
  expect_near(y.to_vector<float>(), want, y.shape(), want_shape);
}

enum class Pool { kMax, kAvg, kLp };

// Pooling output sizes; ceil_mode drops a window starting after the input.
void pool_sizes(const Host& X, const Win& p, bool ceil_mode, int64_t out[3]) {
  for (size_t i = 0; i < 3; ++i) {
    int64_t span = X.dim(i + 2) + p.lo[i] + p.hi[i] - p.d[i] * (p.k[i] - 1) - 1;
    out[i] = (ceil_mode ? (span + p.s[i] - 1) / p.s[i] : span / p.s[i]) + 1;
    if (ceil_mode && (out[i] - 1) * p.s[i] >= X.dim(i + 2) + p.lo[i]) --out[i];
  }
}

// Windows over the padded frame; a cell counts when inside the input (and, for the divisor with
// count_include_pad, inside the given padding). ceil_mode drops a window starting after the input.
void check_pool(const Tensor& x, Pool kind, const PoolOptions& o, const Tensor& y, double lp = 2) {
  size_t sp = x.shape().size() - 2;
  Host X = host(x);
  Win p = win(sp, o.kernel, o.strides, o.dilation, o.padding);
  int64_t out[3];
  pool_sizes(X, p, o.ceil_mode, out);
  Shape want_shape = {X.dim(0), X.dim(1)};
  for (size_t i = 0; i < sp; ++i) want_shape.push_back(out[i]);
  std::vector<float> want;
  for (int64_t n = 0; n < X.dim(0); ++n)
    for (int64_t c = 0; c < X.dim(1); ++c)
      for (int64_t a = 0; a < out[0]; ++a)
        for (int64_t b = 0; b < out[1]; ++b)
          for (int64_t e = 0; e < out[2]; ++e) {
            double best = -INFINITY, sum = 0, count = 0;
            for_window(p, a, b, e, [&](const int64_t at[3], const int64_t*) {
              bool in = true, in_pad = true;
              for (int i = 0; i < 3; ++i) {
                in = in && at[i] >= 0 && at[i] < X.dim(i + 2);
                in_pad = in_pad && at[i] >= -p.lo[i] && at[i] < X.dim(i + 2) + p.hi[i];
              }
              if (o.count_include_pad ? in_pad : in) count += 1;
              if (!in) return;
              double v = X.at(n, c, at[0], at[1], at[2]);
              best = std::max(best, v);
              sum += kind == Pool::kLp ? std::pow(std::fabs(v), lp) : v;
            });
            want.push_back(float(kind == Pool::kMax ? best : kind == Pool::kAvg ? sum / count : std::pow(sum, 1 / lp)));
          }
  expect_near(y.to_vector<float>(), want, y.shape(), want_shape);
}

template <typename Options>
struct Case {
  Shape x, w;
  Options o;
};

// op(x, w, options) over random operands of each case, checked by `check` and the interpreter.
template <typename Options, typename Op, typename Check>
void check_cases(const std::vector<Case<Options>>& cases, uint32_t seed, Op op, Check check) {
  for (const Case<Options>& c : cases) {
    SCOPED_TRACE(shape_str(c.x) + " * " + shape_str(c.w));
    Tensor x = rnd(c.x, seed++), w = rnd(c.w, seed++);
    Tensor y = op(x, w, c.o);
    check(x, w, c.o, y);
    EXPECT_MATCHES_REFERENCE({y});
  }
}

TEST(Conv, TwoDimensionalCasesMatchADirectLoop) {
  std::vector<Case<ConvOptions>> cases = {
      {{1, 1, 5, 5}, {1, 1, 3, 3}, {}},
      {{2, 3, 7, 6}, {4, 3, 3, 2}, {{2, 1}, {{1, 2}, {0, 1}}, {}, 1}},     // strides, asymmetric padding
      {{1, 2, 9, 8}, {3, 2, 3, 3}, {{1, 2}, {{2, 2}, {2, 2}}, {2, 3}, 1}},  // dilation
      {{2, 4, 6, 5}, {6, 2, 3, 3}, {{1, 1}, {{1, 1}, {1, 1}}, {}, 2}},      // groups
      {{1, 5, 7, 7}, {5, 1, 3, 3}, {{2, 2}, {{1, 1}, {1, 1}}, {}, 5}},      // depthwise
      {{1, 3, 4, 4}, {8, 3, 1, 1}, {}},                                     // pointwise
      {{1, 2, 5, 3}, {2, 2, 5, 3}, {}},                                     // kernel = input: one output
  };
  check_cases(cases, 10, [](const Tensor& x, const Tensor& w, const ConvOptions& o) { return conv(x, w, o); },
              [](const Tensor& x, const Tensor& w, const ConvOptions& o, const Tensor& y) { check_conv(x, w, o, y); });
}

// 16-bit operands accumulate in f32 (the contraction's rule); on CUDA sm_80+ this is the
// tensor-core kernel staging the windows element by element.
TEST(Conv, SixteenBitOperands) {
  for (DType t : {bfloat16, float16}) {
    Tensor x = testing::random_tensor({2, 16, 9, 8}, t, 20), w = testing::random_tensor({32, 8, 3, 3}, t, 21);
    ConvOptions o{{1, 2}, {{1, 1}, {1, 0}}, {}, 2};
    Tensor y = conv(x, w, o);
    EXPECT_EQ(y.dtype(), t);
    check_conv(cast(x, float32), cast(w, float32), o, cast(y, float32), 0.06);
    EXPECT_MATCHES_REFERENCE({y});
  }
}

// Integer convolutions accumulate in their dtype (exact here: small values).
TEST(Conv, Int32) {
  Tensor x = testing::random_tensor({2, 4, 6, 5}, int32, 22, -9, 9), w = testing::random_tensor({6, 2, 3, 2}, int32, 23, -9, 9);
  ConvOptions o{{2, 1}, {{1, 1}, {0, 1}}, {1, 2}, 2};
  Tensor y = conv(x, w, o);
  EXPECT_EQ(y.dtype(), int32);
  check_conv(x, w, o, y);
  EXPECT_MATCHES_REFERENCE({y});
}

TEST(Conv, OneAndThreeDimensional) {
  Tensor x1 = rnd({2, 3, 11}, 1), w1 = rnd({4, 3, 3}, 2);
  ConvOptions o1{{2}, {{1, 0}}, {2}, 1};
  check_conv(x1, w1, o1, conv(x1, w1, o1));
  EXPECT_MATCHES_REFERENCE({conv(x1, w1, o1)});
  Tensor x3 = rnd({1, 2, 4, 5, 3}, 3), w3 = rnd({4, 1, 2, 3, 2}, 4);
  ConvOptions o3{{1, 2, 1}, {{1, 0}, {1, 1}, {0, 1}}, {1, 1, 2}, 2};
  check_conv(x3, w3, o3, conv(x3, w3, o3));
  EXPECT_MATCHES_REFERENCE({conv(x3, w3, o3)});
}

TEST(Conv, TransposedMatchesADirectLoop) {
  std::vector<Case<ConvTransposeOptions>> cases = {
      {{1, 1, 3, 3}, {1, 2, 3, 3}, {}},
      {{1, 1, 3, 3}, {1, 2, 3, 3}, {{3, 2}, {{1, 1}, {2, 2}}, {}, 1, {}, {}}},
      {{2, 4, 4, 3}, {4, 3, 2, 3}, {{2, 2}, {{0, 1}, {1, 0}}, {1, 2}, 2, {1, 1}, {}}},
      {{1, 2, 5}, {2, 3, 3}, {{3}, {{0, 0}}, {2}, 1, {2}, {}}},
      {{1, 2, 2, 3, 2}, {2, 1, 2, 2, 2}, {{2, 1, 2}, {}, {}, 2, {}, {}}},
      {{1, 2, 4}, {2, 1, 2}, {{2}, {{2, 1}}, {}, 1, {1}, {}}},  // padding beyond dilation * (K - 1): a crop
  };
  check_cases(cases, 40,
              [](const Tensor& x, const Tensor& w, const ConvTransposeOptions& o) { return conv_transpose(x, w, o); },
              check_conv_transpose);
  // output_size picks the output padding.
  Tensor x = rnd({1, 1, 3, 3}, 60), w = rnd({1, 1, 3, 3}, 61);
  ConvTransposeOptions o;
  o.strides = {2, 2};
  o.output_size = {8, 7};
  EXPECT_EQ(shape_str(conv_transpose(x, w, o).shape()), "[1,1,8,7]");
  o.output_size = {9, 7};
  EXPECT_EQ(error_of([&] { (void)conv_transpose(x, w, o); }),
            "conv_transpose: output padding 2 of spatial dim 0 must be in [0, max(stride, dilation)) (output_size 9)");
}

TEST(Pool, MaxAverageAndLpMatchADirectLoop) {
  std::vector<PoolOptions> cases = {
      {{3, 3}, {}, {}, {}, false, false},
      {{3, 2}, {2, 2}, {{1, 1}, {0, 1}}, {}, false, false},
      {{3, 3}, {2, 2}, {{1, 1}, {1, 1}}, {}, true, false},  // ceil_mode
      {{3, 3}, {2, 2}, {{1, 1}, {1, 1}}, {}, true, true},   // ceil_mode, count_include_pad
      {{2, 2}, {1, 2}, {{1, 0}, {1, 1}}, {2, 2}, false, true},
      {{2, 3}, {3, 2}, {}, {}, true, false},                // ceil_mode's last window is ragged
  };
  Tensor x = rnd({2, 3, 7, 8}, 70);
  for (const PoolOptions& o : cases) {
    SCOPED_TRACE(shape_str(o.kernel) + " strides " + shape_str(o.strides) + (o.ceil_mode ? " ceil" : "") +
                 (o.count_include_pad ? " include_pad" : ""));
    check_pool(x, Pool::kMax, o, max_pool(x, o));
    check_pool(x, Pool::kAvg, o, avg_pool(x, o));
    check_pool(x, Pool::kLp, o, lp_pool(x, 2, o));
    check_pool(x, Pool::kLp, o, lp_pool(x, 3, o), 3);
    EXPECT_MATCHES_REFERENCE({max_pool(x, o), avg_pool(x, o), lp_pool(x, 3, o)});
  }
  Tensor x1 = rnd({1, 2, 10}, 71);
  PoolOptions o1{{3}, {2}, {{1, 1}}, {}, true, false};
  check_pool(x1, Pool::kAvg, o1, avg_pool(x1, o1));
  Tensor x3 = rnd({1, 2, 4, 5, 6}, 72);
  PoolOptions o3{{2, 2, 3}, {2, 1, 2}, {{0, 1}, {1, 0}, {1, 1}}, {}, false, false};
  check_pool(x3, Pool::kMax, o3, max_pool(x3, o3));
  check_pool(x3, Pool::kAvg, o3, avg_pool(x3, o3));
}

// The first maximum of each window in window order, numbered row-major over [N, C, S...] or with
// the spatial dims column-major; ties are common in the small-integer input.
void check_indices(const Tensor& x, const PoolOptions& o) {
  Host X = host(cast(x, float32));
  size_t sp = x.shape().size() - 2;
  Win p = win(sp, o.kernel, o.strides, o.dilation, o.padding);
  Tensor got_row = max_pool_indices(x, o), got_col = max_pool_indices(x, o, true);
  std::vector<int64_t> row, col;
  int64_t out[3], plane = X.dim(2) * X.dim(3) * X.dim(4);
  pool_sizes(X, p, o.ceil_mode, out);
  for (int64_t n = 0; n < X.dim(0); ++n)
    for (int64_t c = 0; c < X.dim(1); ++c)
      for (int64_t a = 0; a < out[0]; ++a)
        for (int64_t b = 0; b < out[1]; ++b)
          for (int64_t e = 0; e < out[2]; ++e) {
            float best = -INFINITY;
            int64_t r = -1, cm = -1;
            const int64_t size[3] = {X.dim(2), X.dim(3), X.dim(4)};
            for_window(p, a, b, e, [&](const int64_t at[3], const int64_t*) {
              if (!inside(at, size)) return;
              float v = X.at(n, c, at[0], at[1], at[2]);
              if (r >= 0 && !(v > best)) return;
              best = v;
              int64_t base = (n * X.dim(1) + c) * plane;
              r = base + (at[0] * X.dim(3) + at[1]) * X.dim(4) + at[2];
              // Column-major over the real spatial dims only.
              int64_t sp_col = 0, mult = 1;
              for (size_t i = 0; i < sp; ++i) {
                sp_col += at[i] * mult;
                mult *= X.dim(i + 2);
              }
              cm = base + sp_col;
            });
            row.push_back(r);
            col.push_back(cm);
          }
  EXPECT_EQ(got_row.to_vector<int64_t>(), row);
  EXPECT_EQ(got_col.to_vector<int64_t>(), col);
  EXPECT_EQ(got_row.shape(), max_pool(x, o).shape());
  EXPECT_MATCHES_REFERENCE({got_row, got_col});
}

TEST(Pool, MaxPoolIndicesAreTheFirstMaximum) {
  Tensor ties = cast(testing::random_tensor({2, 3, 7, 6}, int32, 5, -3, 3), float32);
  for (const PoolOptions& o : std::vector<PoolOptions>{{{3, 3}, {2, 2}, {{1, 1}, {1, 1}}, {}, true, false},
                                                       {{2, 3}, {1, 2}, {{0, 1}, {1, 1}}, {2, 1}, false, false}}) {
    check_indices(ties, o);
    check_indices(rnd({1, 2, 7, 6}, 6), o);
  }
  check_indices(cast(testing::random_tensor({1, 2, 9}, int32, 7, 0, 4), float32), {{3}, {2}, {{1, 1}}, {}, true, false});
  check_indices(rnd({1, 1, 3, 4, 5}, 8), {{2, 2, 2}, {1, 2, 2}, {{0, 1}, {1, 0}, {1, 1}}, {}, false, false});
}

TEST(Pool, MaxPoolOfIntegersNeverPicksThePadding) {
  Tensor x = from_vector<int32_t>({-5, -7, -9, -2, -4, -6}, {1, 1, 2, 3});
  PoolOptions o{{2, 2}, {1, 1}, {{1, 1}, {1, 1}}, {}, false, false};
  EXPECT_EQ(max_pool(x, o).to_vector<int32_t>(),
            (std::vector<int32_t>{-5, -5, -7, -9, -2, -2, -4, -6, -2, -2, -4, -6}));
  EXPECT_MATCHES_REFERENCE({max_pool(x, o)});
}

// conv + bias + relu is one kernel on the CPU and on a GPU target: the contraction reads the
// padded windows in place and the epilogue is fused. No operand is copied out (an im2col buffer
// would be a second kernel).
TEST(Conv, ConvBiasReluIsOneKernel) {
  Tensor x = rnd({2, 8, 13, 11}, 80), w = rnd({16, 4, 3, 3}, 81), b = rnd({16}, 82);
  ConvOptions o{{2, 1}, {{1, 1}, {1, 1}}, {1, 2}, 2};
  auto net = [&] { return relu(conv(x, w, o) + reshape(b, {1, 16, 1, 1})); };
  EXPECT_EQ(program_of({net()}).kernels.size(), 1u);
  EXPECT_EQ(program_of({net()}, testing::gpu_target()).kernels.size(), 1u);
  EXPECT_MATCHES_REFERENCE({net()});
  reset_stats();
  realize({net()});
  EXPECT_EQ(stats().kernels_launched, 1);  // on the test's device
  ConvTransposeOptions t;
  t.strides = {2, 2};
  t.padding = {{1, 1}, {0, 0}};
  Tensor wt = rnd({8, 3, 3, 3}, 83);
  EXPECT_EQ(program_of({relu(conv_transpose(x, wt, t))}).kernels.size(), 1u);
  // On a GPU the flipped, regrouped weights (a stack of views) are copied once, as any matmul
  // operand that is not one strided view is: the only intermediate is the weights' size.
  ir::Program gpu = program_of({relu(conv_transpose(x, wt, t))}, testing::gpu_target());
  EXPECT_EQ(gpu.kernels.size(), 2u);
  for (const ir::BufferDesc& b : gpu.buffers) {
    if (b.kind != ir::BufferKind::kIntermediate) continue;
    EXPECT_EQ(shape_numel(b.shape), wt.numel());
  }
}

TEST(Pool, EveryPoolIsOneKernel) {
  Tensor x = rnd({2, 3, 9, 10}, 90);
  PoolOptions o{{3, 3}, {2, 2}, {{1, 1}, {1, 1}}, {}, true, false};  // divisors differ at the edges
  for (const Tensor& y : {max_pool(x, o), avg_pool(x, o), lp_pool(x, 2, o)}) {
    EXPECT_EQ(program_of({y}).kernels.size(), 1u);
    EXPECT_EQ(program_of({y}, testing::gpu_target()).kernels.size(), 1u);
  }
}

TEST(Conv, ErrorsAreReportedAtRecordTime) {
  Tensor x = zeros({1, 4, 5, 5});
  EXPECT_EQ(error_of([&] { (void)conv(x, zeros({2, 3, 3, 3})); }),
            "conv: input [1,4,5,5] and weight [2,3,3,3] do not match 1 group(s): expected weight [C_out, 4, ...] with "
            "C_out divisible by the groups");
  EXPECT_EQ(error_of([&] { (void)conv(x, zeros({3, 2, 3, 3}), {{}, {}, {}, 2}); }),
            "conv: input [1,4,5,5] and weight [3,2,3,3] do not match 2 group(s): expected weight [C_out, 2, ...] with "
            "C_out divisible by the groups");
  EXPECT_EQ(error_of([&] { (void)conv(x, zeros({2, 4, 7, 3})); }),
            "conv: window of extent 7 (kernel 7, dilation 1) is larger than spatial dim 0 of [1,4,5,5] padded to 5");
  EXPECT_EQ(error_of([&] { (void)conv(x, zeros({2, 4, 3, 3}), {{}, {}, {3, 1}, 1}); }),
            "conv: window of extent 7 (kernel 3, dilation 3) is larger than spatial dim 0 of [1,4,5,5] padded to 5");
  EXPECT_EQ(error_of([&] { (void)conv(zeros({4, 5}), zeros({2, 4, 3})); }),
            "conv: input must be [N, C, spatial...] with 1 to 3 spatial dims, got [4,5]");
  EXPECT_EQ(error_of([&] { (void)conv(x, zeros({2, 4, 3})); }),
            "conv: weight [2,4,3] must have the rank of input [1,4,5,5]");
  EXPECT_EQ(error_of([&] { (void)conv(x, zeros({2, 4, 3, 3}), {{1}, {}, {}, 1}); }),
            "conv: strides has 1 values for 2 spatial dims");
  EXPECT_EQ(error_of([&] { (void)conv(x, zeros({2, 4, 3, 3}), {{0, 1}, {}, {}, 1}); }),
            "conv: strides [0,1] must be at least 1");
  EXPECT_EQ(error_of([&] { (void)max_pool(x, {{2}, {}, {}, {}, false, false}); }), "max_pool: kernel [2] does not match the 2 spatial dims of [1,4,5,5]");
  EXPECT_EQ(error_of([&] { (void)avg_pool(zeros({1, 1, 4, 4}, int32), {{2, 2}, {}, {}, {}, false, false}); }),
            "avg_pool: needs a floating-point input, got i32");
  EXPECT_EQ(error_of([&] { (void)conv_transpose(x, zeros({3, 2, 3, 3})); }),
            "conv_transpose: input [1,4,5,5] and weight [3,2,3,3] do not match 1 group(s): expected weight [4, C_out / "
            "groups, ...] with 4 divisible by the groups");
}

}  // namespace
}  // namespace kiln

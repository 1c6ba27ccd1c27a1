// Index maps composed from random movement chains must address exactly the elements that the
// reference interpreter's movement ops select.
#include <gtest/gtest.h>

#include <random>

#include "ir/graph.h"
#include "ir/interpreter.h"
#include "ir/view.h"

namespace kiln::ir {
namespace {

struct Chain {
  Graph g;
  NodeId cur;
};

// Applies one random movement op to `c` and returns the view it contributes.
View random_step(Chain* c, std::mt19937* rng) {
  const Node& x = c->g.node(c->cur);
  Shape in = x.shape;
  size_t r = in.size();
  Node n;
  n.dtype = DType::kFloat64;
  n.inputs = {c->cur};
  View v;
  int choice = std::uniform_int_distribution<int>(0, 5)(*rng);
  if (choice == 0 && r > 1) {  // permute
    std::vector<int64_t> p(r);
    for (size_t i = 0; i < r; ++i) p[i] = int64_t(i);
    std::shuffle(p.begin(), p.end(), *rng);
    n.op = Op::kPermute;
    n.ints = p;
    for (int64_t d : p) n.shape.push_back(in[d]);
    v = permute_view(in, p);
  } else if (choice == 1) {  // slice with steps, possibly negative
    n.op = Op::kSlice;
    for (size_t d = 0; d < r; ++d) {
      int64_t step = std::uniform_int_distribution<int>(1, 2)(*rng) * (std::uniform_int_distribution<int>(0, 2)(*rng) == 0 ? -1 : 1);
      int64_t start = step > 0 ? std::uniform_int_distribution<int64_t>(0, in[d] - 1)(*rng) : in[d] - 1 - std::uniform_int_distribution<int64_t>(0, in[d] - 1)(*rng);
      int64_t count = step > 0 ? (in[d] - start + step - 1) / step : (start + 1 + (-step) - 1) / (-step);
      count = std::uniform_int_distribution<int64_t>(1, count)(*rng);
      n.ints.push_back(start);
      n.ints.push_back(step);
      n.shape.push_back(count);
    }
    v = slice_view(in, n.ints, n.shape);
  } else if (choice == 2) {  // pad
    n.op = Op::kPad;
    n.scalar = Scalar::from_double(-7.0);
    for (size_t d = 0; d < r; ++d) {
      int64_t lo = std::uniform_int_distribution<int>(0, 2)(*rng), hi = std::uniform_int_distribution<int>(0, 2)(*rng);
      n.ints.push_back(lo);
      n.ints.push_back(hi);
      n.shape.push_back(in[d] + lo + hi);
    }
    v = pad_view(in, n.ints);
  } else if (choice == 5 && r <= 2) {  // sliding windows: [D...] -> [O..., K...]
    n.op = Op::kWindow;
    Shape outs, ks;
    for (size_t d = 0; d < r; ++d) {
      int64_t stride = std::uniform_int_distribution<int>(1, 2)(*rng), dil = std::uniform_int_distribution<int>(1, 2)(*rng);
      int64_t k = std::uniform_int_distribution<int64_t>(1, (in[d] - 1) / dil + 1)(*rng);
      int64_t o = std::uniform_int_distribution<int64_t>(1, (in[d] - 1 - (k - 1) * dil) / stride + 1)(*rng);
      n.ints.push_back(stride);
      n.ints.push_back(dil);
      outs.push_back(o);
      ks.push_back(k);
    }
    n.shape = outs;
    n.shape.insert(n.shape.end(), ks.begin(), ks.end());
    v = window_view(in, n.ints, n.shape);
  } else if (choice == 3) {  // reshape: split or merge dims
    n.op = Op::kReshape;
    int64_t numel = shape_numel(in);
    Shape s;
    int64_t rest = numel;
    while (rest > 1 && s.size() < 3) {
      std::vector<int64_t> divs;
      for (int64_t k = 2; k <= rest; ++k)
        if (rest % k == 0) divs.push_back(k);
      int64_t k = divs[std::uniform_int_distribution<size_t>(0, divs.size() - 1)(*rng)];
      s.push_back(k);
      rest /= k;
    }
    if (rest > 1 || s.empty()) s.push_back(rest);
    n.shape = s;
    v = reshape_view(s);
  } else {  // expand a size-1 dim (insert one via reshape when none)
    n.op = Op::kExpand;
    n.shape = in;
    bool any = false;
    for (size_t d = 0; d < r; ++d)
      if (in[d] == 1) {
        n.shape[d] = std::uniform_int_distribution<int>(1, 3)(*rng);
        any = true;
      }
    if (!any) {
      n.op = Op::kReshape;
      n.shape.insert(n.shape.begin(), 1);
      v = reshape_view(n.shape);
    } else {
      v = expand_view(in, n.shape);
    }
  }
  c->cur = c->g.add(n);
  return v;
}

TEST(IndexMap, RandomMovementChainsMatchTheInterpreter) {
  std::mt19937 rng(1234);
  int multi_view = 0;
  for (int trial = 0; trial < 400; ++trial) {
    Chain c;
    Node in;
    in.op = Op::kInput;
    in.dtype = DType::kFloat64;
    in.ints = {0};
    int rank = std::uniform_int_distribution<int>(1, 3)(rng);
    for (int d = 0; d < rank; ++d) in.shape.push_back(std::uniform_int_distribution<int>(1, 5)(rng));
    c.cur = c.g.add(in);
    std::vector<View> steps;
    int len = std::uniform_int_distribution<int>(1, 5)(rng);
    for (int k = 0; k < len; ++k) steps.push_back(random_step(&c, &rng));
    c.g.add_output(c.cur);
    ASSERT_TRUE(verify(c.g).ok()) << print(c.g);
    // Compose top-down, as the scheduler does: start from the result and push each op's view.
    const Shape& out_shape = c.g.node(c.cur).shape;
    IndexMap m = IndexMap::of(View::contiguous(out_shape));
    for (int k = len - 1; k >= 0; --k) m = compose(m, steps[k]);
    if (m.views.size() > 1) ++multi_view;
    HostTensor x = HostTensor::make(DType::kFloat64, in.shape);
    for (int64_t i = 0; i < x.numel(); ++i) x.f[i] = double(i + 1);
    auto out = interpret(c.g, {x});
    ASSERT_TRUE(out.ok());
    std::vector<int64_t> idx(out_shape.size());
    for (int64_t flat = 0; flat < shape_numel(out_shape); ++flat) {
      int64_t f = flat;
      for (int d = int(out_shape.size()) - 1; d >= 0; --d) {
        idx[d] = f % out_shape[d];
        f /= out_shape[d];
      }
      int64_t off = evaluate(m, idx);
      double got = off < 0 ? -7.0 : x.f[off];
      // Pad values inside the chain may be re-sliced; the interpreter is the truth.
      if (off < 0) {
        EXPECT_EQ((*out)[0].f[flat], -7.0) << print(c.g) << m.to_string();
      } else {
        EXPECT_EQ((*out)[0].f[flat], got) << print(c.g) << m.to_string() << " at " << flat;
      }
    }
  }
  EXPECT_GT(multi_view, 0);  // the generator does exercise unmergeable reshapes
}

// A window over a pad is two views (the pad's mask is per padded dim; two window axes walk
// each), and the map reads the pad value exactly where a window cell leaves the input.
TEST(IndexMap, WindowsOverAPadAreTwoViews) {
  Shape in = {5, 4}, padded = {7, 6}, out = {3, 2, 3, 2};
  IndexMap m = IndexMap::of(View::contiguous(out));
  m = compose(m, window_view(padded, {2, 1, 3, 1}, out));
  m = compose(m, pad_view(in, {1, 1, 1, 1}));
  ASSERT_EQ(m.views.size(), 2u);
  for (int64_t oh = 0; oh < 3; ++oh)
    for (int64_t ow = 0; ow < 2; ++ow)
      for (int64_t kh = 0; kh < 3; ++kh)
        for (int64_t kw = 0; kw < 2; ++kw) {
          int64_t h = oh * 2 + kh - 1, w = ow * 3 + kw - 1;
          bool inside = h >= 0 && h < 5 && w >= 0 && w < 4;
          EXPECT_EQ(evaluate(m, {oh, ow, kh, kw}), inside ? h * 4 + w : -1) << oh << ow << kh << kw;
        }
}

TEST(IndexMap, PermuteThenSliceMergesIntoOneView) {
  Shape s = {4, 6};
  IndexMap m = IndexMap::of(View::contiguous({3, 2}));
  m = compose(m, slice_view({6, 4}, {5, -2, 1, 2}, {3, 2}));
  m = compose(m, permute_view(s, {1, 0}));
  ASSERT_EQ(m.views.size(), 1u);
  EXPECT_EQ(m.views[0].strides, (std::vector<int64_t>{-2, 12}));
  EXPECT_EQ(m.views[0].offset, 11);  // (i,j) -> (1+2j)*6 + 5-2i
}

struct T {
  int64_t coef, ext;
  int var;  // which loop index
};

// Unflattens c0 + sum(terms) at index values x the way the code generators do: split where
// split_flat allows, else divide.
void unflatten_at(const std::vector<T>& terms, int64_t c0, const Shape& s, size_t lo, size_t hi,
                  const std::vector<int64_t>& x, std::vector<int64_t>* out, int* splits) {
  int64_t flat = c0;
  for (const T& t : terms) flat += t.coef * x[size_t(t.var)];
  if (hi - lo == 1) {
    (*out)[lo] = flat;
    return;
  }
  FlatSplit<T> sp;
  if (split_flat(terms, c0, s, lo, hi, &sp)) {
    ++*splits;
    unflatten_at(sp.high, sp.high_c0, s, lo, sp.boundary, x, out, splits);
    unflatten_at(sp.low, sp.low_c0, s, sp.boundary, hi, x, out, splits);
    return;
  }
  for (size_t d = hi; d-- > lo;) {
    (*out)[d] = d == lo ? flat : flat % s[d];
    flat /= s[d];
  }
}

// A convolution's window index: k (576 = 64 x 3 x 3) and n (3136 = 56 x 56) merged as
// 3136 k + n and unflattened over [64, 3, 3, 56, 56], then the window's offsets into the padded
// [64, 58, 58] input, then an offset that does not split (the row may carry). Every index value
// gives the coordinates plain division gives, and the splits happen where they should.
TEST(FlatSplit, MatchesDivisionAndSplitsAConvolutionsWindowIndex) {
  const Shape s1 = {64, 3, 3, 56, 56}, s2 = {64, 58, 58};
  std::vector<int64_t> got(5), want(5), got2(3), want2(3);
  int splits1 = 0, splits2 = 0;
  for (int64_t k = 0; k < 576; k += 7)
    for (int64_t n = 0; n < 3136; n += 13) {
      std::vector<int64_t> x = {k, n};
      int sp = 0;
      unflatten_at({{3136, 576, 0}, {1, 3136, 1}}, 0, s1, 0, 5, x, &got, &splits1);
      int64_t flat = 3136 * k + n;
      for (size_t d = 5; d-- > 0;) {
        want[d] = d == 0 ? flat : flat % s1[d];
        flat /= s1[d];
      }
      ASSERT_EQ(got, want) << k << " " << n;
      // The window: 3364 c + 58 kh + kw + 58 oh + ow over the padded input.
      std::vector<int64_t> y = got;
      unflatten_at({{3364, 64, 0}, {58, 3, 1}, {1, 3, 2}, {58, 56, 3}, {1, 56, 4}}, 0, s2, 0, 3, y, &got2, &sp);
      splits2 += sp;
      flat = 3364 * y[0] + 58 * y[1] + y[2] + 58 * y[3] + y[4];
      for (size_t d = 3; d-- > 0;) {
        want2[d] = d == 0 ? flat : flat % s2[d];
        flat /= s2[d];
      }
      ASSERT_EQ(got2, want2);
    }
  EXPECT_GT(splits1, 0);
  EXPECT_GT(splits2, 0);
  // 57 + ow + kw can reach 58: a constant that makes the low part overflow forbids that split.
  FlatSplit<T> none;
  EXPECT_FALSE(split_flat(std::vector<T>{{1, 3, 0}, {1, 56, 1}}, 1, Shape{58, 58}, 0, 2, &none));
  // A negative low coefficient forbids it too.
  EXPECT_FALSE(split_flat(std::vector<T>{{58, 3, 0}, {-1, 3, 1}}, 2, Shape{58, 58}, 0, 2, &none));
}

}  // namespace
}  // namespace kiln::ir

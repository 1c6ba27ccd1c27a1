// while_loop and cond (kiln/control.h) on the test's device: loops with data-dependent trip
// counts, nested loops, branches, mixed-dtype carried tuples, captured values, all against the
// reference interpreter and written-out values; the Program they compile to (one structured step
// list, the regions' kernels fused); recompiles; and the errors of bad loops.
#include <gtest/gtest.h>

#include <cmath>
#include <thread>

#include "kiln/kiln.h"
#include "passes/helpers.h"
#include "testing/error_of.h"
#include "testing/reference.h"

namespace kiln {
namespace {

using testing::error_of;

absl::StatusCode code_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.status().code();
  }
  return absl::StatusCode::kOk;
}

// Newton's method for sqrt(a) elementwise, until every step is below a tolerance.
Values newton_sqrt(const Tensor& a, int64_t max_trips = 0) {
  return while_loop([](const Values& v) { return (abs(v[0] * v[0] - v[1]).max() > 1e-5); },
                    [](const Values& v) { return Values{(v[0] + v[1] / v[0]) * 0.5, v[1]}; },
                    {ones_like(a), a}, {.max_trips = max_trips});
}

TEST(Control, NewtonIterationToATolerance) {
  Tensor a = from_vector<float>({2, 9, 100, 0.25f, 1e4f}, {5});
  Tensor r = newton_sqrt(a)[0];
  std::vector<float> got = r.to_vector<float>();
  const std::vector<float> want = {std::sqrt(2.f), 3, 10, 0.5f, 100};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-4 * want[i]);
  EXPECT_MATCHES_REFERENCE({r});
}

// The trip count depends on the data: the Collatz sequence of n, counted until it reaches 1.
TEST(Control, CollatzStepsPerElement) {
  Tensor n = from_vector<float>({1, 6, 7, 27, 97}, {5});
  Tensor steps = zeros({5}, int64);
  Values out = while_loop([](const Values& v) { return (v[0] > 1).sum() > 0; },
                          [](const Values& v) {
                            Tensor x = v[0];
                            Tensor odd = floor(x * 0.5) * 2.0 != x;
                            Tensor next = where(x > 1, where(odd, x * 3.0 + 1.0, x * 0.5), x);
                            return Values{next, v[1] + (x > 1).cast(int64)};
                          },
                          {n, steps});
  EXPECT_EQ(out[1].to_vector<int64_t>(), (std::vector<int64_t>{0, 8, 16, 111, 118}));
  EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>{1, 1, 1, 1, 1}));
  EXPECT_MATCHES_REFERENCE({out[0], out[1]});
}

// A carried tuple of f32, i32 and bool; a loop whose condition fails at once returns its inputs.
TEST(Control, MixedDtypeTupleAndZeroTrips) {
  Tensor x = testing::random_tensor({3, 4}, float32, 1);
  Tensor i = from_vector<int32_t>({0}, {}, int32);
  Tensor seen = full({3, 4}, 0, bool_);
  Values out = while_loop([](const Values& v) { return v[1] < 5; },
                          [](const Values& v) {
                            Tensor y = v[0] * 1.5 - 0.25;
                            return Values{y, v[1] + 1, v[2] || (y > 1.0)};
                          },
                          {x, i, seen});
  EXPECT_EQ(out[1].to_vector<int32_t>(), std::vector<int32_t>{5});
  EXPECT_MATCHES_REFERENCE({out[0], out[1], out[2]});
  Values none = while_loop([](const Values& v) { return v[1] > 5; }, [](const Values& v) { return Values{v[0] + 1, v[1]}; },
                           {x, i});
  EXPECT_EQ(none[0].to_vector<float>(), x.to_vector<float>());
}

// A loop inside a loop, and a loop whose carried values swap each trip.
TEST(Control, NestedLoopsAndSwaps) {
  Tensor acc = zeros({4});
  Tensor j = from_vector<int64_t>({0}, {});
  Values out = while_loop([](const Values& v) { return v[1] < 3; },
                          [](const Values& v) {
                            Values inner = while_loop([](const Values& w) { return w[1] < 4; },
                                                      [](const Values& w) { return Values{w[0] + 1.0, w[1] + 1}; },
                                                      {v[0], zeros_like(v[1])});
                            return Values{inner[0] * 2.0, v[1] + 1};
                          },
                          {acc, j});
  // ((0 + 4) * 2 + 4) * 2 + 4) * 2 = 56
  EXPECT_EQ(out[0].to_vector<float>(), (std::vector<float>(4, 56.f)));
  EXPECT_MATCHES_REFERENCE({out[0], out[1]});
  Tensor a = from_vector<float>({1, 2}, {2}), b = from_vector<float>({10, 20}, {2});
  Values sw = while_loop([](const Values& v) { return v[2] < 3; },
                         [](const Values& v) { return Values{v[1], v[0] + 1.0, v[2] + 1}; },
                         {a, b, from_vector<int64_t>({0}, {})});
  // (a, b) -> (b, a + 1) three times: (b, a+1), (a+1, b+1), (b+1, a+2).
  EXPECT_EQ(sw[0].to_vector<float>(), (std::vector<float>{11, 21}));
  EXPECT_EQ(sw[1].to_vector<float>(), (std::vector<float>{3, 4}));
  EXPECT_MATCHES_REFERENCE({sw[0], sw[1]});
}

// The loop reads a weight, a bias and the result of outside work (captured values), and the
// work after it fuses with the loop's result.
TEST(Control, CapturedValuesAndWorkAroundTheLoop) {
  Tensor w = testing::random_tensor({16, 16}, float32, 2, -0.3, 0.3);
  Tensor b = testing::random_tensor({1, 16}, float32, 3, -0.1, 0.1);
  Tensor x0 = testing::random_tensor({8, 16}, float32, 4).tanh();
  Tensor scale = (w * w).sum() * 0.01;
  Values out = while_loop([](const Values& v) { return v[1] < 10; },
                          [&](const Values& v) { return Values{tanh(v[0].matmul(w) + b) * scale, v[1] + 1}; },
                          {x0, from_vector<int32_t>({0}, {}, int32)});
  Tensor y = out[0].sum({1}) + 1.0;
  EXPECT_MATCHES_REFERENCE({y, out[0]});
}

TEST(Control, CondTakesEitherBranch) {
  Tensor x = testing::random_tensor({5}, float32, 5);
  for (bool which : {true, false}) {
    Tensor pred = full({}, which ? 1 : 0, bool_);
    Values r = cond(pred, [](const Values& v) { return Values{v[0] * 2.0, v[0].sum()}; },
                    [](const Values& v) { return Values{v[0] - 1.0, v[0].max()}; }, {x});
    std::vector<float> xs = x.to_vector<float>(), got = r[0].to_vector<float>();
    for (size_t i = 0; i < xs.size(); ++i) EXPECT_FLOAT_EQ(got[i], which ? xs[i] * 2 : xs[i] - 1);
    EXPECT_MATCHES_REFERENCE({r[0], r[1]});
  }
  // A predicate computed on the device, branches inside a loop.
  Values loop = while_loop([](const Values& v) { return v[1] < 6; },
                           [](const Values& v) {
                             Values c = cond(v[2], [](const Values& u) { return Values{u[0] + 10.0}; },
                                             [](const Values& u) { return Values{u[0] * 0.5}; }, {v[0]});
                             return Values{c[0], v[1] + 1, !v[2]};
                           },
                           {x, from_vector<int64_t>({0}, {}), full({}, 1, bool_)});
  std::vector<float> want = x.to_vector<float>();
  for (int t = 0; t < 6; ++t)
    for (float& w : want) w = t % 2 == 0 ? w + 10 : w * 0.5f;
  std::vector<float> got = loop[0].to_vector<float>();
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5);
  EXPECT_MATCHES_REFERENCE({loop[0]});
}

// A branch runs only what its function recorded: the product the then branch records of outside
// tensors is inside the if block, not computed before it whichever way the branch goes; a loop
// body's work that does not depend on its carried values is hoisted before the loop instead.
TEST(Control, BranchesRunOnlyTheirOwnWork) {
  Tensor w = testing::random_tensor({32, 32}, float32, 10), z = testing::random_tensor({32, 32}, float32, 11);
  auto in_block = [](const ir::Program& p, ir::StepKind head) {
    int depth = 0, dots = 0;
    for (const ir::Step& s : p.steps) {
      depth += s.kind == head ? 1 : s.kind == ir::StepKind::kEnd ? -1 : 0;
      if (s.is_kernel() && depth > 0 && p.kernels[size_t(s.kernel)].contraction.reduce >= 0) ++dots;
    }
    return dots;
  };
  Values r = cond(full({}, 0, bool_), [&](const Values&) { return Values{w.matmul(z)}; },
                  [&](const Values&) { return Values{zeros({32, 32})}; }, {});
  EXPECT_EQ(in_block(testing::program_of({r[0]}), ir::StepKind::kIf), 1);
  EXPECT_MATCHES_REFERENCE({r[0]});
  EXPECT_EQ(r[0].to_vector<float>(), std::vector<float>(32 * 32, 0.0f));
  Values l = while_loop([](const Values& v) { return v[1] < 3; },
                        [&](const Values& v) { return Values{v[0] + w.matmul(z), v[1] + 1}; },
                        {zeros({32, 32}), from_vector<int32_t>({0}, {}, int32)});
  EXPECT_EQ(in_block(testing::program_of({l[0]}), ir::StepKind::kWhile), 0);
  EXPECT_MATCHES_REFERENCE({l[0]});
}

// A loop compiles to one program whose body is fused like any straight-line code; a second
// loop of the same structure replays it.
TEST(Control, OneProgramAndNoRecompile) {
  Tensor a = testing::random_tensor({64}, float32, 6, 0.5, 4);
  reset_stats();
  std::vector<float> first = newton_sqrt(a)[0].to_vector<float>();
  EXPECT_EQ(stats().executables_built, 1);
  reset_stats();
  Tensor a2 = testing::random_tensor({64}, float32, 7, 0.5, 4);
  Tensor r2 = newton_sqrt(a2)[0];
  EXPECT_MATCHES_REFERENCE({r2});
  EXPECT_EQ(stats().executables_built, 0);
  EXPECT_EQ(stats().kernels_compiled, 0);
}

// An elementwise body writes its carried values in place: the trip is its own kernels and the
// condition's, with no copies after the body; a body that swaps its values keeps them.
TEST(Control, ElementwiseBodiesWriteCarriedValuesInPlace) {
  Tensor x = testing::random_tensor({256}, float32, 8);
  auto loop = [&](bool swap) {
    return while_loop([](const Values& v) { return v[2] < 10; },
                      [swap](const Values& v) {
                        Tensor a = v[0] * 0.5 + 1.0;
                        return swap ? Values{v[1], a, v[2] + 1} : Values{a, v[1] - a, v[2] + 1};
                      },
                      {x, x * 2.0, from_vector<int32_t>({0}, {}, int32)});
  };
  auto copies_in_loop = [](const ir::Program& p) {
    int copies = 0, depth = 0;
    for (const ir::Step& s : p.steps) {
      depth += s.kind == ir::StepKind::kWhile ? 1 : s.kind == ir::StepKind::kEnd ? -1 : 0;
      if (s.is_kernel() && depth > 0 && p.kernels[size_t(s.kernel)].name.find("_copy") != std::string::npos) ++copies;
    }
    return copies;
  };
  Values plain = loop(false), swapped = loop(true);
  EXPECT_EQ(copies_in_loop(testing::program_of({plain[0], plain[1]})), 0);
  EXPECT_GT(copies_in_loop(testing::program_of({swapped[0], swapped[1]})), 0);
  EXPECT_MATCHES_REFERENCE({plain[0], plain[1], plain[2]});
  EXPECT_MATCHES_REFERENCE({swapped[0], swapped[1]});
}

// Threads trace loops over one shared unrealized history while others realize it (the tracer
// walks it under the realize lock); every result is right.
TEST(Control, TracingWhileAnotherThreadRealizes) {
  Tensor base = testing::random_tensor({64}, float32, 9) * 2.0 + 1.0;
  std::vector<std::vector<float>> got(4);
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t)
    threads.emplace_back([&, t] {
      Tensor shared = base.exp() * 0.5;  // recorded by every thread over the same history
      if (t % 2) {
        got[size_t(t)] = shared.to_vector<float>();
        return;
      }
      Values r = while_loop([](const Values& v) { return v[1] < 3; },
                            [&](const Values& v) { return Values{v[0] + shared, v[1] + 1}; },
                            {zeros({64}), from_vector<int32_t>({0}, {}, int32)});
      got[size_t(t)] = r[0].to_vector<float>();
    });
  for (std::thread& th : threads) th.join();
  std::vector<float> b = base.to_vector<float>();
  for (size_t i = 0; i < b.size(); ++i) {
    const float once = std::exp(b[i]) * 0.5f;
    EXPECT_NEAR(got[1][i], once, 1e-5 * once);
    EXPECT_NEAR(got[0][i], 3 * once, 3e-5 * once);
    EXPECT_NEAR(got[2][i], 3 * once, 3e-5 * once);
  }
}

TEST(Control, MaxTripsIsARunTimeError) {
  Tensor x = from_vector<float>({1}, {1});
  Values forever = while_loop([](const Values& v) { return (v[0] > 0).reshape({}); },
                              [](const Values& v) { return Values{v[0] + 1.0}; }, {x}, {.max_trips = 50});
  EXPECT_EQ(code_of([&] { forever[0].to_vector<float>(); }), absl::StatusCode::kOutOfRange);
  const std::string e = error_of([&] { forever[0].to_vector<float>(); });
  EXPECT_NE(e.find("maximum of 50 trips"), std::string::npos) << e;
  // Within the limit it runs.
  Tensor a = from_vector<float>({4, 16}, {2});
  EXPECT_NEAR(newton_sqrt(a, 50)[0].to_vector<float>()[1], 4.0f, 1e-4);
}

TEST(Control, BadLoopsAreRecordTimeErrors) {
  Tensor x = zeros({4});
  auto msg = [](const std::function<void()>& f) { return error_of(f); };
  EXPECT_EQ(msg([&] { while_loop([](const Values& v) { return v[0].sum() > 0; }, [](const Values& v) { return Values{v[0], v[0]}; }, {x}); }),
            "while_loop: the body returns 2 values for 1 carried value");
  EXPECT_EQ(msg([&] {
              while_loop([](const Values& v) { return v[0].sum() > 0; },
                         [](const Values& v) { return Values{v[0].reshape({2, 2})}; }, {x});
            }),
            "while_loop: the body value 0 is f32[2,2], its carried value is f32[4]");
  EXPECT_EQ(msg([&] {
              while_loop([](const Values& v) { return v[0].sum() > 0; },
                         [](const Values& v) { return Values{v[0].cast(float16)}; }, {x});
            }),
            "while_loop: the body value 0 is f16[4], its carried value is f32[4]");
  EXPECT_EQ(msg([&] { while_loop([](const Values& v) { return v[0].sum(); }, [](const Values& v) { return v; }, {x}); }),
            "while_loop: the condition must be a bool of one element, it is f32[]");
  EXPECT_EQ(msg([&] { while_loop([](const Values& v) { return v[0] > 0; }, [](const Values& v) { return v; }, {x}); }),
            "while_loop: the condition must be a bool of one element, it is bool[4]");
  EXPECT_EQ(msg([&] { while_loop([](const Values& v) { return v[0].sum() > 0; }, [](const Values& v) { return v; }, {x}, {.max_trips = -1}); }),
            "while_loop: max_trips must be >= 0 (0: no limit), got -1");
  EXPECT_EQ(msg([&] {
              cond(full({}, 1, bool_), [](const Values& v) { return Values{v[0]}; },
                   [](const Values& v) { return Values{v[0].sum()}; }, {x});
            }),
            "cond: the else branch value 0 is f32[], its then branch's value is f32[4]");
  EXPECT_EQ(msg([&] { cond(x, [](const Values& v) { return v; }, [](const Values& v) { return v; }, {x}); }),
            "cond: the predicate must be a bool of one element, it is f32[4]");
  // Named loops and branches say which.
  EXPECT_EQ(msg([&] {
              while_loop([](const Values& v) { return v[0].sum() > 0; }, [](const Values& v) { return Values{v[0], v[0]}; }, {x},
                         {}, "newton");
            }),
            "while_loop 'newton': the body returns 2 values for 1 carried value");
  EXPECT_EQ(msg([&] { cond(x, [](const Values& v) { return v; }, [](const Values& v) { return v; }, {x}, "clip"); }),
            "cond 'clip': the predicate must be a bool of one element, it is f32[4]");
  // Reading a traced value on the host.
  auto host_read = [&] {
    while_loop([](const Values& v) { return v[0].sum() > 0; },
               [](const Values& v) {
                 v[0].to_vector<float>();
                 return v;
               },
               {x});
  };
  EXPECT_EQ(code_of(host_read), absl::StatusCode::kFailedPrecondition);
  EXPECT_NE(error_of(host_read).find("read on the host"), std::string::npos) << error_of(host_read);
}

}  // namespace
}  // namespace kiln

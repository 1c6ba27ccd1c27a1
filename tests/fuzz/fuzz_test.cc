// The fuzzer's own machinery: the generator is deterministic and covers the op set, the error
// bounds are zero exactly where devices must be bit-exact, the checker catches a wrong device,
// and the minimizer reduces a failing graph to the op that fails.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <set>

#include "frontend/capture.h"
#include "fuzz/differential.h"
#include "fuzz/graph_gen.h"
#include "ir/graph.h"
#include "kiln/kiln.h"
#include "runtime/device.h"
#include "runtime/registry.h"

namespace kiln::fuzz {
namespace {

std::string text_of(const GeneratedGraph& g) { return graph_text(g.outputs); }

// The machinery is checked on the CPU backend; a build without it (the GPU bundle) skips.
class NeedsCpuBackend : public ::testing::Environment {
 public:
  void SetUp() override {
    if (runtime::get_device("cpu").ok()) return;
    std::printf("[  SKIPPED ] fuzz_test needs the CPU backend, which this build lacks\n");
    GTEST_SKIP() << "no CPU backend";
  }
};
[[maybe_unused]] ::testing::Environment* const kNeedsCpu = ::testing::AddGlobalTestEnvironment(new NeedsCpuBackend);

TEST(GraphGen, SameSeedSameGraph) {
  for (uint64_t seed : {1ull, 42ull, 987654321ull}) {
    GeneratedGraph a = generate_graph(seed, Device("cpu")), b = generate_graph(seed, Device("cpu"));
    EXPECT_EQ(text_of(a), text_of(b));
    EXPECT_EQ(a.program, b.program);
    auto ca = capture_case(a.outputs), cb = capture_case(b.outputs);
    ASSERT_TRUE(ca.ok() && cb.ok());
    ASSERT_EQ(ca->inputs.size(), cb->inputs.size());
    for (size_t i = 0; i < ca->inputs.size(); ++i) {
      EXPECT_EQ(ca->inputs[i].f, cb->inputs[i].f);
      EXPECT_EQ(ca->inputs[i].i, cb->inputs[i].i);
    }
  }
  EXPECT_NE(text_of(generate_graph(1, Device("cpu"))), text_of(generate_graph(2, Device("cpu"))));
  EXPECT_NE(graph_seed(7, 0), graph_seed(7, 1));
  EXPECT_NE(graph_seed(7, 0), graph_seed(8, 0));
}

TEST(GraphGen, CoversOpsDtypesAndShapes) {
  std::set<ir::Op> ops;
  std::set<DType> dtypes;
  bool negative_step = false, size1 = false, odd = false, batched_dot = false, special = false;
  std::set<std::string> composites;
  for (uint64_t seed = 0; seed < 300; ++seed) {
    GeneratedGraph g = generate_graph(seed, Device("cpu"));
    auto c = capture_case(g.outputs);
    ASSERT_TRUE(c.ok());
    for (const ir::Node& n : c->graph.nodes()) {
      ops.insert(n.op);
      dtypes.insert(n.dtype);
      for (int64_t d : n.shape) {
        size1 = size1 || d == 1;
        odd = odd || (d > 1 && d % 2 == 1);
      }
      if (n.op == ir::Op::kSlice)
        for (size_t k = 1; k < n.ints.size(); k += 2) negative_step = negative_step || n.ints[k] < 0;
      if (n.op == ir::Op::kDot) batched_dot = batched_dot || n.shape.size() > 2;
    }
    for (const ir::HostTensor& t : c->inputs)
      for (double v : t.f) special = special || !std::isfinite(v);
    for (const char* name : {"softmax", "log_softmax", "layer_norm", "rms_norm", "matmul", "linear", "gelu", "silu",
                             "concat", "stack", "where", "argmax", "argmin", "pad", "expand", "permute", "conv",
                             "max_pool", "avg_pool", "lp_pool", "gather", "take_along_axis", "scatter"})
      if (g.program.find(std::string("kiln::") + name) != std::string::npos ||
          g.program.find(std::string(".") + name + "(") != std::string::npos)
        composites.insert(name);
  }
  for (ir::Op op : {ir::Op::kExp, ir::Op::kLog, ir::Op::kSqrt, ir::Op::kRsqrt, ir::Op::kSin, ir::Op::kCos,
                    ir::Op::kTanh, ir::Op::kSigmoid, ir::Op::kErf, ir::Op::kFloor, ir::Op::kCeil, ir::Op::kRecip,
                    ir::Op::kNot, ir::Op::kCast, ir::Op::kAdd, ir::Op::kSub, ir::Op::kMul, ir::Op::kDiv, ir::Op::kPow,
                    ir::Op::kMax, ir::Op::kMin, ir::Op::kLt, ir::Op::kLe, ir::Op::kEq, ir::Op::kNe, ir::Op::kAnd,
                    ir::Op::kOr, ir::Op::kWhere, ir::Op::kReduceSum, ir::Op::kReduceMax, ir::Op::kReduceMin,
                    ir::Op::kReduceProd, ir::Op::kArgMax, ir::Op::kArgMin, ir::Op::kReshape, ir::Op::kPermute,
                    ir::Op::kExpand, ir::Op::kSlice, ir::Op::kPad, ir::Op::kConcat, ir::Op::kWindow, ir::Op::kDot, ir::Op::kIota,
                    ir::Op::kRand, ir::Op::kRandn, ir::Op::kConst, ir::Op::kGather, ir::Op::kSegmentReduce,
                    ir::Op::kIntDiv, ir::Op::kIntRem})
    EXPECT_TRUE(ops.count(op)) << "no graph used " << ir::op_name(op);
  EXPECT_EQ(dtypes.size(), size_t(kNumDTypes));
  EXPECT_TRUE(negative_step && size1 && odd && batched_dot && special);
  EXPECT_EQ(composites.size(), 23u);
}

Case parse_case(const std::string& text, std::vector<ir::HostTensor> inputs) {
  auto g = ir::parse(text);
  EXPECT_TRUE(g.ok()) << g.status();
  return Case{*g, std::move(inputs)};
}

ir::HostTensor floats(Shape s, std::vector<double> v, DType t = float32) {
  ir::HostTensor h = ir::HostTensor::make(t, std::move(s));
  for (double& x : v) x = round_to_dtype(t, x);  // inputs hold values of their dtype
  h.f = std::move(v);
  return h;
}

TEST(ErrorBounds, ZeroForExactOpsInfiniteForDiscontinuousOpsOfRoundedValues) {
  Case c = parse_case(R"(graph {
  %0 = input 0 : f32[4]
  %1 = neg %0 : f32[4]
  %2 = exp %0 : f32[4]
  %3 = floor %1 : f32[4]
  %4 = floor %2 : f32[4]
  %5 = reduce_sum %2 axes=[0] : f32[1]
  %6 = reduce_max %1 axes=[0] : f32[1]
  output %3, %4, %5, %6
}
)",
                      {floats({4}, {0.5, -1, 2, 0.25})});
  auto values = interpret_all(c);
  ASSERT_TRUE(values.ok());
  DevicePrecision cpu = DevicePrecision::for_device("cpu");
  std::vector<double> e = error_bounds(c.graph, *values, cpu);
  EXPECT_EQ(e[0], 0);
  EXPECT_EQ(e[1], 0);
  EXPECT_GT(e[2], 0);
  EXPECT_LT(e[2], 1e-5);  // a few ulps of exp(2) = 7.39
  EXPECT_EQ(e[3], 0);
  EXPECT_TRUE(std::isinf(e[4]));
  EXPECT_GT(e[5], 4 * e[2]);  // a sum of 4 rounded values
  EXPECT_EQ(e[6], 0);
  // A GPU may be less precise.
  EXPECT_GT(error_bounds(c.graph, *values, DevicePrecision::for_device("vulkan"))[2], e[2]);
}

// A gather is as exact as its source at exact indices; an index computed from rounded values
// may pick another element, so nothing bounds its error.
TEST(ErrorBounds, GatherKeepsItsSourceErrorAtExactIndices) {
  Case c = parse_case(R"(graph {
  %0 = input 0 : f32[4]
  %1 = exp %0 : f32[4]
  %2 = input 1 : i64[4]
  %3 = gather %1, %2 axis=0 : f32[4]
  %4 = cast %1 : i64[4]
  %5 = gather %0, %4 axis=0 : f32[4]
  output %3, %5
}
)",
                      {floats({4}, {0.5, -1, 1, 0.25}), ir::HostTensor::make(DType::kInt64, {4})});
  auto values = interpret_all(c);
  ASSERT_TRUE(values.ok());
  std::vector<double> e = error_bounds(c.graph, *values, DevicePrecision::for_device("cpu"));
  EXPECT_GT(e[1], 0);
  EXPECT_EQ(e[3], e[1]);
  EXPECT_TRUE(std::isinf(e[5]));
}

// Runs on the CPU, then corrupts the first output whenever the graph contains a sin: a stand-in
// for a backend with a broken kernel.
Runner broken_sin_runner() {
  Runner cpu = device_runner(*runtime::get_device("cpu"));
  return [cpu](const Case& c) -> absl::StatusOr<std::vector<ir::HostTensor>> {
    auto r = cpu(c);
    if (!r.ok()) return r;
    bool has_sin = false;
    for (const ir::Node& n : c.graph.nodes()) has_sin = has_sin || n.op == ir::Op::kSin;
    if (has_sin && !(*r)[0].f.empty()) (*r)[0].f[0] += 0.5;
    return r;
  };
}

TEST(Checker, PassesTheCpuAndCatchesAWrongDevice) {
  Case c = parse_case(R"(graph {
  %0 = input 0 : f32[3,5]
  %1 = sin %0 : f32[3,5]
  %2 = exp %1 : f32[3,5]
  %3 = reduce_sum %2 axes=[1] : f32[3,1]
  %4 = input 1 : f32[3,1]
  %5 = mul %3, %4 : f32[3,1]
  %6 = permute %0 perm=[1,0] : f32[5,3]
  output %5, %6
}
)",
                      {floats({3, 5}, {0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 1.0, 1.1, 1.2, 1.3, 1.4, 1.5}),
                       floats({3, 1}, {2, -1, 0.5})});
  DevicePrecision cpu = DevicePrecision::for_device("cpu");
  CheckResult ok = check_case(c, device_runner(*runtime::get_device("cpu")), cpu);
  EXPECT_EQ(ok.outcome, Outcome::kPass) << ok.detail;
  EXPECT_EQ(ok.outputs_checked, 2);
  EXPECT_EQ(ok.outputs_unbounded, 0);

  CheckResult bad = check_case(c, broken_sin_runner(), cpu);
  ASSERT_EQ(bad.outcome, Outcome::kMismatch);
  EXPECT_NE(bad.detail.find("output 0 (%5, f32[3,1]): 1 of 3 elements differ"), std::string::npos) << bad.detail;

  // The minimizer keeps the failing output and cuts everything but the sin.
  std::string log;
  Case small = minimize(c, Outcome::kMismatch, broken_sin_runner(), cpu, {}, &log);
  EXPECT_EQ(check_case(small, broken_sin_runner(), cpu).outcome, Outcome::kMismatch);
  EXPECT_EQ(ir::print(small.graph), "graph {\n  %0 = input 0 : f32[1,1]\n  %1 = sin %0 : f32[1,1]\n  output %1\n}\n")
      << log;
}

// A runner that returns `replace(want, got)` for each element of the first output: stands in
// for a device that differs from the CPU in a chosen way.
Runner altered_runner(std::function<double(double want, double got)> replace) {
  Runner cpu = device_runner(*runtime::get_device("cpu"));
  return [cpu, replace](const Case& c) -> absl::StatusOr<std::vector<ir::HostTensor>> {
    auto r = cpu(c);
    if (!r.ok()) return r;
    auto want = interpret_all(c);
    if (!want.ok()) return want.status();
    const ir::HostTensor& w = (*want)[c.graph.outputs()[0]];
    for (size_t k = 0; k < (*r)[0].f.size(); ++k) (*r)[0].f[k] = replace(w.f[k], (*r)[0].f[k]);
    return r;
  };
}
double nan_to_inf(double want, double got) { return std::isnan(want) ? INFINITY : got; }
double inf_to_nan(double want, double got) { return std::isinf(want) ? NAN : got; }

// kiln_fuzz --seed 987654321 --index 1230, minimized: (x - 0.005*sum(x)) * y with y = +-inf
// (x = 1, 200 of them). The reference rounds 200 * 0.005f to 1 and gets 1 - 1 = 0, 0 * inf =
// NaN; the CPU contracts x - s*c to an FMA (one rounding) and gets 2.2e-8 * inf = inf. Both
// are within the rounding the bound allows, so the product is unbounded.
Case fma_times_inf_case() {
  Case c = parse_case(R"(graph {
  %0 = input 0 : i8[4,1,5,5]
  %1 = eq %0, %0 : bool[4,1,5,5]
  %2 = expand %1 : bool[4,2,5,5]
  %3 = reshape %2 : bool[200]
  %4 = cast %3 : f32[200]
  %5 = reduce_sum %4 axes=[0] : f32[1]
  %6 = const 0.004999999888241291 : f32[1]
  %7 = mul %5, %6 : f32[1]
  %8 = expand %7 : f32[200]
  %9 = sub %4, %8 : f32[200]
  %10 = input 1 : f32[200]
  %11 = mul %9, %10 : f32[200]
  output %11
}
)",
                      {ir::HostTensor::make(DType::kInt8, {4, 1, 5, 5}), floats({200}, std::vector<double>(200, 0.5))});
  c.inputs[1].f[3] = INFINITY;
  c.inputs[1].f[7] = -INFINITY;
  return c;
}

// The same computation with x - 0.005*sum(x) far from zero (half the x 1, half 0: +-0.5).
Case far_times_inf_case() {
  std::vector<double> x(200, 0);
  std::fill(x.begin(), x.begin() + 100, 1.0);
  Case c = parse_case(R"(graph {
  %0 = input 0 : f32[200]
  %1 = reduce_sum %0 axes=[0] : f32[1]
  %2 = const 0.004999999888241291 : f32[1]
  %3 = mul %1, %2 : f32[1]
  %4 = expand %3 : f32[200]
  %5 = sub %0, %4 : f32[200]
  %6 = input 1 : f32[200]
  %7 = mul %5, %6 : f32[200]
  output %7
}
)",
                      {floats({200}, std::move(x)), floats({200}, std::vector<double>(200, 0.5))});
  c.inputs[1].f[3] = INFINITY;
  c.inputs[1].f[7] = -INFINITY;
  return c;
}

// kiln_fuzz --seed 77777 --index 1144, minimized: an f16 x * sigmoid(x) fed into a dot with
// +-inf. sigmoid(-18) = 1.5e-8 rounds to 0 in f16, so the reference (every op rounded to f16)
// has -18 * 0 = -0 and -0 * -inf = NaN in the dot; the CPU keeps f16 values in f32 inside a
// fused kernel (as the bound allows: half types compute in f32) and gets -2.7e-7 * -inf = inf.
Case silu_dot_inf_case() {
  return parse_case(R"(graph {
  %0 = input 0 : f16[1,3,3]
  %1 = sigmoid %0 : f16[1,3,3]
  %2 = mul %0, %1 : f16[1,3,3]
  %3 = input 1 : f16[1,3,1]
  %4 = dot %2, %3 : f16[1,3,1]
  output %4
}
)",
                    {floats({1, 3, 3}, {83, -18, -88, -18, 75, 8, 16, -20, -19}, float16),
                     floats({1, 3, 1}, {INFINITY, -INFINITY, 1.71484}, float16)});
}

TEST(Checker, InfTimesAValueThatMayRoundToZeroIsUnbounded) {
  DevicePrecision cpu = DevicePrecision::for_device("cpu");
  Runner dev = device_runner(*runtime::get_device("cpu"));
  for (const Case& c : {fma_times_inf_case(), silu_dot_inf_case()}) {
    auto values = interpret_all(c);
    ASSERT_TRUE(values.ok());
    bool nan = false;
    for (double v : (*values)[c.graph.outputs()[0]].f) nan = nan || std::isnan(v);
    EXPECT_TRUE(nan) << "the reference should hit 0 * inf\n" << ir::print(c.graph);
    // The CPU passes (it gets +-inf for the reference's NaN), and so does a device that turns
    // every such NaN into inf.
    for (const Runner& r : {dev, altered_runner(nan_to_inf)}) {
      CheckResult res = check_case(c, r, cpu);
      EXPECT_EQ(res.outcome, Outcome::kPass) << res.detail << ir::print(c.graph);
      EXPECT_EQ(res.outputs_checked, 1);
      EXPECT_EQ(res.outputs_unbounded, 1);
    }
  }
}

// Tolerances scale with each element's own magnitude: exp over [-7, 7] spans six orders of
// magnitude, and a 0.1% error on the smallest element (far below the allowed error of the
// largest) is caught; the same absolute error on the largest passes, and so does the CPU. (An
// error propagated from an operand is still bounded by the operand's largest magnitude: in
// 0.5 * exp(x) the exp's bound, taken at its largest element, dominates the small elements.)
TEST(Checker, ToleranceScalesWithEachElementsMagnitude) {
  Case c = parse_case(R"(graph {
  %0 = input 0 : f32[4]
  %1 = exp %0 : f32[4]
  output %1
}
)",
                      {floats({4}, {-7, -1, 1, 7})});
  DevicePrecision cpu = DevicePrecision::for_device("cpu");
  CheckResult ok = check_case(c, device_runner(*runtime::get_device("cpu")), cpu);
  EXPECT_EQ(ok.outcome, Outcome::kPass) << ok.detail;
  auto off_small = altered_runner([](double want, double got) { return want < 0.01 ? want * 1.001 : got; });
  CheckResult bad = check_case(c, off_small, cpu);
  ASSERT_EQ(bad.outcome, Outcome::kMismatch);
  EXPECT_NE(bad.detail.find("1 of 4 elements differ"), std::string::npos) << bad.detail;
  EXPECT_NE(bad.detail.find("* |want|"), std::string::npos) << bad.detail;
  // An error of the same absolute size on the largest element is within its rounding.
  const double small_err = std::exp(-7.0) * 0.001;
  auto off_large = altered_runner([small_err](double want, double got) { return want > 100 ? want + small_err : got; });
  EXPECT_EQ(check_case(c, off_large, cpu).outcome, Outcome::kPass);
  // The bound's parts: exp's and mul's own terms scale with the element.
  auto values = interpret_all(c);
  ASSERT_TRUE(values.ok());
  std::vector<double> relative;
  std::vector<double> E = error_bounds(c.graph, *values, cpu, nullptr, &relative);
  EXPECT_GT(relative[1], 0);
  EXPECT_NEAR(relative[1] * (*values)[1].f[3], E[1], 1e-9 * E[1]);  // all of exp's bound is its own
}

TEST(Checker, InfTimesAnExactValueIsStillChecked) {
  DevicePrecision cpu = DevicePrecision::for_device("cpu");
  // x - 0.005*sum(x) = +-0.5 is far from zero: the products with +-inf are determined, and a
  // device that gets NaN there is wrong.
  Case far = far_times_inf_case();
  CheckResult ok = check_case(far, device_runner(*runtime::get_device("cpu")), cpu);
  EXPECT_EQ(ok.outcome, Outcome::kPass) << ok.detail;
  EXPECT_EQ(ok.outputs_unbounded, 0);
  CheckResult bad = check_case(far, altered_runner(inf_to_nan), cpu);
  EXPECT_EQ(bad.outcome, Outcome::kMismatch);
  EXPECT_NE(bad.detail.find("got nan want -inf"), std::string::npos) << bad.detail;

  // Exact operands: 0 * inf is NaN on every device, and a finite product is finite.
  Case exact = parse_case(R"(graph {
  %0 = input 0 : f32[4]
  %1 = input 1 : f32[4]
  %2 = mul %0, %1 : f32[4]
  output %2
}
)",
                          {floats({4}, {0, 1, 2, -0.0}), floats({4}, {INFINITY, 3, -INFINITY, 5})});
  EXPECT_EQ(check_case(exact, device_runner(*runtime::get_device("cpu")), cpu).outcome, Outcome::kPass);
  CheckResult inf = check_case(exact, altered_runner(nan_to_inf), cpu);
  EXPECT_EQ(inf.outcome, Outcome::kMismatch);
  EXPECT_NE(inf.detail.find("[0] got inf want nan"), std::string::npos) << inf.detail;
  CheckResult nan = check_case(exact, altered_runner([](double w, double g) { return w == 3 ? NAN : g; }), cpu);
  EXPECT_EQ(nan.outcome, Outcome::kMismatch);
  EXPECT_NE(nan.detail.find("[1] got nan want 3"), std::string::npos) << nan.detail;

  // The f16 dot with every product determined (no factor near 0): NaN stays NaN, inf stays inf.
  Case dot = silu_dot_inf_case();
  dot.inputs[0].f = {3, -1, 2, 1, 4, -1, 2, 1, 3};  // silu: |values| >= 0.27, errors ~1e-3
  auto values = interpret_all(dot);
  ASSERT_TRUE(values.ok());
  EXPECT_EQ(check_case(dot, device_runner(*runtime::get_device("cpu")), cpu).outcome, Outcome::kPass);
  bool dot_nan = false;
  for (double v : (*values)[dot.graph.outputs()[0]].f) dot_nan = dot_nan || std::isnan(v);
  EXPECT_TRUE(dot_nan);  // 0.73 * inf + 3.9 * -inf
  CheckResult dbad = check_case(dot, altered_runner(nan_to_inf), cpu);
  EXPECT_EQ(dbad.outcome, Outcome::kMismatch) << dbad.detail;
  EXPECT_EQ(dbad.outputs_unbounded, 0);
}

TEST(ErrorBounds, InfiniteOnlyWhereTheResultMayOverflow) {
  // exp(0.5) * y in f16 (largest finite 65504): bounded well below the limit, unbounded where
  // the allowed error reaches it (the device's rounding may give inf, the reference's not).
  Case c = parse_case(R"(graph {
  %0 = input 0 : f16[1]
  %1 = exp %0 : f16[1]
  %2 = input 1 : f16[1]
  %3 = mul %1, %2 : f16[1]
  output %3
}
)",
                      {floats({1}, {0.5}, float16), floats({1}, {300}, float16)});
  DevicePrecision cpu = DevicePrecision::for_device("cpu");
  auto bound = [&](double y) {
    c.inputs[1].f = {round_to_dtype(float16, y)};
    auto values = interpret_all(c);
    EXPECT_TRUE(values.ok());
    return error_bounds(c.graph, *values, cpu)[3];
  };
  EXPECT_TRUE(std::isfinite(bound(300)));    // 494.6
  EXPECT_TRUE(std::isfinite(bound(36000)));  // 59354: 6150 from the limit
  EXPECT_TRUE(std::isinf(bound(65504 / std::exp(0.5))));
}

TEST(Checker, ReportsDeviceErrors) {
  Case c = parse_case("graph {\n  %0 = input 0 : f32[2]\n  %1 = exp %0 : f32[2]\n  output %1\n}\n", {floats({2}, {1, 2})});
  Runner failing = [](const Case&) -> absl::StatusOr<std::vector<ir::HostTensor>> {
    return absl::ResourceExhaustedError("out of device memory");
  };
  CheckResult r = check_case(c, failing, DevicePrecision::for_device("cpu"));
  EXPECT_EQ(r.outcome, Outcome::kDeviceError);
  EXPECT_EQ(r.detail, "the device failed: RESOURCE_EXHAUSTED: out of device memory");
}

TEST(Fuzz, ShortRunOnTheCpuPasses) {
  FuzzOptions o;
  o.seed = 20240601;
  o.count = 25;
  std::FILE* sink = std::tmpfile();
  FuzzStats st = run_fuzz(*runtime::get_device("cpu"), o, sink);
  std::fclose(sink);
  EXPECT_EQ(st.graphs, 25);
  EXPECT_EQ(st.failures, 0);
  EXPECT_GT(st.nodes, 25 * 4);
  EXPECT_GE(st.outputs_checked, 25);
}

}  // namespace
}  // namespace kiln::fuzz

// Bad input never crashes kiln: malformed IR text, corrupted kernel-cache files, device
// out-of-memory, devices that are not present, NaN/Inf data and shapes whose byte count
// overflows are all reported (or computed, for NaN/Inf) as documented.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "frontend/capture.h"
#include "frontend/lazy.h"
#include "ir/graph.h"
#include "kiln/kiln.h"
#include "passes/pipeline.h"
#include "runtime/device.h"
#include "runtime/registry.h"
#include "replay/compile_or_replay.h"
#include "testing/reference.h"
#include "testing/error_of.h"

namespace kiln {
namespace {

using testing::error_of;

// --- malformed IR text --------------------------------------------------------------------

struct BadText {
  std::string text;
  std::string message;
};

TEST(BadIrText, ErrorsNameLineColumnAndWhatWasExpected) {
  const BadText cases[] = {
      {"", "1:1: expected 'graph'"},
      {"graph", "1:6: expected '{'"},
      {"graph {", "1:8: expected a node or 'output'"},
      {"graph {\n  %0 = input 0 : f32[2", "2:23: expected a shape like [2,3]"},
      {"graph {\n  %0 input 0 : f32[2]\n  output %0\n}", "2:6: expected '='"},
      {"graph {\n  %0 = input : f32[2]\n  output %0\n}", "2:14: expected the input position"},
      {"graph {\n  %0 = input 0 f32[2]\n  output %0\n}", "2:16: expected ':' before the type"},
      {"graph {\n  %0 = input 0 : f32[2,x]\n  output %0\n}", "2:24: expected a shape like [2,3]"},
      {"graph {\n  %0 = input 0 : f32[2]\n  %1 = permute %0 axes=[0] : f32[2]\n  output %1\n}",
       "3:19: expected 'perm='"},
      {"graph {\n  %0 = input 0 : f32[2]\n  %1 = reduce_sum %0 axes=[0 : f32[1]\n  output %1\n}",
       "3:29: expected an integer list like [0,1]"},
      {"graph {\n  %0 = const 1.5 : i32[2]\n  output %0\n}", "2:14: expected an integer value"},
      {"graph {\n  %0 = const 1.5x : f32[2]\n  output %0\n}", "2:14: expected a floating-point number"},
      {"graph {\n  %0 = const 99999999999999999999 : i64[]\n  output %0\n}", "2:14: expected an integer value"},
      {"graph {\n  %0 = input 0 : f32[99999999999999999999]\n  output %0\n}", "2:22: expected a shape like [2,3]"},
      {"graph {\n  %0 = input 0 : f32[-2]\n  output %0\n}", "2:3: input: invalid shape [-2]"},
      {"graph {\n  %0 = input 0 : f32[4294967296,4294967296,4294967296]\n  output %0\n}",
       "2:3: input: invalid shape [4294967296,4294967296,4294967296]"},
      {"graph {\n  %0 = input 0 : f32[2]\n  %1 = add %0 : f32[2]\n  output %1\n}", "3:3: add: expects 2 operands, got 1"},
      {"graph {\n  %0 = input 0 : f32[2]\n  %1 = add %0, %0 : i32[2]\n  output %1\n}",
       "3:3: add: result dtype must equal the operand dtype"},
      {"graph {\n  %0 = input 0 : f32[2]\n  %1 = neg %0, : f32[2]\n  output %1\n}", "3:16: expected '%' after ','"},
      {"graph {\n  %0 = input 0 : f32[2]\n  output\n}", "3:9: expected '%' before an output id"},
      {"graph {\n  %0 = input 0 : f32[2]\n  output %0,\n}", "3:13: expected '%' before an output id"},
      {"graph {\n  %0 = input 0 : f32[2]\n  output %0\n}\ngraph", "5:1: expected end of input"},
      {"graph {\n  %0 = input 0 : f32[2] extra\n  output %0\n}", "2:25: expected end of line"},
      {"graph {\n  %0 = input 0 : f32[2]\n  %1 = input 0 : f32[2]\n  output %1\n}", "3:3: node %1 duplicates %0"},
      {"graph {\n  %0 = input 0 : f32[2]\n  %1 = input 0 : f32[3]\n  output %1\n}",
       "invalid graph: input position 0 appears twice"},
      {"graph {\n  %0 = input 1 : f32[2]\n  output %0\n}", "invalid graph: input position 1 is out of range: the graph has 1 input"},
      // Found by kiln_parse_fuzzer: the verifier sized a table by the largest position (overflow).
      {"graph {\n  %0 = input 09223372036854775807 : f32[2]\n  output %0\n}",
       "invalid graph: input position 9223372036854775807 is out of range: the graph has 1 input"},
      {"graph {\n  %0 = input 0 : f32[2]\n  %1 = slice %0 start_step=[5,1] : f32[2]\n  output %1\n}",
       "3:3: slice: slice of axis 0 out of bounds for shape [2]"},
      // Found by kiln_parse_fuzzer: the verifier indexed a concat's result shape by the operands'
      // rank before comparing the ranks (an out-of-bounds read).
      {"graph {\n  %0 = input 0 : u8[2,3]\n  %1 = concat %0, %0 axis=1 : u8[]\n  output %1\n}",
       "3:3: concat: result rank differs from the operands' rank"},
      // Found by kiln_parse_fuzzer in CI: huge pad widths, slice steps and concat extents
      // overflowed int64 in the verifier's shape arithmetic (UBSan: signed overflow).
      {"graph {\n  %0 = input 0 : f32[3]\n  %1 = pad %0 widths=[2,9223372036854775807] value=0 : f32[4]\n  output %1\n}",
       "3:3: pad: result shape does not match the pad widths"},
      {"graph {\n  %0 = input 0 : f32[3]\n  %1 = slice %0 start_step=[2,4611686018427387904] : f32[3]\n  output %1\n}",
       "3:3: slice: slice of axis 0 out of bounds for shape [3]"},
      {"graph {\n  %0 = input 0 : f32[0,9223372036854775807]\n  %1 = concat %0, %0 axis=1 : f32[0,1]\n  output %1\n}",
       "3:3: concat: concatenated extent overflows int64"},
      {"graph {\n  %0 = input 0 : f32[2]\n  %1 = exp \xff\xfe : f32[2]\n  output %1\n}",
       "3:12: expected ':' before the type"},
      {std::string("graph {\n  %0 = input 0 : f32[2]\0\n  output %0\n}", 41), "2:24: expected end of line"},
  };
  for (const BadText& c : cases) {
    auto g = ir::parse(c.text);
    ASSERT_FALSE(g.ok()) << c.text;
    EXPECT_EQ(std::string(g.status().message()), c.message) << c.text;
    EXPECT_EQ(g.status().code(), absl::StatusCode::kInvalidArgument);
  }
}

// Every prefix of a valid graph is an error (never a crash), and so is the graph with any one
// byte flipped, unless the flip leaves valid text.
TEST(BadIrText, EveryTruncationAndByteFlipIsAnErrorOrAValidGraph) {
  Tensor x = testing::random_tensor({2, 3}, float32, 1);
  std::string text = graph_text({softmax(x.permute({1, 0}).pad({{1, 0}, {0, 2}}, -1.5), 0).sum({1}, true)});
  ASSERT_TRUE(ir::parse(text).ok());
  // Every prefix that cuts into the graph (anything short of its closing brace) is an error.
  size_t close = text.rfind('}');
  int errors = 0;
  for (size_t n = 0; n <= close; ++n) {
    auto g = ir::parse(text.substr(0, n));
    EXPECT_FALSE(g.ok()) << n;
    errors += !g.ok();
  }
  EXPECT_EQ(errors, int(close + 1));
  for (size_t i = 0; i < text.size(); ++i) {
    std::string t = text;
    t[i] ^= 0x41;
    auto g = ir::parse(t);
    if (g.ok()) {
      EXPECT_TRUE(ir::verify(*g).ok());
    } else {
      EXPECT_NE(g.status().message().find(':'), std::string::npos) << g.status();
    }
  }
}

// --- out of memory ------------------------------------------------------------------------

TEST(OutOfMemory, IsAnErrorStatusAndTheNextRealizeWorks) {
  for (const std::string& name : available_devices()) {
    SCOPED_TRACE(name);
    Device d(name);
    // 2^46 floats = 256 TiB: no allocator can provide it.
    Tensor huge = full({int64_t(1) << 46}, 1.0, float32, d);
    try {
      huge.realize();
      ADD_FAILURE() << "realizing a 256 TiB tensor succeeded";
    } catch (const Error& e) {
      // The error names the device. The CPU reports out-of-memory; Vulkan currently rejects a
      // kernel over 2^31 elements earlier, at GLSL compile time (32-bit indices), which is
      // still an error status the program can handle.
      EXPECT_EQ(std::string(e.what()).substr(0, name.size() + 2), name + ": ") << e.what();
      if (name == "cpu") {
        EXPECT_EQ(e.status().code(), absl::StatusCode::kResourceExhausted) << e.what();
      }
    }
    EXPECT_FALSE(huge.is_realized());
    // The process goes on: the same graph fails the same way, a normal one works.
    EXPECT_THROW(huge.realize(), Error);
    std::vector<float> xs = testing::random_floats(64 * 33, 2);
    Tensor y = softmax(from_vector(xs, {64, 33}, d), -1);
    EXPECT_MATCHES_REFERENCE({y});
    EXPECT_NEAR(y.sum().item(), 64.0, 1e-3);
  }
}

TEST(OutOfMemory, HugeIntermediateIsAnErrorStatus) {
  if (!runtime::get_device("cpu").ok()) GTEST_SKIP() << "this build has no CPU backend";
  Device cpu("cpu");
  // [2^23, 1] @ [1, 2^23], summed: the 2^46-float product lives between two kernels.
  Tensor a = full({int64_t(1) << 23, 1}, 0.5, float32, cpu), b = full({1, int64_t(1) << 23}, 2.0, float32, cpu);
  Tensor s = matmul(a, b).sum();
  // Guard: the product really is an intermediate (else realizing would compute 2^46 products).
  std::vector<std::shared_ptr<runtime::Buffer>> bufs;
  auto compiled = passes::compile_graph(detail::capture({s}, &bufs), detail::impl_of(cpu)->target(), passes::Options());
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  ASSERT_GE(compiled->program.arena_bytes, int64_t(1) << 48);
  std::string err = error_of([&] { s.realize(); });
  EXPECT_EQ(err, absl::StrCat("cpu: cannot allocate a ", compiled->program.arena_bytes, "-byte arena"));
  EXPECT_FALSE(s.is_realized());
  Tensor small = matmul(full({3, 1}, 0.5, float32, cpu), full({1, 4}, 2.0, float32, cpu)).sum();
  EXPECT_EQ(small.item(), 12.0);
}

// --- devices that are not present ---------------------------------------------------------

TEST(MissingDevice, EveryUnavailableDeviceIsAClearError) {
  std::vector<std::string> available = available_devices();
  int missing = 0;
  for (const std::string& name : known_devices()) {
    if (std::find(available.begin(), available.end(), name) != available.end()) continue;
    ++missing;
    auto d = Device::get(name);
    ASSERT_FALSE(d.ok()) << name;
    EXPECT_EQ(d.status().message().substr(0, name.size() + 2), name + ": ") << d.status();
    std::string err = error_of([&] { (void)full({2}, 1.0, float32, Device(name)); });
    EXPECT_EQ(err, std::string(d.status().message()));
    EXPECT_FALSE(set_default_device(name).ok());
    // The default device is unchanged and works.
    EXPECT_EQ((full({3}, 2.0) * 2.0).sum().item(), 12.0);
  }
  EXPECT_GE(missing, 1);  // metal never runs here
  EXPECT_EQ(error_of([&] { (void)Device("tpu"); }), "unknown device 'tpu'; known devices: cpu, vulkan, cuda, hip, metal");
}

// --- NaN and infinities ---------------------------------------------------------------------

// Values every float dtype computes exactly for special inputs (IEEE 754; max/min/relu
// propagate NaN like PyTorch; float->int casts map NaN to 0 and saturate).
TEST(SpecialValues, NanAndInfPropagateAsIeeeSays) {
  const double inf = std::numeric_limits<double>::infinity(), nan = std::nan("");
  for (DType t : {float32, float16, bfloat16, float64}) {
    SCOPED_TRACE(dtype_name(t));
    Tensor x = from_vector<double>({inf, -inf, nan, 0.0, -0.0, 1.0}, {6}, t);
    auto v = [](const Tensor& r) { return r.to_vector<double>(); };
    // Specials (NaN, infinities, signed zeros) must match exactly; finite values within a few
    // ulps of the dtype (they come from kiln's own exp/log/tanh approximations).
    const double ulp = t == float16 ? std::ldexp(1.0, -10) : t == bfloat16 ? std::ldexp(1.0, -7)
                     : t == float32 ? std::ldexp(1.0, -23) : std::ldexp(1.0, -52);
    bool zero_sign = true;  // IEEE 754-2008 maxNum/minNum leave the sign of max(-0, +0) open
    auto same = [&](const std::vector<double>& got, const std::vector<double>& want) {
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) {
        if (std::isfinite(want[i]) && want[i] != 0) {
          EXPECT_NEAR(got[i], want[i], 4 * ulp * std::fabs(want[i])) << i;
        } else if (std::isnan(want[i])) {
          EXPECT_TRUE(std::isnan(got[i])) << i << ": " << got[i];
        } else {
          EXPECT_EQ(got[i], want[i]) << i;
          if (want[i] == 0 && zero_sign) {
            EXPECT_EQ(std::signbit(got[i]), std::signbit(want[i])) << i << ": sign of zero";
          }
        }
      }
    };
#define SAME(expr, ...)          \
  do {                           \
    SCOPED_TRACE(#expr);         \
    same(v(expr), __VA_ARGS__);  \
  } while (0)
    SAME(x + 1.0, {inf, -inf, nan, 1, 1, 2});
    SAME(x - x, {nan, nan, nan, 0, 0, 0});
    SAME(x * 0.0, {nan, nan, nan, 0, -0.0, 0});
    SAME(1.0 / x, {0, -0.0, nan, inf, -inf, 1});
    SAME(exp(x), {inf, 0, nan, 1, 1, std::exp(1.0)});
    SAME(log(x), {inf, nan, nan, -inf, -inf, 0});
    SAME(sqrt(x), {inf, nan, nan, 0, -0.0, 1});
    SAME(tanh(x), {1, -1, nan, 0, -0.0, v(tanh(from_vector<double>({1.0}, {1}, t)))[0]});
    SAME(sigmoid(x), {1, 0, nan, 0.5, 0.5, v(sigmoid(from_vector<double>({1.0}, {1}, t)))[0]});
    zero_sign = false;
    SAME(relu(x), {inf, 0, nan, 0, 0, 1});
    zero_sign = true;
    SAME(maximum(x, full({6}, 0.5, t)), {inf, 0.5, nan, 0.5, 0.5, 1});
    SAME(minimum(x, full({6}, 0.5, t)), {0.5, -inf, nan, 0, -0.0, 0.5});
    SAME(abs(x), {inf, inf, nan, 0, 0, 1});
    SAME(-x, {-inf, inf, nan, -0.0, 0, -1});
    SAME(floor(x), {inf, -inf, nan, 0, -0.0, 1});
    // Comparisons: NaN compares false except !=.
    EXPECT_EQ((x > 0.5).to_vector<int64_t>(), (std::vector<int64_t>{1, 0, 0, 0, 0, 1}));
    EXPECT_EQ((x != x).to_vector<int64_t>(), (std::vector<int64_t>{0, 0, 1, 0, 0, 0}));
    EXPECT_EQ((x == x).to_vector<int64_t>(), (std::vector<int64_t>{1, 1, 0, 1, 1, 1}));
    // Float -> int: NaN -> 0, infinities saturate.
    EXPECT_EQ(cast(x, int32).to_vector<int64_t>(), (std::vector<int64_t>{2147483647, -2147483648LL, 0, 0, 0, 1}));
    EXPECT_EQ(cast(x, uint8).to_vector<int64_t>(), (std::vector<int64_t>{255, 0, 0, 0, 0, 1}));
    // Reductions: NaN wins max/min/sum; infinities add up; argmax treats NaN as the maximum.
    SAME(x.max(), {nan});
    SAME(x.slice(0, 3, 6).max(), {1});
    SAME(x.slice(0, 0, 2).sum(), {nan});
    SAME(x.slice(0, 0, 1).sum() + x.slice(0, 3, 6).sum(), {inf});
    SAME(x.slice(0, 1, 2).min(), {-inf});
    EXPECT_EQ(x.argmax().item(), 2);
    EXPECT_EQ(x.slice(0, 3, 6).argmax().item(), 2);
    EXPECT_EQ(x.argmin().item(), 2);
    // softmax: a -inf logit gets probability 0, a +inf logit takes everything (NaN: inf - inf).
    Tensor logits = from_vector<double>({0.0, -inf, 0.0}, {3}, t);
    SAME(softmax(logits, 0), {0.5, 0, 0.5});
    SAME(log_softmax(logits, 0), {-std::log(2.0), -inf, -std::log(2.0)});
  }
#undef SAME
}

TEST(SpecialValues, OverflowGivesInfinityNotTheLargestFinite) {
  EXPECT_EQ(exp(full({2}, 100.0, float32)).to_vector<double>(), (std::vector<double>{INFINITY, INFINITY}));
  EXPECT_EQ((full({1}, 60000.0, float16) * 2.0).item(), INFINITY);
  EXPECT_EQ(cast(full({1}, 70000.0, float32), float16).item(), INFINITY);
  EXPECT_EQ(cast(full({1}, -1e39, float64), float32).item(), -INFINITY);
  EXPECT_EQ((full({3}, 1e308, float64) * 10.0).sum().item(), INFINITY);
  EXPECT_EQ(matmul(full({1, 4}, 1e38, float32), full({4, 1}, 10.0, float32)).item(), INFINITY);
  // ...and underflow gives (signed) zero.
  Tensor tiny = exp(full({1}, -200.0, float32)) * -1.0;
  EXPECT_EQ(tiny.item(), 0.0);
  EXPECT_TRUE(std::signbit(tiny.item()));
}

// --- shapes whose byte count overflows ----------------------------------------------------------

TEST(HugeShapes, ByteCountOverflowIsAnErrorAtRecordTime) {
  const int64_t big = int64_t(1) << 62, max = std::numeric_limits<int64_t>::max();
  // Elements fit in int64, bytes do not.
  EXPECT_EQ(error_of([&] { (void)zeros({big}, float64); }), "full: shape [4611686018427387904] has too many elements");
  EXPECT_EQ(error_of([&] { (void)zeros({int64_t(1) << 61}, int8); }),
            "full: shape [2305843009213693952] has too many elements");
  // Element counts that overflow int64 themselves.
  EXPECT_EQ(error_of([&] { (void)zeros({max, 2}); }), "full: shape [9223372036854775807,2] has too many elements");
  EXPECT_EQ(error_of([&] { (void)rand({big, 4}, 1); }), "rand: shape [4611686018427387904,4] has too many elements");
  EXPECT_EQ(error_of([&] { (void)arange(big); }), "arange: shape [4611686018427387904] has too many elements");
  // Ops whose result shape grows.
  Tensor a = zeros({int64_t(1) << 30, 1});
  EXPECT_EQ(error_of([&] { (void)a.expand({int64_t(1) << 30, int64_t(1) << 32}); }),
            "expand: shape [1073741824,4294967296] has too many elements");
  EXPECT_EQ(error_of([&] { (void)(a + zeros({int64_t(1) << 33})); }),
            "add: shape [1073741824,8589934592] has too many elements");
  EXPECT_EQ(error_of([&] { (void)matmul(zeros({int64_t(1) << 31, 1}), zeros({1, int64_t(1) << 31})); }),
            "matmul: shape [2147483648,2147483648] has too many elements");
  EXPECT_EQ(error_of([&] { (void)a.pad({{max - 5, 0}, {0, 0}}); }), "pad: widths overflow axis 0 of shape [1073741824,1]");
  EXPECT_EQ(error_of([&] { (void)a.reshape({max, 2}); }),
            "reshape: cannot reshape [1073741824,1] (1073741824 elements) to [9223372036854775807,2]");
  EXPECT_EQ(error_of([&] { (void)concat({zeros({max / 2 + 1}), zeros({max / 2 + 1})}, 0); }),
            "full: shape [4611686018427387904] has too many elements");
  // Nothing was allocated or computed, and kiln still works.
  EXPECT_EQ((ones({3}) * 2.0).sum().item(), 6.0);
}

TEST(HugeShapes, ExtremeSliceArgumentsClamp) {
  const int64_t max = std::numeric_limits<int64_t>::max(), min = std::numeric_limits<int64_t>::min();
  Tensor x = arange(5);
  EXPECT_EQ(x.slice(0, min, max).to_vector<int64_t>(), (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(x.slice(0, max, min, -1).to_vector<int64_t>(), (std::vector<int64_t>{4, 3, 2, 1, 0}));
  EXPECT_EQ(x.slice(0, 0, 5, max).to_vector<int64_t>(), (std::vector<int64_t>{0}));
  EXPECT_EQ(x.slice(0, 4, min, min).to_vector<int64_t>(), (std::vector<int64_t>{4}));
  EXPECT_EQ(x.slice(0, min, max, 2).numel(), 3);
}

// --- very long recorded chains --------------------------------------------------------------

// Dropping a recorded chain releases its nodes one by one, not by recursion (which overflowed
// the stack at a few hundred thousand ops); a realized long chain is computed and freed too.
TEST(LongChains, DroppingOrRealizingAQuarterMillionOpsNeitherCrashesNorRecurses) {
  Tensor x = full({4}, 0.5);
  {
    Tensor y = x;
    for (int i = 0; i < 250000; ++i) y = y + 1.0;
  }  // dropped unrealized
  Tensor y = x;
  for (int i = 0; i < 250000; ++i) y = y * 1.0 + 1.0;
  std::vector<float> v = y.to_vector<float>();
  EXPECT_EQ(v, std::vector<float>(4, 250000.5f));
  y = Tensor();  // the realized chain's history was dropped at the realize; the value goes now
}

}  // namespace
}  // namespace kiln

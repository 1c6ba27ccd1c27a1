#include "testing/reference.h"

#include <cmath>
#include <random>

#include "absl/strings/str_cat.h"
#include "frontend/capture.h"
#include "frontend/lazy.h"
#include "ir/interpreter.h"
#include "runtime/device.h"
#include "fuzz/compare.h"

namespace kiln::testing {

namespace {

// The interpreter's values of the graph that realizing `outs` would run (its text checked to
// round-trip first), with the text for reports.
::testing::AssertionResult interpret_outs(const std::vector<Tensor>& outs, std::vector<ir::HostTensor>* expected,
                                          std::string* text) {
  std::vector<std::shared_ptr<runtime::Buffer>> bufs;
  ir::Graph g = detail::capture(outs, &bufs);
  *text = ir::print(g);
  auto parsed = ir::parse(*text);
  if (!parsed.ok()) return ::testing::AssertionFailure() << "IR text does not parse: " << parsed.status() << "\n" << *text;
  if (ir::print(*parsed) != *text) return ::testing::AssertionFailure() << "IR text does not round-trip:\n" << *text;
  std::vector<ir::HostTensor> inputs;
  std::vector<ir::NodeId> in_nodes = g.input_nodes();
  for (size_t i = 0; i < bufs.size(); ++i) {
    const ir::Node& n = g.node(in_nodes[i]);
    auto t = download_host(*bufs[i], n.dtype, n.shape);
    if (!t.ok()) return ::testing::AssertionFailure() << "cannot read input " << i << ": " << t.status();
    inputs.push_back(*std::move(t));
  }
  auto e = ir::interpret(g, inputs);
  if (!e.ok()) return ::testing::AssertionFailure() << "interpreter failed: " << e.status();
  *expected = *std::move(e);
  return ::testing::AssertionSuccess();
}

// Compares realized tensors `got` with the interpreter's values.
::testing::AssertionResult compare_outs(const std::vector<ir::HostTensor>& expected, const std::vector<Tensor>& got,
                                        Tolerance tol, const std::string& text) {
  if (expected.size() != got.size())
    return ::testing::AssertionFailure() << got.size() << " outputs; the reference has " << expected.size();
  for (size_t k = 0; k < got.size(); ++k) {
    const ir::HostTensor& want = expected[k];
    if (got[k].shape() != want.shape)
      return ::testing::AssertionFailure() << "output " << k << " shape " << shape_str(got[k].shape()) << " != "
                                           << shape_str(want.shape);
    if (got[k].dtype() != want.dtype)
      return ::testing::AssertionFailure() << "output " << k << " dtype " << dtype_name(got[k].dtype());
    double rtol = tol.rtol, atol = tol.atol, dr, da;
    default_tolerance(want.dtype, &dr, &da);
    if (rtol < 0) rtol = dr;
    if (atol < 0) atol = da;
    // The absolute part scales with the output's largest finite magnitude (at least 1).
    double scale = 1;
    if (is_float(want.dtype))
      for (double v : want.f)
        if (std::isfinite(v)) scale = std::max(scale, std::fabs(v));
    const auto& buf = detail::node_of(got[k])->buffer;
    auto host = download_host(*buf, want.dtype, want.shape);
    if (!host.ok()) return ::testing::AssertionFailure() << "cannot read output " << k << ": " << host.status();
    Comparison c = compare_host(want, *host, {atol * scale, rtol});
    if (!c.ok()) {
      auto f = ::testing::AssertionFailure() << c.bad << " of " << want.numel() << " elements of output " << k
                                             << " differ (" << dtype_name(want.dtype);
      if (is_float(want.dtype)) f << ", rtol " << rtol << ", atol " << atol;
      return f << "):\n" << c.report << "graph:\n" << text;
    }
  }
  return ::testing::AssertionSuccess();
}

}  // namespace

::testing::AssertionResult MatchesReference(const std::vector<Tensor>& outs, Tolerance tol) {
  std::vector<ir::HostTensor> expected;
  std::string text;
  if (auto r = interpret_outs(outs, &expected, &text); !r) return r;
  try {
    realize(outs);
  } catch (const Error& e) {
    return ::testing::AssertionFailure() << "realize failed: " << e.what() << "\n" << text;
  }
  return compare_outs(expected, outs, tol, text);
}

::testing::AssertionResult MatchesInterpreter(const std::vector<Tensor>& lazy, const std::vector<Tensor>& got, Tolerance tol) {
  std::vector<ir::HostTensor> expected;
  std::string text;
  if (auto r = interpret_outs(lazy, &expected, &text); !r) return r;
  return compare_outs(expected, got, tol, text);
}

std::vector<float> random_floats(size_t n, uint32_t seed, float lo, float hi) {
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  if (n && lo < 0 && hi > 0) v[0] = v[0] == 0 ? 0.5f : v[0];
  return v;
}

std::vector<int64_t> random_ints(size_t n, uint32_t seed, int64_t lo, int64_t hi) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int64_t> d(lo, hi - 1);
  std::vector<int64_t> v(n);
  for (int64_t& x : v) x = d(rng);
  return v;
}

Tensor random_tensor(Shape shape, DType dtype, uint32_t seed, double lo, double hi) {
  size_t n = size_t(shape_numel(shape));
  if (is_float(dtype)) return from_vector(random_floats(n, seed, float(lo), float(hi)), shape, dtype);
  if (dtype == DType::kBool) {
    std::vector<int64_t> v = random_ints(n, seed, 0, 2);
    return from_vector(v, shape, dtype);
  }
  int64_t l = int64_t(lo), h = int64_t(hi);
  if (!is_signed(dtype)) l = std::max<int64_t>(l, 0);
  if (h <= l) h = l + 1;
  return from_vector(random_ints(n, seed, l, h), shape, dtype);
}

}  // namespace kiln::testing

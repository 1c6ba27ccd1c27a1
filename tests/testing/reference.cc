#include "testing/reference.h"

#include <cmath>
#include <cstring>
#include <random>

#include "absl/strings/str_cat.h"
#include "frontend/capture.h"
#include "ir/half.h"
#include "ir/interpreter.h"
#include "runtime/device.h"

namespace kiln::testing {
namespace {

ir::HostTensor download(const std::shared_ptr<runtime::Buffer>& buf, DType dt, const Shape& shape) {
  ir::HostTensor t = ir::HostTensor::make(dt, shape);
  int64_t n = t.numel(), es = dtype_size(dt);
  std::vector<uint8_t> bytes(size_t(n * es));
  if (n) {
    absl::Status s = buf->device()->download(buf.get(), bytes.data(), int64_t(bytes.size()));
    if (!s.ok()) throw Error(s);
  }
  for (int64_t i = 0; i < n; ++i) {
    const uint8_t* p = bytes.data() + i * es;
    switch (dt) {
      case DType::kBool: t.i[i] = *p != 0; break;
      case DType::kUInt8: t.i[i] = *p; break;
      case DType::kInt8: t.i[i] = int8_t(*p); break;
      case DType::kInt32: { int32_t v; std::memcpy(&v, p, 4); t.i[i] = v; break; }
      case DType::kInt64: { int64_t v; std::memcpy(&v, p, 8); t.i[i] = v; break; }
      case DType::kFloat16: { uint16_t v; std::memcpy(&v, p, 2); t.f[i] = ir::half_to_float(v); break; }
      case DType::kBFloat16: { uint16_t v; std::memcpy(&v, p, 2); t.f[i] = ir::bf16_to_float(v); break; }
      case DType::kFloat32: { float v; std::memcpy(&v, p, 4); t.f[i] = v; break; }
      case DType::kFloat64: { double v; std::memcpy(&v, p, 8); t.f[i] = v; break; }
    }
  }
  return t;
}

void default_tol(DType dt, double* rtol, double* atol) {
  switch (dt) {
    case DType::kFloat16: *rtol = 1e-2; *atol = 2e-3; break;
    case DType::kBFloat16: *rtol = 2e-2; *atol = 2e-2; break;
    case DType::kFloat64: *rtol = 1e-9; *atol = 1e-10; break;
    default: *rtol = 2e-4; *atol = 2e-5; break;
  }
}

}  // namespace

::testing::AssertionResult MatchesReference(const std::vector<Tensor>& outs, Tolerance tol) {
  std::vector<std::shared_ptr<runtime::Buffer>> bufs;
  ir::Graph g = detail::capture(outs, &bufs);
  std::string text = ir::print(g);
  auto parsed = ir::parse(text);
  if (!parsed.ok()) return ::testing::AssertionFailure() << "IR text does not parse: " << parsed.status() << "\n" << text;
  if (ir::print(*parsed) != text) return ::testing::AssertionFailure() << "IR text does not round-trip:\n" << text;
  std::vector<ir::HostTensor> inputs;
  std::vector<ir::NodeId> in_nodes = g.input_nodes();
  for (size_t i = 0; i < bufs.size(); ++i) {
    const ir::Node& n = g.node(in_nodes[i]);
    inputs.push_back(download(bufs[i], n.dtype, n.shape));
  }
  auto expected = ir::interpret(g, inputs);
  if (!expected.ok()) return ::testing::AssertionFailure() << "interpreter failed: " << expected.status();
  try {
    realize(outs);
  } catch (const Error& e) {
    return ::testing::AssertionFailure() << "realize failed: " << e.what() << "\n" << text;
  }
  for (size_t k = 0; k < outs.size(); ++k) {
    const ir::HostTensor& want = (*expected)[k];
    if (outs[k].shape() != want.shape)
      return ::testing::AssertionFailure() << "output " << k << " shape " << shape_str(outs[k].shape()) << " != "
                                           << shape_str(want.shape);
    if (outs[k].dtype() != want.dtype)
      return ::testing::AssertionFailure() << "output " << k << " dtype " << dtype_name(outs[k].dtype());
    double rtol = tol.rtol, atol = tol.atol, dr, da;
    default_tol(want.dtype, &dr, &da);
    if (rtol < 0) rtol = dr;
    if (atol < 0) atol = da;
    if (is_float(want.dtype)) {
      std::vector<double> got = outs[k].to_vector<double>();
      double scale = 1;
      for (double v : want.f)
        if (std::isfinite(v)) scale = std::max(scale, std::fabs(v));
      int bad = 0;
      std::string report;
      for (size_t i = 0; i < got.size(); ++i) {
        double a = got[i], b = want.f[i];
        bool ok;
        if (std::isnan(b)) ok = std::isnan(a);
        else if (std::isinf(b)) ok = a == b;
        else ok = std::isfinite(a) && std::fabs(a - b) <= atol * scale + rtol * std::fabs(b);
        if (!ok && bad++ < 8) absl::StrAppend(&report, "  [", i, "] got ", a, " want ", b, "\n");
      }
      if (bad)
        return ::testing::AssertionFailure() << bad << " of " << got.size() << " elements of output " << k
                                             << " differ (" << dtype_name(want.dtype) << ", rtol " << rtol << ", atol "
                                             << atol << "):\n" << report << "graph:\n" << text;
    } else {
      std::vector<int64_t> got = outs[k].to_vector<int64_t>();
      int bad = 0;
      std::string report;
      for (size_t i = 0; i < got.size(); ++i)
        if (got[i] != want.i[i] && bad++ < 8) absl::StrAppend(&report, "  [", i, "] got ", got[i], " want ", want.i[i], "\n");
      if (bad)
        return ::testing::AssertionFailure() << bad << " of " << got.size() << " elements of output " << k
                                             << " differ (" << dtype_name(want.dtype) << "):\n" << report << "graph:\n"
                                             << text;
    }
  }
  return ::testing::AssertionSuccess();
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
  if (dtype == DType::kUInt8) l = std::max<int64_t>(l, 0);
  if (h <= l) h = l + 1;
  return from_vector(random_ints(n, seed, l, h), shape, dtype);
}

}  // namespace kiln::testing

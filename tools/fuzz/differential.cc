#include "fuzz/differential.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>
#include <random>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "frontend/capture.h"
#include "frontend/lazy.h"
#include "ir/half.h"
#include "ir/params.h"
#include "runtime/device.h"
#include "replay/compile_or_replay.h"
#include "fuzz/compare.h"

namespace kiln::fuzz {

DevicePrecision DevicePrecision::for_device(const std::string& name) {
  DevicePrecision p;
  if (name == "cpu") return p;
  // GPU APIs: Vulkan's SPIR-V precision rules allow exp 3+2|x| ulp, sin/cos 2^-11 absolute,
  // division 2.5 ulp; CUDA's and Metal's fast paths are of the same order.
  p.transcendental_ulps = 256;
  p.divide_ulps = 4;
  p.sincos_abs = std::ldexp(1.0, -11);
  p.flushes_denormals = true;
  return p;
}

const char* outcome_name(Outcome o) {
  switch (o) {
    case Outcome::kPass: return "pass";
    case Outcome::kMismatch: return "mismatch";
    case Outcome::kDeviceError: return "device error";
    case Outcome::kHarnessError: return "harness error";
  }
  return "?";
}

namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Unit roundoff of a dtype's storage (0 for integers: they are exact).
double unit(DType t) {
  switch (t) {
    case DType::kFloat16: return std::ldexp(1.0, -11);
    case DType::kBFloat16: return std::ldexp(1.0, -8);
    case DType::kFloat32: return std::ldexp(1.0, -24);
    case DType::kFloat64: return std::ldexp(1.0, -53);
    default: return 0;
  }
}
// Unit roundoff of the arithmetic: half types may compute in f32 (and accumulate in f32).
double compute_unit(DType t) {
  return t == DType::kFloat16 || t == DType::kBFloat16 ? unit(DType::kFloat32) : unit(t);
}
double min_normal(DType t) {
  switch (t) {
    case DType::kFloat16: return std::ldexp(1.0, -14);
    case DType::kBFloat16:
    case DType::kFloat32: return std::ldexp(1.0, -126);
    case DType::kFloat64: return std::ldexp(1.0, -1022);
    default: return 0;
  }
}

struct Magnitudes {
  double max_abs = 0;         // largest finite |v|
  double min_abs = INFINITY;  // smallest finite |v|
  double max_log = 0;         // largest |ln v| over finite v > 0
};

// Largest finite value of a float dtype.
double max_finite(DType t) {
  switch (t) {
    case DType::kFloat16: return 65504.0;
    case DType::kBFloat16: return std::ldexp(255.0, 120);
    case DType::kFloat32: return double(std::numeric_limits<float>::max());
    case DType::kFloat64: return std::numeric_limits<double>::max();
    default: return INFINITY;
  }
}

// --- values the allowed error leaves unconstrained ------------------------------------------
//
// The bounds are absolute errors of finite values. Where a node's reference value is infinite,
// or an operand's error interval straddles a point where the op is discontinuous in the
// extended reals, a correct device may land on a different non-finite result (or a finite one),
// and no finite bound describes that. The checks below find such elements from the reference
// values; their node is then unbounded (like floor of a rounded value), which propagates to
// everything computed from it and counts as "without an error bound". They only fire where the
// error the bound already allows makes the result's value undetermined: exact operands (on
// devices that flush subnormals: exact normal ones) never trigger them, and NaN for a finite
// reference with a finite bound, or inf where nothing can overflow, still fails.

// Whether a device whose value of a node is within the checker's tolerance of `v` (what
// check_case accepts: safety * E, plus a flushed subnormal) may hold both 0 and a non-zero value.
bool straddles_zero(double v, double e, DType t, const DevicePrecision& prec) {
  if (!std::isfinite(v)) return false;
  if (e > 0) return std::fabs(v) <= prec.safety * e + (prec.flushes_denormals ? min_normal(t) : 0);
  // Exact: only a subnormal that the device may flush to zero.
  return prec.flushes_denormals && v != 0 && std::fabs(v) < min_normal(t);
}

// A product term x * y is undetermined where one factor is infinite and the other's interval
// straddles zero: 0 * inf = NaN, while any non-zero value gives +-inf (and in a sum, that inf
// may meet one of the other sign: NaN again, or not). Both are correct results of the rounded
// computation the bound allows (e.g. x - s*c contracted to an FMA leaves 2e-8 where the
// reference rounds to 0; an f16 sigmoid(-18) kept in f32 inside a fused kernel is 1.5e-8 where
// the reference, rounding every op to f16, has 0).
bool undetermined_product(double x, double ex, double y, double ey, DType t, const DevicePrecision& prec) {
  return (std::isinf(x) && straddles_zero(y, ey, t, prec)) || (std::isinf(y) && straddles_zero(x, ex, t, prec));
}

bool has_inf(const ir::HostTensor& t) {
  for (double v : t.f)
    if (std::isinf(v)) return true;
  return false;
}

// Whether some element of a mul, dot or reduce_prod node multiplies an infinity by a factor
// whose allowed interval straddles zero (see undetermined_product).
bool has_undetermined_product(const ir::Graph& g, const ir::Node& node, const std::vector<ir::HostTensor>& values,
                              const std::vector<double>& E, const DevicePrecision& prec) {
  const DType t = node.dtype;
  if (!is_float(t)) return false;
  const std::vector<ir::NodeId>& in = node.inputs;
  switch (node.op) {
    case ir::Op::kMul: {
      const ir::HostTensor &a = values[in[0]], &b = values[in[1]];
      if (!has_inf(a) && !has_inf(b)) return false;
      for (size_t k = 0; k < a.f.size(); ++k)
        if (undetermined_product(a.f[k], E[in[0]], b.f[k], E[in[1]], t, prec)) return true;
      return false;
    }
    case ir::Op::kDot: {
      const ir::HostTensor &a = values[in[0]], &b = values[in[1]];
      if (!has_inf(a) && !has_inf(b)) return false;
      const Shape& as = g.node(in[0]).shape;
      size_t r = as.size();
      int64_t M = as[r - 2], K = as[r - 1], N = g.node(in[1]).shape[r - 1];
      int64_t batch = 1;
      for (size_t d = 0; d + 2 < r; ++d) batch *= as[d];
      for (int64_t bt = 0; bt < batch; ++bt)
        for (int64_t m = 0; m < M; ++m)
          for (int64_t k = 0; k < K; ++k) {
            double x = a.f[size_t((bt * M + m) * K + k)];
            for (int64_t j = 0; j < N; ++j)
              if (undetermined_product(x, E[in[0]], b.f[size_t((bt * K + k) * N + j)], E[in[1]], t, prec)) return true;
          }
      return false;
    }
    case ir::Op::kReduceProd: {
      // Per output element: an infinity and a factor straddling zero in the same group.
      const ir::HostTensor& a = values[in[0]];
      if (!has_inf(a)) return false;
      const Shape& as = g.node(in[0]).shape;
      size_t out_n = size_t(std::max<int64_t>(1, shape_numel(node.shape)));
      std::vector<char> inf(out_n, 0), zero(out_n, 0);
      std::vector<int64_t> idx(as.size());
      for (size_t k = 0; k < a.f.size(); ++k) {
        int64_t rest = int64_t(k), o = 0;
        for (size_t d = as.size(); d-- > 0;) idx[d] = rest % as[d], rest /= as[d];
        for (int64_t ax : node.ints) idx[size_t(ax)] = 0;
        for (size_t d = 0; d < as.size(); ++d) o = o * node.shape[d] + idx[d];
        inf[size_t(o)] |= std::isinf(a.f[k]);
        zero[size_t(o)] |= straddles_zero(a.f[k], E[in[0]], t, prec);
        if (inf[size_t(o)] && zero[size_t(o)]) return true;
      }
      return false;
    }
    default: return false;
  }
}

Magnitudes magnitudes(const ir::HostTensor& t) {
  Magnitudes m;
  int64_t n = t.numel();
  for (int64_t k = 0; k < n; ++k) {
    double v = std::fabs(t.get(k));
    if (!std::isfinite(v)) continue;
    m.max_abs = std::max(m.max_abs, v);
    m.min_abs = std::min(m.min_abs, v);
    if (v > 0) m.max_log = std::max(m.max_log, std::fabs(std::log(v)));
  }
  if (m.min_abs == 0) m.max_log = INFINITY;
  return m;
}

}  // namespace

std::vector<double> error_bounds(const ir::Graph& g, const std::vector<ir::HostTensor>& values,
                                 const DevicePrecision& prec, std::vector<char>* unmodeled, std::vector<double>* relative) {
  size_t n = g.size();
  std::vector<double> E(n, 0);
  if (unmodeled) unmodeled->assign(n, 0);
  if (relative) relative->assign(n, 0);
  std::vector<Magnitudes> mag(n);
  for (size_t i = 0; i < n; ++i) mag[i] = magnitudes(values[i]);
  for (size_t id = 0; id < n; ++id) {
    const ir::Node& node = g.node(ir::NodeId(id));
    const std::vector<ir::NodeId>& in = node.inputs;
    auto Min = [&](size_t k) { return mag[in[k]].max_abs; };
    // A transcendental function of an f64 value that the device evaluates in f32: its arguments
    // are rounded to f32 and the function has f32 precision.
    const bool in_f32 = prec.f64_transcendentals_in_f32 && node.dtype == DType::kFloat64 &&
                        (node.op == ir::Op::kExp || node.op == ir::Op::kLog || node.op == ir::Op::kSin ||
                         node.op == ir::Op::kCos || node.op == ir::Op::kTanh || node.op == ir::Op::kSigmoid ||
                         node.op == ir::Op::kErf || node.op == ir::Op::kPow);
    auto Ein = [&](size_t k) { return E[in[k]] + (in_f32 ? unit(DType::kFloat32) * Min(k) : 0.0); };
    auto max_in = [&] {
      double e = 0;
      for (ir::NodeId x : in) e = std::max(e, E[x]);
      return e;
    };
    auto any_in = [&] { return max_in() > 0; };
    const double M = mag[id].max_abs;
    const double ur = unit(node.dtype);              // rounding of the stored result
    const double uc = in_f32 ? unit(DType::kFloat32) : compute_unit(node.dtype);  // arithmetic precision
    const double tr = prec.transcendental_ulps * uc;  // transcendental function error
    const double round = ur * M;
    double e = 0;
    double rel = 0;  // the coefficient of M among e's terms (see `relative` in differential.h)
    switch (node.op) {
      case ir::Op::kInput:
      case ir::Op::kConst:
      case ir::Op::kParam: e = 0; break;
      case ir::Op::kIota: e = is_float(node.dtype) && M > exact_int_limit(node.dtype) ? round : 0; break;
      case ir::Op::kRand: e = 2 * ur * std::max(1.0, M); break;
      case ir::Op::kRandn: e = tr * M + std::sqrt(tr) + round; break;
      case ir::Op::kNeg:
      case ir::Op::kAbs:
      case ir::Op::kMax:
      case ir::Op::kMin:
      case ir::Op::kReduceMax:
      case ir::Op::kReduceMin:
      case ir::Op::kReshape:
      case ir::Op::kPermute:
      case ir::Op::kExpand:
      case ir::Op::kSlice:
      case ir::Op::kPad:
      case ir::Op::kWindow:
      case ir::Op::kConcat: e = max_in(); break;
      case ir::Op::kWhere: e = Ein(0) > 0 ? INFINITY : std::max(Ein(1), Ein(2)); break;
      // Picks elements: as exact as its source, at positions only exact indices determine.
      case ir::Op::kGather: e = Ein(1) > 0 ? INFINITY : Ein(0); break;
      // Sums (or multiplies) up to K updates into an element, in order.
      case ir::Op::kScatter: {
        const double K = double(g.node(in[1]).shape[size_t(node.ints[0])]);
        const auto mode = ir::ScatterMode(node.ints[1]);
        if (Ein(1) > 0 || mode == ir::ScatterMode::kMul) e = INFINITY;
        else if (mode == ir::ScatterMode::kAdd) e = Ein(0) + K * (Ein(2) + round);
        else e = std::max(Ein(0), Ein(2));
        break;
      }
      // Discontinuous in their operands: exact only when the operands are.
      case ir::Op::kNot:
      case ir::Op::kAnd:
      case ir::Op::kOr:
      case ir::Op::kLt:
      case ir::Op::kLe:
      case ir::Op::kEq:
      case ir::Op::kNe:
      case ir::Op::kFloor:
      case ir::Op::kCeil:
      case ir::Op::kArgMax:
      case ir::Op::kArgMin:
      case ir::Op::kIntDiv:
      case ir::Op::kIntRem: e = any_in() ? INFINITY : 0; break;
      case ir::Op::kCast: {
        DType from = g.node(in[0]).dtype, to = node.dtype;
        if (!is_float(to)) e = is_float(from) && Ein(0) > 0 ? INFINITY : 0;
        else if (!is_float(from)) rel = Min(0) > exact_int_limit(to) ? ur : 0, e = rel * M;
        else rel = unit(to) > unit(from) ? ur : 0, e = Ein(0) + rel * M;
        break;
      }
      case ir::Op::kAdd:
      case ir::Op::kSub: e = Ein(0) + Ein(1) + round, rel = ur; break;
      case ir::Op::kMul: e = Min(0) * Ein(1) + Min(1) * Ein(0) + Ein(0) * Ein(1) + round, rel = ur; break;
      case ir::Op::kDiv: {
        double ea = Ein(0), eb = Ein(1), d = mag[in[1]].min_abs - eb;
        double prop = ea == 0 && eb == 0 ? 0 : (d <= 0 ? INFINITY : (ea + M * eb) / d);
        e = prop + prec.divide_ulps * uc * M + round;
        rel = prec.divide_ulps * uc + ur;
        break;
      }
      case ir::Op::kRecip: {
        double ea = Ein(0), ma = mag[in[0]].min_abs, d = ma - ea;
        double prop = ea == 0 ? 0 : (d <= 0 ? INFINITY : ea / (ma * d));
        e = prop + prec.divide_ulps * uc * M + round;
        rel = prec.divide_ulps * uc + ur;
        break;
      }
      case ir::Op::kSqrt: {
        double ea = Ein(0), ma = mag[in[0]].min_abs;
        double prop = ea == 0 ? 0 : std::min(ea / (2 * std::sqrt(std::max(ma - ea, 0.0))), std::sqrt(ea));
        e = prop + prec.divide_ulps * uc * M + round;
        rel = prec.divide_ulps * uc + ur;
        break;
      }
      case ir::Op::kRsqrt: {
        double ea = Ein(0), d = mag[in[0]].min_abs - ea;
        double prop = ea == 0 ? 0 : (d <= 0 ? INFINITY : ea / (2 * std::pow(d, 1.5)));
        e = prop + tr * M + round;
        rel = tr + ur;
        break;
      }
      // exp(x + d) = exp(x) exp(d): the propagated error is relative too.
      case ir::Op::kExp: e = M * std::expm1(Ein(0)) + tr * M + round, rel = std::expm1(Ein(0)) + tr + ur; break;
      case ir::Op::kLog: {
        double ea = Ein(0), d = mag[in[0]].min_abs - ea;
        double prop = ea == 0 ? 0 : (d <= 0 ? INFINITY : ea / d);
        e = prop + tr * std::max(1.0, M) + round;
        rel = ur;
        break;
      }
      case ir::Op::kSin:
      case ir::Op::kCos: e = Ein(0) + tr * std::max(1.0, Min(0)) + prec.sincos_abs + round, rel = ur; break;
      case ir::Op::kTanh: e = Ein(0) + tr + round, rel = ur; break;
      case ir::Op::kSigmoid: e = 0.25 * Ein(0) + tr + round, rel = ur; break;
      case ir::Op::kErf: e = 1.13 * Ein(0) + tr + round, rel = ur; break;
      case ir::Op::kPow: {
        // d/da a^b = b a^(b-1), d/db a^b = ln(a) a^b: relative error b*ea/a + ln(a)*eb.
        double ea = Ein(0), eb = Ein(1), d = mag[in[0]].min_abs - ea;
        double y = Min(1) * mag[in[0]].max_log;  // |b ln a|: exp(y) amplifies the log's error
        double rin = ea == 0 && eb == 0 ? 0 : (d <= 0 ? INFINITY : Min(1) * ea / d + mag[in[0]].max_log * eb);
        e = M * std::expm1(rin) + tr * M * (1 + y) + round;
        rel = std::expm1(rin) + tr * (1 + y) + ur;
        break;
      }
      // A segment sums up to all N rows of the data in order; max / min pick one of them.
      case ir::Op::kSegmentReduce: {
        const double N = double(g.node(in[0]).shape[0]);
        const double uacc = compute_unit(node.dtype);
        if (Ein(1) > 0 || ir::ScatterMode(node.ints[0]) == ir::ScatterMode::kMul) e = INFINITY;
        else if (ir::ScatterMode(node.ints[0]) == ir::ScatterMode::kAdd) e = N * Ein(0) + std::max(0.0, N - 1) * uacc * N * Min(0) + round, rel = ur;
        else e = Ein(0);
        break;
      }
      case ir::Op::kReduceSum:
      case ir::Op::kReduceProd: {
        int64_t out_n = std::max<int64_t>(1, shape_numel(node.shape));
        double N = double(shape_numel(g.node(in[0]).shape)) / double(out_n);
        double uacc = compute_unit(node.dtype);
        if (node.op == ir::Op::kReduceSum) {
          // Any summation order: (N - 1) u sum|x| <= (N - 1) u N max|x|.
          e = N * Ein(0) + std::max(0.0, N - 1) * uacc * N * Min(0) + round;
          rel = ur;
        } else {
          e = N * std::pow(std::max(1.0, Min(0)), std::max(0.0, N - 1)) * Ein(0) + 2 * N * uacc * M + round;
          rel = 2 * N * uacc + ur;
        }
        break;
      }
      case ir::Op::kDot: {
        double K = double(g.node(in[0]).shape.back());
        double uacc = compute_unit(node.dtype);
        e = K * (Min(0) * Ein(1) + Min(1) * Ein(0) + Ein(0) * Ein(1)) + K * uacc * K * Min(0) * Min(1) + round;
        rel = ur;
        break;
      }
      case ir::Op::kAttention: {
        // Scores s = scale q.k + bias: each off by at most es. Softmax turns that into a relative
        // error of at most expm1(2 es) per probability; probabilities rounded to the dtype (the
        // fused kernel) and summed in f32 add 2 u + Sk u32. The output is a convex combination
        // of v's rows, so |out| <= max|v| bounds the absolute error.
        const Shape& ks = g.node(in[1]).shape;
        const double D = double(ks.back()), Sk = double(ks[ks.size() - 2]), s = std::fabs(node.scalar.as_double());
        const double u32 = unit(DType::kFloat32);
        const double es = s * D * (Min(0) * Ein(1) + Min(1) * Ein(0) + Ein(0) * Ein(1)) +
                          s * D * D * u32 * Min(0) * Min(1) + (in.size() > 3 ? Ein(3) + u32 * Min(3) : 0.0);
        e = Ein(2) + Min(2) * (std::expm1(2 * es) + 2 * unit(node.dtype) + Sk * u32 + tr) + round;
        rel = ur;
        break;
      }
      default:
        e = INFINITY;
        if (unmodeled) (*unmodeled)[id] = 1;
        break;
    }
    if (unmodeled)
      for (ir::NodeId x : in) (*unmodeled)[id] |= (*unmodeled)[size_t(x)];
    if (!is_float(node.dtype) && e > 0) e = INFINITY;  // an integer that may be off by rounding
    if (std::isfinite(e) && has_undetermined_product(g, node, values, E, prec)) e = INFINITY;
    // Overflow: where a finite result is within the allowed error of the dtype's largest value,
    // the device's rounding may carry it to +-inf (and the reference's to a finite value), so
    // the result is unbounded. Results far from the limit are not affected: an inf there fails.
    if (is_float(node.dtype) && std::isfinite(e) && e > 0 && M + prec.safety * e >= max_finite(node.dtype))
      e = INFINITY;
    E[id] = std::isnan(e) ? INFINITY : e;
    if (relative && std::isfinite(E[id])) (*relative)[id] = rel;
  }
  return E;
}

absl::StatusOr<std::vector<ir::HostTensor>> interpret_all(const Case& c) {
  ir::Graph all = c.graph;
  all.mutable_outputs().clear();
  for (size_t i = 0; i < all.size(); ++i) all.add_output(ir::NodeId(i));
  return ir::interpret(all, c.inputs);
}

Runner device_runner(runtime::Device* device) {
  return [device](const Case& c) -> absl::StatusOr<std::vector<ir::HostTensor>> {
    std::vector<std::shared_ptr<runtime::Buffer>> bufs;
    for (const ir::HostTensor& t : c.inputs) {
      auto b = testing::upload_host(device, t);
      if (!b.ok()) return b.status();
      bufs.push_back(*std::move(b));
    }
    // As a realize does: float scalars and seeds become params (ir/params.h), so every case
    // also checks that the kernels read them right.
    auto outs = replay::run_graph(device, ir::lift_params(c.graph), bufs);
    if (!outs.ok()) return outs.status();
    std::vector<ir::HostTensor> r;
    for (size_t k = 0; k < c.graph.outputs().size(); ++k) {
      const ir::Node& n = c.graph.node(c.graph.outputs()[k]);
      auto t = testing::download_host(*(*outs)[k], n.dtype, n.shape);
      if (!t.ok()) return t.status();
      r.push_back(*std::move(t));
    }
    return r;
  };
}

CheckResult check_case(const Case& c, const Runner& run, const DevicePrecision& prec) {
  CheckResult r;
  if (absl::Status v = ir::verify(c.graph); !v.ok()) {
    r.outcome = Outcome::kHarnessError;
    r.detail = absl::StrCat("invalid graph: ", v.message());
    return r;
  }
  auto values = interpret_all(c);
  if (!values.ok()) {
    r.outcome = Outcome::kHarnessError;
    r.detail = absl::StrCat("interpreter failed: ", values.status().message());
    return r;
  }
  std::vector<char> unmodeled;
  std::vector<double> relative;
  std::vector<double> E = error_bounds(c.graph, *values, prec, &unmodeled, &relative);
  auto got = run(c);
  if (!got.ok()) {
    r.outcome = Outcome::kDeviceError;
    r.detail = absl::StrCat("the device failed: ", got.status().ToString());
    return r;
  }
  for (size_t k = 0; k < c.graph.outputs().size(); ++k) {
    ir::NodeId id = c.graph.outputs()[k];
    const ir::HostTensor& want = (*values)[id];
    const ir::HostTensor& have = (*got)[k];
    if (have.dtype != want.dtype || have.shape != want.shape) {
      r.outcome = Outcome::kMismatch;
      absl::StrAppend(&r.detail, "output ", k, " is ", dtype_name(have.dtype), shape_str(have.shape), ", want ",
                      dtype_name(want.dtype), shape_str(want.shape), "\n");
      continue;
    }
    // Each element's tolerance: the bound's part that scales with magnitude taken at the
    // element's own (relative), the rest as it is.
    testing::ElementTolerance tol;
    const double scaled = std::isfinite(E[id]) ? relative[size_t(id)] * magnitudes(want).max_abs : 0;
    tol.abs_tol = prec.safety * std::max(0.0, E[id] - scaled) + (prec.flushes_denormals ? min_normal(want.dtype) : 0);
    tol.rel_tol = std::isfinite(E[id]) ? prec.safety * relative[size_t(id)] : 0;
    ++r.outputs_checked;
    if (std::isinf(tol.abs_tol)) ++r.outputs_unbounded;
    if (std::isinf(tol.abs_tol) && unmodeled[size_t(id)]) {
      // Not one of the documented reasons: an op the error model does not cover.
      std::string ops;
      for (size_t x = 0; x <= size_t(id); ++x)
        if (unmodeled[x] && std::all_of(c.graph.node(ir::NodeId(x)).inputs.begin(), c.graph.node(ir::NodeId(x)).inputs.end(),
                                        [&](ir::NodeId i) { return !unmodeled[size_t(i)]; }))
          absl::StrAppend(&ops, ops.empty() ? "" : ", ", ir::op_name(c.graph.node(ir::NodeId(x)).op), " (%", x, ")");
      r.outcome = Outcome::kHarnessError;
      absl::StrAppend(&r.detail, "output ", k, " (%", id, ") has no error bound: the error model lacks ", ops,
                      " (tools/fuzz/differential.cc, error_bounds)\n");
      continue;
    }
    testing::Comparison cmp = testing::compare_host(want, have, tol);
    if (std::isfinite(cmp.worst_ratio)) r.worst_ratio = std::max(r.worst_ratio, cmp.worst_ratio);
    if (!cmp.ok()) {
      r.outcome = Outcome::kMismatch;
      absl::StrAppend(&r.detail, "output ", k, " (%", id, ", ", dtype_name(want.dtype), shape_str(want.shape), "): ",
                      cmp.bad, " of ", want.numel(), " elements differ");
      if (is_float(want.dtype)) {
        absl::StrAppend(&r.detail, " (allowed |error| <= ", tol.abs_tol);
        if (tol.rel_tol > 0) absl::StrAppend(&r.detail, " + ", tol.rel_tol, " * |want|");
        absl::StrAppend(&r.detail, ")");
      }
      absl::StrAppend(&r.detail, "\n", cmp.report);
    }
  }
  return r;
}

absl::StatusOr<Case> capture_case(const std::vector<Tensor>& outputs) {
  Case c;
  std::vector<std::shared_ptr<runtime::Buffer>> bufs;
  c.graph = detail::capture(outputs, &bufs);
  std::vector<ir::NodeId> in_nodes = c.graph.input_nodes();
  for (size_t i = 0; i < bufs.size(); ++i) {
    const ir::Node& n = c.graph.node(in_nodes[i]);
    auto t = testing::download_host(*bufs[i], n.dtype, n.shape);
    if (!t.ok()) return t.status();
    c.inputs.push_back(*std::move(t));
  }
  return c;
}

// --- minimizer -------------------------------------------------------------------------------

namespace {

// A node replaced while rebuilding: by a new input holding `value`, or by node `alias`.
struct Replacement {
  bool is_alias = false;
  ir::NodeId alias = -1;
  ir::HostTensor value;
};

// `c` with some nodes replaced and only `outputs` kept (dead nodes dropped, inputs renumbered).
Case rebuild(const Case& c, const std::vector<ir::NodeId>& outputs, const std::map<ir::NodeId, Replacement>& repl) {
  const ir::Graph& g = c.graph;
  std::vector<char> needed(g.size(), 0);
  std::vector<ir::NodeId> stack(outputs.begin(), outputs.end());
  while (!stack.empty()) {
    ir::NodeId id = stack.back();
    stack.pop_back();
    if (needed[id]) continue;
    needed[id] = 1;
    auto it = repl.find(id);
    if (it != repl.end()) {
      if (it->second.is_alias) stack.push_back(it->second.alias);
      continue;
    }
    for (ir::NodeId x : g.node(id).inputs) stack.push_back(x);
  }
  Case out;
  std::vector<ir::NodeId> map(g.size(), -1);
  for (size_t id = 0; id < g.size(); ++id) {
    if (!needed[id]) continue;
    const ir::Node& n = g.node(ir::NodeId(id));
    auto it = repl.find(ir::NodeId(id));
    auto add_input = [&](const ir::HostTensor& v) {
      ir::Node in;
      in.op = ir::Op::kInput;
      in.dtype = n.dtype;
      in.shape = n.shape;
      in.ints = {int64_t(out.inputs.size())};
      out.inputs.push_back(v);
      return out.graph.add(in);
    };
    if (it != repl.end() && it->second.is_alias) {
      map[id] = map[it->second.alias];
    } else if (it != repl.end()) {
      map[id] = add_input(it->second.value);
    } else if (n.op == ir::Op::kInput) {
      map[id] = add_input(c.inputs[n.ints[0]]);
    } else {
      ir::Node copy = n;
      for (ir::NodeId& x : copy.inputs) x = map[x];
      map[id] = out.graph.add(copy);
    }
  }
  for (ir::NodeId o : outputs) out.graph.add_output(map[o]);
  return out;
}

}  // namespace

double round_to_dtype(DType t, double v) {
  switch (t) {
    case DType::kFloat32: return double(float(v));
    case DType::kFloat16: return ir::round_half(v);
    case DType::kBFloat16: return ir::round_bf16(v);
    default: return v;
  }
}

ir::HostTensor random_host(DType dt, const Shape& shape, std::mt19937_64& rng) {
  ir::HostTensor t = ir::HostTensor::make(dt, shape);
  int64_t n = t.numel();
  std::uniform_real_distribution<double> f(-2, 2);
  std::uniform_int_distribution<int64_t> i(is_signed(dt) ? -9 : 0, dt == DType::kBool ? 1 : 9);
  for (int64_t k = 0; k < n; ++k) {
    if (is_float(dt)) t.f[k] = round_to_dtype(dt, f(rng));
    else t.i[k] = i(rng);
  }
  if (n > 0) {  // never all zeros
    if (is_float(dt)) t.f[0] = t.f[0] == 0 ? 1 : t.f[0];
    else t.i[0] = t.i[0] == 0 ? 1 : t.i[0];
  }
  return t;
}

namespace {

// Every dimension equal to `from` becomes `to` (inputs of a changed shape get new data);
// nullopt when the result is not a valid graph.
std::optional<Case> substitute_dim(const Case& c, int64_t from, int64_t to, std::mt19937_64& rng) {
  Case out;
  out.inputs = c.inputs;
  for (const ir::Node& n0 : c.graph.nodes()) {
    ir::Node n = n0;
    bool changed = false;
    for (int64_t& d : n.shape)
      if (d == from) d = to, changed = true;
    // Shapes that follow from the operands follow them (a concat's axis is their sum).
    if (n.op == ir::Op::kConcat && !n.ints.empty() && n.ints[0] < int64_t(n.shape.size())) {
      int64_t total = 0;
      for (ir::NodeId x : n.inputs) total += out.graph.node(x).shape.size() > size_t(n.ints[0]) ? out.graph.node(x).shape[n.ints[0]] : 0;
      n.shape[n.ints[0]] = total;
    } else if (n.op == ir::Op::kPad && n.ints.size() == 2 * n.shape.size()) {
      const Shape& in = out.graph.node(n.inputs[0]).shape;
      for (size_t d = 0; d < n.shape.size() && d < in.size(); ++d) n.shape[d] = in[d] + n.ints[2 * d] + n.ints[2 * d + 1];
    }
    if (n.op == ir::Op::kInput && changed) out.inputs[n.ints[0]] = random_host(n.dtype, n.shape, rng);
    out.graph.add(n);
  }
  if (out.graph.size() != c.graph.size()) return std::nullopt;  // nodes merged: ids shifted
  for (ir::NodeId o : c.graph.outputs()) out.graph.add_output(o);
  if (!ir::verify(out.graph).ok() || out.graph == c.graph) return std::nullopt;  // invalid, or no change
  return out;
}

}  // namespace

Case minimize(const Case& c, Outcome outcome, const Runner& run, const DevicePrecision& prec,
              const MinimizeOptions& opts, std::string* log) {
  Case cur = c;
  int checks = 0;
  double deadline = now_s() + opts.max_seconds;
  std::mt19937_64 rng(12345);
  auto budget_left = [&] { return checks < opts.max_checks && now_s() < deadline; };
  auto fails = [&](const Case& cand) {
    if (!budget_left() || !ir::verify(cand.graph).ok()) return false;
    ++checks;
    return check_case(cand, run, prec).outcome == outcome;
  };
  auto note = [&](const std::string& what) {
    if (log) absl::StrAppend(log, "  minimize: ", what, " -> ", cur.graph.size(), " nodes\n");
  };
  // 1. One output.
  const std::vector<ir::NodeId> outs = cur.graph.outputs();
  if (outs.size() > 1) {
    for (size_t k = 0; k < outs.size(); ++k) {
      Case cand = rebuild(cur, {outs[k]}, {});
      if (fails(cand)) {
        cur = std::move(cand);
        note(absl::StrCat("kept output ", k));
        break;
      }
    }
  }
  bool progress = true;
  while (progress && budget_left()) {
    progress = false;
    auto values = interpret_all(cur);
    if (!values.ok()) break;
    const ir::Graph& g = cur.graph;
    std::set<ir::NodeId> out_set(g.outputs().begin(), g.outputs().end());
    // 2. Replace a subgraph by an input holding its value (closest to the outputs first).
    for (int id = int(g.size()) - 1; id >= 0 && !progress; --id) {
      const ir::Node& n = g.node(id);
      if (ir::op_class(n.op) == ir::OpClass::kSource || out_set.count(id)) continue;
      Replacement r;
      r.value = (*values)[id];
      Case cand = rebuild(cur, g.outputs(), {{id, r}});
      if (cand.graph.size() >= g.size() && cand.inputs.size() >= cur.inputs.size()) continue;
      if (fails(cand)) {
        std::string what = absl::StrCat("replaced %", id, " (", ir::op_name(n.op), ") by an input");
        cur = std::move(cand);  // `g` and `n` refer into the old case from here on
        note(what);
        progress = true;
      }
    }
    if (progress) continue;
    // 3. Bypass an op whose operand already has the result's shape and dtype.
    for (int id = int(g.size()) - 1; id >= 0 && !progress; --id) {
      const ir::Node& n = g.node(id);
      for (ir::NodeId x : n.inputs) {
        const ir::Node& xn = g.node(x);
        if (xn.shape != n.shape || xn.dtype != n.dtype) continue;
        Replacement r;
        r.is_alias = true;
        r.alias = x;
        Case cand = rebuild(cur, g.outputs(), {{id, r}});
        if (fails(cand)) {
          std::string what = absl::StrCat("bypassed %", id, " (", ir::op_name(n.op), ")");
          cur = std::move(cand);  // `g` and `n` refer into the old case from here on
          note(what);
          progress = true;
          break;
        }
      }
    }
    if (progress) continue;
    // 4. Shrink dimension sizes everywhere at once (new random data where shapes change).
    std::set<int64_t, std::greater<int64_t>> dims;
    for (const ir::Node& n : g.nodes())
      for (int64_t d : n.shape)
        if (d > 1) dims.insert(d);
    for (int64_t d : dims) {
      for (int64_t to : {int64_t(1), int64_t(2), d / 2, d - 1}) {
        if (to >= d || to < 1) continue;
        auto cand = substitute_dim(cur, d, to, rng);
        if (cand && fails(*cand)) {
          cur = *std::move(cand);
          note(absl::StrCat("dimension ", d, " -> ", to));
          progress = true;
          break;
        }
      }
      if (progress) break;
    }
  }
  if (log) absl::StrAppend(log, "  minimize: ", checks, " device runs\n");
  return cur;
}

std::string describe_case(const Case& c, int64_t max_values) {
  std::string r = ir::print(c.graph);
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const ir::HostTensor& t = c.inputs[i];
    absl::StrAppend(&r, "input ", i, ": ", dtype_name(t.dtype), shape_str(t.shape));
    if (t.numel() <= max_values) {
      std::vector<std::string> v;
      for (int64_t k = 0; k < t.numel(); ++k)
        v.push_back(is_float(t.dtype) ? absl::StrCat(t.f[k]) : absl::StrCat(t.i[k]));
      absl::StrAppend(&r, " = [", absl::StrJoin(v, ", "), "]");
    } else {
      absl::StrAppend(&r, " (", t.numel(), " values, not shown)");
    }
    r += "\n";
  }
  return r;
}

// --- the fuzzing loop ------------------------------------------------------------------------

FuzzStats run_fuzz(runtime::Device* device, const FuzzOptions& opts, std::FILE* out) {
  FuzzStats st;
  double t0 = now_s();
  DevicePrecision prec = DevicePrecision::for_device(device->name());
  Runner run = device_runner(device);
  GenOptions gen_opts = opts.gen;
  if (device->description().find("llvmpipe") != std::string::npos && gen_opts.special_percent > 0) {
    // Mesa's lavapipe folds x * 0.0 to 0 for infinite and NaN x once a product has a constant
    // zero factor (an unrolled iota, say): a driver bug, documented by the skip in
    // Elementwise.InfOrNanTimesZeroIsNan. Inputs with NaN/inf would report it at random;
    // every other device (the CPU in CI, GPUs' Vulkan drivers) keeps them.
    gen_opts.special_percent = 0;
    if (out) std::fprintf(out, "kiln_fuzz: %s: no NaN/inf inputs on llvmpipe (it folds x * 0.0 to 0 for inf/NaN x)\n",
                          device->name().c_str());
  }
  Device dev = detail::Access::device(device);
  int64_t first = opts.only_index >= 0 ? opts.only_index : 0;
  int64_t last = opts.only_index >= 0 ? opts.only_index + 1 : opts.count;
  for (int64_t i = first; i < last; ++i) {
    uint64_t gs = graph_seed(opts.seed, i);
    std::string where = absl::StrCat("graph ", i, " of run seed ", opts.seed, " (graph seed ", gs, ") on ", device->name());
    std::string reproduce = absl::StrCat("kiln_fuzz --seed ", opts.seed, " --index ", i, " --device ", device->name());
    GeneratedGraph gen;
    Case c;
    try {
      gen = generate_graph(gs, dev, gen_opts);
      auto captured = capture_case(gen.outputs);
      if (!captured.ok()) throw Error(captured.status());
      c = *std::move(captured);
    } catch (const Error& e) {
      ++st.failures;
      std::fprintf(out, "\nFAIL %s: generating the graph failed: %s\n  reproduce: %s\n", where.c_str(), e.what(),
                   reproduce.c_str());
      if (st.failures >= opts.max_failures) break;
      continue;
    }
    ++st.graphs;
    st.nodes += int64_t(c.graph.size());
    if (!opts.dump_dir.empty()) {
      if (std::FILE* f = std::fopen(absl::StrCat(opts.dump_dir, "/graph_", i, ".ir").c_str(), "w")) {
        std::fputs(ir::print(c.graph).c_str(), f);
        std::fclose(f);
      }
    }
    if (opts.on_case)
      opts.on_case(absl::StrCat(where, "\n  reproduce: ", reproduce, "\nprogram:\n", gen.program, "graph:\n",
                                ir::print(c.graph)));
    CheckResult r = check_case(c, run, prec);
    st.outputs_checked += r.outputs_checked;
    st.outputs_unbounded += r.outputs_unbounded;
    st.worst_ratio = std::max(st.worst_ratio, r.worst_ratio);
    if (opts.verbose)
      std::fprintf(out, "graph %lld: %zu nodes, %s, worst error/allowed %.3g\n", (long long)i, c.graph.size(),
                   outcome_name(r.outcome), r.worst_ratio);
    if (r.outcome == Outcome::kPass) continue;
    ++st.failures;
    std::fprintf(out, "\nFAIL %s: %s\n  reproduce: %s\n%s\nprogram:\n%s\ngraph:\n%s\n", where.c_str(),
                 outcome_name(r.outcome), reproduce.c_str(), r.detail.c_str(), gen.program.c_str(),
                 describe_case(c, 16).c_str());
    if (opts.minimize && r.outcome != Outcome::kHarnessError) {
      std::string log;
      Case small = minimize(c, r.outcome, run, prec, opts.min, &log);
      CheckResult sr = check_case(small, run, prec);
      std::fprintf(out, "reduced graph (%zu of %zu nodes):\n%s%s\n%s\n", small.graph.size(), c.graph.size(), log.c_str(),
                   describe_case(small).c_str(), sr.detail.c_str());
    }
    std::fflush(out);
    if (st.failures >= opts.max_failures) {
      std::fprintf(out, "stopping after %d failing graphs\n", opts.max_failures);
      break;
    }
  }
  st.seconds = now_s() - t0;
  return st;
}

}  // namespace kiln::fuzz

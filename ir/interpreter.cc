#include "ir/interpreter.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "ir/collective.h"
#include "ir/half.h"
#include "ir/random.h"

namespace kiln::ir {

HostTensor HostTensor::make(DType dtype, Shape shape) {
  HostTensor t;
  t.dtype = dtype;
  t.shape = std::move(shape);
  if (is_float(dtype)) t.f.assign(t.numel(), 0.0);
  else t.i.assign(t.numel(), 0);
  return t;
}

namespace {

double round_to(DType t, double v) {
  switch (t) {
    case DType::kFloat32: return double(float(v));
    case DType::kFloat16: return round_half(v);
    case DType::kBFloat16: return round_bf16(v);
    default: return v;
  }
}

// int_div / int_rem (op.h): values are held sign-extended (uint8 as 0..255), so only int64's
// MIN / -1 overflows here; narrower dtypes wrap in wrap_int.
int64_t int_div(int64_t x, int64_t y) {
  if (y == 0) return 0;
  if (y == -1) return int64_t(0 - uint64_t(x));
  return x / y;
}
int64_t int_rem(int64_t x, int64_t y) {
  if (y == 0 || y == -1) return 0;
  return x % y;
}

// Multi-index helpers over row-major shapes.
void unravel(int64_t flat, const Shape& shape, std::vector<int64_t>* idx) {
  idx->resize(shape.size());
  for (int d = int(shape.size()) - 1; d >= 0; --d) {
    int64_t n = shape[d];
    (*idx)[d] = n ? flat % n : 0;
    flat = n ? flat / n : 0;
  }
}
int64_t ravel(const std::vector<int64_t>& idx, const Shape& shape) {
  int64_t flat = 0;
  for (size_t d = 0; d < shape.size(); ++d) flat = flat * shape[d] + idx[d];
  return flat;
}

double nan_max(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
  return a > b ? a : b;
}
double nan_min(double a, double b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<double>::quiet_NaN();
  return a < b ? a : b;
}

class Interp {
 public:
  Interp(const Graph& g, const std::vector<HostTensor>& inputs) : g_(g), inputs_(inputs) {}

  absl::StatusOr<std::vector<HostTensor>> run() {
    std::vector<bool> needed(g_.size(), false);
    for (NodeId o : g_.outputs()) needed[o] = true;
    for (int id = int(g_.size()) - 1; id >= 0; --id)
      if (needed[id])
        for (NodeId in : g_.node(id).inputs) needed[in] = true;
    vals_.resize(g_.size());
    results_.resize(g_.size());
    for (size_t id = 0; id < g_.size(); ++id) {
      if (!needed[id]) continue;
      absl::Status s = eval(NodeId(id));
      if (!s.ok()) return s;
    }
    std::vector<HostTensor> out;
    for (NodeId o : g_.outputs()) out.push_back(vals_[o]);
    return out;
  }

 private:
  absl::Status eval(NodeId id) {
    const Node& n = g_.node(id);
    HostTensor r = HostTensor::make(n.dtype, n.shape);
    int64_t N = r.numel();
    bool fl = is_float(n.dtype);
    switch (op_class(n.op)) {
      case OpClass::kControl: {
        if (n.op == Op::kResult) {
          r = results_[n.inputs[0]][size_t(n.ints[0])];
          break;
        }
        auto got = n.op == Op::kWhile ? run_while(id, n) : run_if(n);
        if (!got.ok()) return got.status();
        results_[id] = *std::move(got);
        break;
      }
      case OpClass::kSource: {
        if (n.op == Op::kInput) {
          int64_t pos = n.ints[0];
          if (pos >= int64_t(inputs_.size()))
            return absl::InvalidArgumentError(absl::StrCat("missing input ", pos));
          const HostTensor& in = inputs_[pos];
          if (in.dtype != n.dtype || in.shape != n.shape)
            return absl::InvalidArgumentError(absl::StrCat("input ", pos, " is ", dtype_name(in.dtype),
                                                           shape_str(in.shape), ", graph expects ",
                                                           dtype_name(n.dtype), shape_str(n.shape)));
          r = in;
          break;
        }
        // A random op's seed: its attribute, or the value of its param operand (ir/params.h).
        const uint64_t seed = n.ints.empty() ? 0
                              : n.inputs.empty() ? uint64_t(n.ints[0])
                                                 : uint64_t(g_.node(n.inputs[0]).scalar.as_int());
        for (int64_t k = 0; k < N; ++k) {
          double v = 0;
          int64_t iv = 0;
          switch (n.op) {
            case Op::kConst:
            case Op::kParam: v = n.scalar.as_double(); iv = n.scalar.as_int(); break;
            case Op::kIota: v = double(k); iv = k; break;
            case Op::kRand: v = rng_uniform(rng_bits(rng_key(seed), uint64_t(k))); break;
            case Op::kRandn: {
              RngKey key = rng_key(seed);
              v = rng_normal(rng_bits(key, 2 * uint64_t(k)), rng_bits(key, 2 * uint64_t(k) + 1));
              break;
            }
            default: break;
          }
          set(&r, k, v, iv);
        }
        break;
      }
      case OpClass::kUnary:
      case OpClass::kBinary:
      case OpClass::kTernary: elementwise(n, &r); break;
      case OpClass::kReduce: reduce(n, &r); break;
      case OpClass::kMovement: movement(n, &r); break;
      case OpClass::kContract: n.op == Op::kDot ? dot(n, &r) : attention(n, &r); break;
      case OpClass::kIndex:
        if (n.op == Op::kGather) gather(n, &r);
        else if (n.op == Op::kScatter) scatter(n, &r);
        else segment_reduce(n, &r);
        break;
      case OpClass::kKernel: return absl::InvalidArgumentError("kernel op in a graph");
      case OpClass::kCollective:
        if (absl::Status s = collective(n, &r); !s.ok()) return s;
        break;
    }
    (void)fl;
    vals_[id] = std::move(r);
    return absl::OkStatus();
  }

  // Stores a value computed as double (floats) or int64 (ints), with dtype rounding/wrapping.
  static void set(HostTensor* r, int64_t k, double v, int64_t iv) {
    if (is_float(r->dtype)) r->f[k] = round_to(r->dtype, v);
    else r->i[k] = wrap_int(r->dtype, iv);
  }

  void elementwise(const Node& n, HostTensor* r) {
    const HostTensor& a = vals_[n.inputs[0]];
    int64_t N = r->numel();
    if (n.op == Op::kCast) {
      for (int64_t k = 0; k < N; ++k) {
        Scalar s = is_float(a.dtype) ? Scalar::from_double(a.f[k]) : Scalar::from_int(a.i[k]);
        Scalar c = s.cast_to(n.dtype);
        set(r, k, c.as_double(), c.is_int ? c.i : 0);
      }
      return;
    }
    if (n.op == Op::kWhere) {
      const HostTensor& x = vals_[n.inputs[1]];
      const HostTensor& y = vals_[n.inputs[2]];
      for (int64_t k = 0; k < N; ++k) {
        const HostTensor& s = a.i[k] ? x : y;
        if (is_float(r->dtype)) r->f[k] = s.f[k];
        else r->i[k] = s.i[k];
      }
      return;
    }
    bool in_float = is_float(a.dtype);
    const HostTensor* b = op_class(n.op) == OpClass::kBinary ? &vals_[n.inputs[1]] : nullptr;
    for (int64_t k = 0; k < N; ++k) {
      if (in_float) {
        double x = a.f[k], y = b ? b->f[k] : 0.0, v = 0;
        switch (n.op) {
          case Op::kNeg: v = -x; break;
          case Op::kExp: v = std::exp(x); break;
          case Op::kLog: v = std::log(x); break;
          case Op::kSqrt: v = std::sqrt(x); break;
          case Op::kRsqrt: v = 1.0 / std::sqrt(x); break;
          case Op::kAbs: v = std::fabs(x); break;
          case Op::kSin: v = std::sin(x); break;
          case Op::kCos: v = std::cos(x); break;
          case Op::kTanh: v = std::tanh(x); break;
          case Op::kSigmoid: v = 1.0 / (1.0 + std::exp(-x)); break;
          case Op::kErf: v = std::erf(x); break;
          case Op::kFloor: v = std::floor(x); break;
          case Op::kCeil: v = std::ceil(x); break;
          case Op::kRecip: v = 1.0 / x; break;
          case Op::kAdd: v = x + y; break;
          case Op::kSub: v = x - y; break;
          case Op::kMul: v = x * y; break;
          case Op::kDiv: v = x / y; break;
          case Op::kPow: v = std::pow(x, y); break;
          case Op::kMax: v = nan_max(x, y); break;
          case Op::kMin: v = nan_min(x, y); break;
          case Op::kLt: r->i[k] = x < y; continue;
          case Op::kLe: r->i[k] = x <= y; continue;
          case Op::kEq: r->i[k] = x == y; continue;
          case Op::kNe: r->i[k] = x != y; continue;
          default: break;
        }
        r->f[k] = round_to(r->dtype, v);
      } else {
        int64_t x = a.i[k], y = b ? b->i[k] : 0, v = 0;
        // Wrapping arithmetic through uint64 avoids signed-overflow UB.
        switch (n.op) {
          case Op::kNeg: v = int64_t(0 - uint64_t(x)); break;
          case Op::kAbs: v = x < 0 ? int64_t(0 - uint64_t(x)) : x; break;
          case Op::kNot: v = !x; break;
          case Op::kAdd: v = int64_t(uint64_t(x) + uint64_t(y)); break;
          case Op::kSub: v = int64_t(uint64_t(x) - uint64_t(y)); break;
          case Op::kMul: v = int64_t(uint64_t(x) * uint64_t(y)); break;
          case Op::kIntDiv: v = int_div(x, y); break;
          case Op::kIntRem: v = int_rem(x, y); break;
          case Op::kMax: v = x > y ? x : y; break;
          case Op::kMin: v = x < y ? x : y; break;
          case Op::kLt: v = x < y; break;
          case Op::kLe: v = x <= y; break;
          case Op::kEq: v = x == y; break;
          case Op::kNe: v = x != y; break;
          case Op::kAnd: v = x && y; break;
          case Op::kOr: v = x || y; break;
          default: break;
        }
        r->i[k] = wrap_int(r->dtype, v);
      }
    }
  }

  void reduce(const Node& n, HostTensor* r) {
    const HostTensor& a = vals_[n.inputs[0]];
    int64_t N = a.numel();
    bool fl = is_float(a.dtype);
    int64_t M = r->numel();
    // Accumulators per output element.
    std::vector<double> facc(M);
    std::vector<int64_t> iacc(M);
    std::vector<int64_t> best(M, -1);
    double finit = 0;
    int64_t iinit = 0;
    switch (n.op) {
      case Op::kReduceSum: finit = 0; iinit = 0; break;
      case Op::kReduceProd: finit = 1; iinit = 1; break;
      case Op::kReduceMax: finit = -INFINITY; iinit = std::numeric_limits<int64_t>::min(); break;
      case Op::kReduceMin: finit = INFINITY; iinit = std::numeric_limits<int64_t>::max(); break;
      default: break;
    }
    std::fill(facc.begin(), facc.end(), finit);
    std::fill(iacc.begin(), iacc.end(), iinit);
    std::vector<int64_t> idx;
    int64_t axis = n.ints.empty() ? 0 : n.ints[0];
    for (int64_t k = 0; k < N; ++k) {
      unravel(k, a.shape, &idx);
      int64_t pos_along = idx.empty() ? 0 : idx[axis];
      for (int64_t ax : n.ints) idx[ax] = 0;
      int64_t o = ravel(idx, r->shape);
      double x = fl ? a.f[k] : 0;
      int64_t xi = fl ? 0 : a.i[k];
      switch (n.op) {
        case Op::kReduceSum:
          if (fl) facc[o] += x;
          else iacc[o] = int64_t(uint64_t(iacc[o]) + uint64_t(xi));
          break;
        case Op::kReduceProd:
          if (fl) facc[o] *= x;
          else iacc[o] = int64_t(uint64_t(iacc[o]) * uint64_t(xi));
          break;
        case Op::kReduceMax:
          if (fl) facc[o] = nan_max(facc[o], x);
          else iacc[o] = std::max(iacc[o], xi);
          break;
        case Op::kReduceMin:
          if (fl) facc[o] = nan_min(facc[o], x);
          else iacc[o] = std::min(iacc[o], xi);
          break;
        case Op::kArgMax:
        case Op::kArgMin: {
          // First occurrence wins; a NaN beats every number (and the first NaN wins).
          bool better;
          if (best[o] < 0) better = true;
          else if (fl) {
            double cur = facc[o];
            if (std::isnan(cur)) better = false;
            else if (std::isnan(x)) better = true;
            else better = n.op == Op::kArgMax ? x > cur : x < cur;
          } else {
            better = n.op == Op::kArgMax ? xi > iacc[o] : xi < iacc[o];
          }
          if (better) {
            best[o] = pos_along;
            facc[o] = x;
            iacc[o] = xi;
          }
          break;
        }
        default: break;
      }
    }
    for (int64_t o = 0; o < M; ++o) {
      if (is_arg_reduce(n.op)) r->i[o] = best[o] < 0 ? 0 : best[o];
      else if (fl) r->f[o] = round_to(r->dtype, facc[o]);
      else r->i[o] = wrap_int(r->dtype, iacc[o]);
    }
  }

  // Out-of-range indices (after counting negatives from the end) read 0; HostTensor::make
  // zero-filled the result.
  void gather(const Node& n, HostTensor* r) {
    const HostTensor& x = vals_[n.inputs[0]];
    const HostTensor& idx = vals_[n.inputs[1]];
    size_t axis = size_t(n.ints[0]);
    int64_t extent = x.shape[axis];
    std::vector<int64_t> pos;
    for (int64_t k = 0; k < r->numel(); ++k) {
      int64_t j = idx.i[k];
      if (j < 0) j += extent;
      if (j < 0 || j >= extent) continue;
      unravel(k, n.shape, &pos);
      pos[axis] = j;
      int64_t src = ravel(pos, x.shape);
      if (is_float(r->dtype)) r->f[k] = x.f[src];
      else r->i[k] = x.i[src];
    }
  }

  // Updates apply in row-major order of the indices (so along the axis in order).
  void scatter(const Node& n, HostTensor* r) {
    const HostTensor& idx = vals_[n.inputs[1]];
    const HostTensor& upd = vals_[n.inputs[2]];
    *r = vals_[n.inputs[0]];
    size_t axis = size_t(n.ints[0]);
    int64_t extent = r->shape[axis];
    std::vector<int64_t> pos;
    for (int64_t k = 0; k < idx.numel(); ++k) {
      int64_t j = idx.i[k];
      if (j < 0) j += extent;
      if (j < 0 || j >= extent) continue;
      unravel(k, idx.shape, &pos);
      pos[axis] = j;
      int64_t dst = ravel(pos, r->shape);
      const bool f = is_float(r->dtype);
      double a = f ? r->f[dst] : 0, b = f ? upd.f[k] : 0, v = b;
      int64_t ai = f ? 0 : r->i[dst], bi = f ? 0 : upd.i[k], vi = bi;
      switch (ScatterMode(n.ints[1])) {
        case ScatterMode::kNone: break;
        case ScatterMode::kAdd: v = a + b, vi = int64_t(uint64_t(ai) + uint64_t(bi)); break;
        case ScatterMode::kMul: v = a * b, vi = int64_t(uint64_t(ai) * uint64_t(bi)); break;
        case ScatterMode::kMax: v = nan_max(a, b), vi = std::max(ai, bi); break;
        case ScatterMode::kMin: v = nan_min(a, b), vi = std::min(ai, bi); break;
      }
      set(r, dst, v, vi);
    }
  }

  // Rows [lo, hi) of each segment, offsets clamped into [0, N]; an empty segment keeps the
  // identity (integers: the dtype's own lowest / highest value).
  // A collective (ir/collective.h) through its group's communicator: the ranks first check that
  // they make the same call, then exchange their operands' exact values (8 bytes each: the
  // interpreter's own representation) and each computes its result on the host, folding in
  // float64 / int64 and rounding once.
  absl::Status collective(const Node& n, HostTensor* r) {
    const CollectiveAttrs a = CollectiveAttrs::from_ints(n.ints);
    auto comm = communicator_for(a);
    if (!comm.ok()) return comm.status();
    const HostTensor& x = vals_[n.inputs[0]];
    const int W = a.world, rank = (*comm)->rank();
    CollectiveCall call;
    call.attrs = a;
    call.dtype = x.dtype;
    call.in_elems = x.numel();
    if (absl::Status s = agree_on_call(call, W, [&](const void* i, int64_t n, void* o) { return (*comm)->all_gather_bytes(i, n, o); });
        !s.ok())
      return s;
    const bool f = is_float(x.dtype);
    const int64_t N = x.numel();
    std::vector<int64_t> all(size_t(W * N));
    if (absl::Status s = (*comm)->all_gather_bytes(f ? static_cast<const void*>(x.f.data()) : x.i.data(), N * 8, all.data());
        !s.ok())
      return s;
    auto fval = [&](int src, int64_t k) {
      double v;
      std::memcpy(&v, &all[size_t(src * N + k)], 8);
      return v;
    };
    auto ival = [&](int src, int64_t k) { return all[size_t(src * N + k)]; };
    auto put = [&](int64_t k, int src, int64_t at) { set(r, k, f ? fval(src, at) : 0, f ? 0 : ival(src, at)); };
    auto fold = [&](int64_t k, int64_t at) {  // the fold over ranks of element `at`
      double v = f ? fval(0, at) : 0;
      int64_t iv = f ? 0 : ival(0, at);
      for (int src = 1; src < W; ++src) {
        if (f) {
          const double y = fval(src, at);
          switch (a.reduce) {
            case ScatterMode::kMul: v *= y; break;
            case ScatterMode::kMax: v = nan_max(v, y); break;
            case ScatterMode::kMin: v = nan_min(v, y); break;
            default: v += y; break;
          }
        } else {
          const int64_t y = ival(src, at);
          switch (a.reduce) {
            case ScatterMode::kMul: iv = int64_t(uint64_t(iv) * uint64_t(y)); break;
            case ScatterMode::kMax: iv = std::max(iv, y); break;
            case ScatterMode::kMin: iv = std::min(iv, y); break;
            default: iv = x.dtype == DType::kBool ? (iv || y) : int64_t(uint64_t(iv) + uint64_t(y)); break;
          }
        }
      }
      set(r, k, v, iv);
    };
    const int64_t chunk = N / W;
    switch (a.kind) {
      case Collective::kAllReduce:
        for (int64_t k = 0; k < N; ++k) fold(k, k);
        break;
      case Collective::kReduceScatter:
        for (int64_t k = 0; k < chunk; ++k) fold(k, rank * chunk + k);
        break;
      case Collective::kAllGather:
        for (int src = 0; src < W; ++src)
          for (int64_t k = 0; k < N; ++k) put(src * N + k, src, k);
        break;
      case Collective::kBroadcast:
        for (int64_t k = 0; k < N; ++k) put(k, a.root, k);
        break;
      case Collective::kAllToAll:
        for (int src = 0; src < W; ++src)
          for (int64_t k = 0; k < chunk; ++k) put(src * chunk + k, src, rank * chunk + k);
        break;
    }
    return absl::OkStatus();
  }

  void segment_reduce(const Node& n, HostTensor* r) {
    const HostTensor& data = vals_[n.inputs[0]];
    const HostTensor& off = vals_[n.inputs[1]];
    const int64_t N = data.shape[0], S = r->shape[0], R = N ? data.numel() / N : shape_numel(r->shape) / std::max<int64_t>(S, 1);
    const bool f = is_float(r->dtype);
    const auto mode = ScatterMode(n.ints[0]);
    double finit = 0;
    int64_t iinit = 0;
    switch (mode) {
      case ScatterMode::kMul: finit = 1, iinit = 1; break;
      case ScatterMode::kMax: finit = -INFINITY, iinit = int_lowest(r->dtype); break;
      case ScatterMode::kMin: finit = INFINITY, iinit = int_highest(r->dtype); break;
      default: break;
    }
    for (int64_t s = 0; s < S; ++s) {
      const int64_t lo = std::clamp<int64_t>(off.i[size_t(s)], 0, N);
      const int64_t hi = std::clamp<int64_t>(off.i[size_t(s + 1)], lo, N);
      for (int64_t c = 0; c < R; ++c) {
        double v = finit;
        int64_t vi = iinit;
        for (int64_t row = lo; row < hi; ++row) {
          const int64_t k = row * R + c;
          const double x = f ? data.f[size_t(k)] : 0;
          const int64_t xi = f ? 0 : data.i[size_t(k)];
          switch (mode) {
            case ScatterMode::kAdd: v += x, vi = int64_t(uint64_t(vi) + uint64_t(xi)); break;
            case ScatterMode::kMul: v *= x, vi = int64_t(uint64_t(vi) * uint64_t(xi)); break;
            case ScatterMode::kMax: v = nan_max(v, x), vi = std::max(vi, xi); break;
            case ScatterMode::kMin: v = nan_min(v, x), vi = std::min(vi, xi); break;
            case ScatterMode::kNone: break;
          }
        }
        set(r, s * R + c, v, vi);
      }
    }
  }

  void movement(const Node& n, HostTensor* r) {
    int64_t N = r->numel();
    bool fl = is_float(n.dtype);
    if (n.op == Op::kReshape) {
      const HostTensor& a = vals_[n.inputs[0]];
      r->f = a.f;
      r->i = a.i;
      return;
    }
    std::vector<int64_t> idx, src;
    for (int64_t k = 0; k < N; ++k) {
      unravel(k, n.shape, &idx);
      const HostTensor* a = &vals_[n.inputs[0]];
      bool valid = true;
      src = idx;
      switch (n.op) {
        case Op::kPermute:
          for (size_t d = 0; d < idx.size(); ++d) src[n.ints[d]] = idx[d];
          break;
        case Op::kExpand:
          for (size_t d = 0; d < idx.size(); ++d)
            if (a->shape[d] == 1) src[d] = 0;
          break;
        case Op::kSlice:
          for (size_t d = 0; d < idx.size(); ++d) src[d] = n.ints[2 * d] + idx[d] * n.ints[2 * d + 1];
          break;
        case Op::kWindow:
          src.resize(a->shape.size());
          for (size_t d = 0; d < src.size(); ++d)
            src[d] = idx[d] * n.ints[2 * d] + idx[src.size() + d] * n.ints[2 * d + 1];
          break;
        case Op::kPad:
          for (size_t d = 0; d < idx.size(); ++d) {
            src[d] = idx[d] - n.ints[2 * d];
            if (src[d] < 0 || src[d] >= a->shape[d]) valid = false;
          }
          break;
        case Op::kConcat: {
          int64_t axis = n.ints[0], off = idx[axis];
          for (NodeId in : n.inputs) {
            a = &vals_[in];
            if (off < a->shape[axis]) break;
            off -= a->shape[axis];
          }
          src[axis] = off;
          break;
        }
        default: break;
      }
      if (!valid) {
        if (fl) r->f[k] = round_to(n.dtype, n.scalar.as_double());
        else r->i[k] = wrap_int(n.dtype, n.scalar.as_int());
        continue;
      }
      int64_t s = ravel(src, a->shape);
      if (fl) r->f[k] = a->f[s];
      else r->i[k] = a->i[s];
    }
  }

  void dot(const Node& n, HostTensor* r) {
    const HostTensor& a = vals_[n.inputs[0]];
    const HostTensor& b = vals_[n.inputs[1]];
    size_t rank = a.shape.size();
    int64_t M = a.shape[rank - 2], K = a.shape[rank - 1], Nn = b.shape[rank - 1];
    int64_t batch = 1;
    for (size_t d = 0; d + 2 < rank; ++d) batch *= a.shape[d];
    bool fl = is_float(n.dtype);
    for (int64_t bt = 0; bt < batch; ++bt)
      for (int64_t m = 0; m < M; ++m)
        for (int64_t j = 0; j < Nn; ++j) {
          double acc = 0;
          uint64_t iacc = 0;
          for (int64_t k = 0; k < K; ++k) {
            int64_t ia = (bt * M + m) * K + k, ib = (bt * K + k) * Nn + j;
            if (fl) acc += a.f[ia] * b.f[ib];
            else iacc += uint64_t(a.i[ia]) * uint64_t(b.i[ib]);
          }
          int64_t o = (bt * M + m) * Nn + j;
          if (fl) r->f[o] = round_to(n.dtype, acc);
          else r->i[o] = wrap_int(n.dtype, int64_t(iacc));
        }
  }

  void attention(const Node& n, HostTensor* r) {
    const HostTensor& q = vals_[n.inputs[0]];
    const HostTensor& k = vals_[n.inputs[1]];
    const HostTensor& v = vals_[n.inputs[2]];
    const HostTensor* bias = n.inputs.size() > 3 ? &vals_[n.inputs[3]] : nullptr;
    size_t rank = q.shape.size();
    int64_t Sq = q.shape[rank - 2], D = q.shape[rank - 1], Sk = k.shape[rank - 2], Dv = v.shape[rank - 1];
    int64_t batch = 1;
    for (size_t d = 0; d + 2 < rank; ++d) batch *= q.shape[d];
    const bool causal = n.ints[0] != 0;
    const double scale = n.scalar.as_double();
    std::vector<double> s(static_cast<size_t>(Sk)), acc(static_cast<size_t>(Dv));
    for (int64_t bt = 0; bt < batch; ++bt)
      for (int64_t i = 0; i < Sq; ++i) {
        double mx = -INFINITY;
        for (int64_t j = 0; j < Sk; ++j) {
          double dotp = 0;
          for (int64_t d = 0; d < D; ++d) dotp += q.f[(bt * Sq + i) * D + d] * k.f[(bt * Sk + j) * D + d];
          s[j] = scale * dotp + (bias ? bias->f[(bt * Sq + i) * Sk + j] : 0.0);
          if (causal && j > i) s[j] = -INFINITY;
          mx = std::max(mx, s[j]);
        }
        double sum = 0;
        for (int64_t j = 0; j < Sk; ++j) sum += (s[j] = std::exp(s[j] - mx));  // NaN when mx = -inf
        std::fill(acc.begin(), acc.end(), 0.0);
        for (int64_t j = 0; j < Sk; ++j)
          for (int64_t d = 0; d < Dv; ++d) acc[d] += s[j] * v.f[(bt * Sk + j) * Dv + d];
        for (int64_t d = 0; d < Dv; ++d) r->f[(bt * Sq + i) * Dv + d] = round_to(n.dtype, acc[d] / sum);
      }
  }

  absl::StatusOr<std::vector<HostTensor>> run_while(NodeId id, const Node& n) {
    const size_t carried = size_t(n.ints[0]);
    const int64_t max_trips = n.ints[1];
    std::vector<HostTensor> args;
    for (NodeId in : n.inputs) args.push_back(vals_[in]);
    for (int64_t trips = 0;; ++trips) {
      auto go = Interp((*n.regions)[0], args).run();
      if (!go.ok()) return go.status();
      if ((*go)[0].i[0] == 0) break;
      if (max_trips > 0 && trips == max_trips)
        return absl::OutOfRangeError(absl::StrCat("while %", id, ": its condition still holds after the maximum of ",
                                                  max_trips, " trips"));
      auto next = Interp((*n.regions)[1], args).run();
      if (!next.ok()) return next.status();
      for (size_t k = 0; k < carried; ++k) args[k] = std::move((*next)[k]);
    }
    args.resize(carried);
    return args;
  }

  absl::StatusOr<std::vector<HostTensor>> run_if(const Node& n) {
    std::vector<HostTensor> args;
    for (size_t k = 1; k < n.inputs.size(); ++k) args.push_back(vals_[n.inputs[k]]);
    return Interp((*n.regions)[vals_[n.inputs[0]].i[0] != 0 ? 0 : 1], args).run();
  }

  const Graph& g_;
  const std::vector<HostTensor>& inputs_;
  std::vector<HostTensor> vals_;
  std::vector<std::vector<HostTensor>> results_;  // of while and if nodes
};

}  // namespace

absl::StatusOr<std::vector<HostTensor>> interpret(const Graph& g, const std::vector<HostTensor>& inputs) {
  absl::Status v = verify(g);
  if (!v.ok()) return v;
  return Interp(g, inputs).run();
}

}  // namespace kiln::ir

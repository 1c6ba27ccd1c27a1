#include "fuzz/graph_gen.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <optional>
#include <random>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kiln::fuzz {

// Integers a float dtype holds exactly.
double exact_int_limit(DType t) {
  switch (t) {
    case DType::kFloat16: return 2048;
    case DType::kBFloat16: return 256;
    case DType::kFloat32: return 16777216;
    default: return 9007199254740992.0;
  }
}

namespace {

uint64_t splitmix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

std::string dims_str(const std::vector<int64_t>& v) { return absl::StrCat("{", absl::StrJoin(v, ", "), "}"); }

std::string num_str(double v) {
  if (std::isnan(v)) return "NAN";
  if (std::isinf(v)) return v < 0 ? "-INFINITY" : "INFINITY";
  return absl::StrCat(v);
}

std::string dtype_cpp(DType t) {
  switch (t) {
    case DType::kBool: return "bool_";
    case DType::kUInt8: return "uint8";
    case DType::kInt8: return "int8";
    case DType::kInt32: return "int32";
    case DType::kInt64: return "int64";
    case DType::kFloat16: return "float16";
    case DType::kBFloat16: return "bfloat16";
    case DType::kFloat32: return "float32";
    case DType::kFloat64: return "float64";
    case DType::kInt16: return "int16";
    case DType::kUInt16: return "uint16";
    case DType::kUInt32: return "uint32";
  }
  return "?";
}

constexpr DType kAllDTypes[] = {DType::kBool,    DType::kUInt8,    DType::kInt8,    DType::kInt32,  DType::kInt64,
                                DType::kFloat16, DType::kBFloat16, DType::kFloat32, DType::kFloat64, DType::kInt16,
                                DType::kUInt16,  DType::kUInt32};

// Largest magnitude the generator lets a float value of `t` reach between ops; the headroom to
// the dtype's real maximum absorbs the factors that one op may add (a sum, a division by 0.25).
double limit(DType t) {
  switch (t) {
    case DType::kFloat16: return 1000;
    case DType::kBFloat16: return 1e4;
    case DType::kFloat32: return 1e6;
    case DType::kFloat64: return 1e9;
    default: return std::numeric_limits<double>::infinity();
  }
}


void int_range(DType t, double* lo, double* hi) {
  *lo = double(int_lowest(t));
  *hi = double(int_highest(t));
}

// A recorded tensor and what the generator knows about its values.
struct Val {
  Tensor t;
  std::string name;
  double lo = 0, hi = 0;  // bounds of its finite values
  bool exact = true;      // every device computes it bit-exactly (always true for integers)
  bool special = false;   // may hold NaN or infinities
  DType dtype() const { return t.dtype(); }
  const Shape& shape() const { return t.shape(); }
  int64_t rank() const { return t.ndim(); }
  double mag() const { return std::max(std::fabs(lo), std::fabs(hi)); }
  bool is_fl() const { return is_float(t.dtype()); }
};

class Generator {
 public:
  Generator(uint64_t seed, const Device& device, const GenOptions& opts)
      : rng_(splitmix64(seed)), dev_(device), o_(opts) {}

  const std::string& program() const { return program_; }

  GeneratedGraph run() {
    special_ = int(uniform(0, 99)) < o_.special_percent;
    int inputs = int(uniform(1, 3));
    for (int i = 0; i < inputs; ++i) source();
    int ops = int(uniform(o_.min_ops, o_.max_ops));
    for (int i = 0; i < ops; ++i) {
      for (int attempt = 0; attempt < 20; ++attempt)
        if (step()) break;
    }
    // Outputs: the last value, plus up to two others (values nothing consumed, preferably).
    std::vector<Tensor> outs;
    std::vector<std::string> names;
    auto add_out = [&](const Val& v) {
      for (const std::string& n : names)
        if (n == v.name) return;
      outs.push_back(v.t);
      names.push_back(v.name);
    };
    add_out(pool_.back());
    int extra = int(uniform(0, 2));
    for (int i = 0; i < extra; ++i) add_out(pool_[size_t(uniform(0, double(pool_.size() - 1)))]);
    absl::StrAppend(&program_, "kiln::realize({", absl::StrJoin(names, ", "), "});\n");
    return {outs, program_};
  }

 private:
  // --- randomness ------------------------------------------------------------------------
  int64_t uniform(double lo, double hi) {  // inclusive integer range
    std::uniform_int_distribution<int64_t> d{int64_t(lo), int64_t(hi)};
    return d(rng_);
  }
  double real(double lo, double hi) { return std::uniform_real_distribution<double>(lo, hi)(rng_); }
  bool chance(double p) { return real(0, 1) < p; }
  template <typename T>
  const T& pick(const std::vector<T>& v) {
    return v[size_t(uniform(0, double(v.size() - 1)))];
  }
  // An operand: recent values are likelier, so that chains grow deep.
  Val pick_val() {
    size_t n = pool_.size();
    size_t back = size_t(std::min<double>(double(n - 1), std::floor(-std::log(1 - real(0, 0.999)) * 2.0)));
    return pool_[n - 1 - back];
  }

  DType random_dtype() {
    // Floats (f32 most) are likelier: they exercise most of the arithmetic.
    static const DType weighted[] = {DType::kFloat32, DType::kFloat32, DType::kFloat32, DType::kFloat16,
                                     DType::kBFloat16, DType::kFloat64, DType::kInt32,  DType::kInt64,
                                     DType::kInt8,    DType::kUInt8,   DType::kBool,   DType::kFloat32,
                                     DType::kInt16,   DType::kUInt16,  DType::kUInt32};
    return weighted[uniform(0, 14)];
  }
  int64_t random_dim() {
    static const int64_t dims[] = {1, 1, 2, 2, 3, 3, 4, 5, 5, 6, 7, 8, 9, 11, 13, 16, 17, 31, 33, 64};
    return dims[uniform(0, 19)];
  }
  Shape random_shape(int64_t rank) {
    Shape s;
    for (int64_t i = 0; i < rank; ++i) s.push_back(random_dim());
    while (shape_numel(s) > o_.max_numel) {
      auto it = std::max_element(s.begin(), s.end());
      *it = std::max<int64_t>(1, *it / 2);
    }
    return s;
  }

  // --- recording -----------------------------------------------------------------------
  Val& push(Tensor t, const std::string& expr, double lo, double hi, bool exact, bool special) {
    Val v;
    v.t = std::move(t);
    v.name = absl::StrCat("t", counter_++);
    v.special = special;
    if (is_float(v.dtype())) {
      v.lo = lo;
      v.hi = hi;
      v.exact = exact;
    } else {
      double dlo, dhi;
      int_range(v.dtype(), &dlo, &dhi);
      // A range that left the dtype wrapped around: anything is possible.
      if (!(lo >= dlo && hi <= dhi)) {
        lo = dlo;
        hi = dhi;
      }
      v.lo = lo;
      v.hi = hi;
      v.exact = true;
    }
    absl::StrAppend(&program_, "Tensor ", v.name, " = ", expr, ";  // ", dtype_name(v.dtype()), shape_str(v.shape()),
                    "\n");
    pool_.push_back(v);
    return pool_.back();
  }

  Val source() {
    int kind = int(uniform(0, 19));
    if (kind == 0) {  // constant
      DType t = random_dtype();
      Shape s = random_shape(uniform(0, o_.max_rank));
      double v = t == DType::kBool ? 1 : (is_float(t) ? pick(std::vector<double>{0.5, -1.25, 3}) : 3);
      return push(full(s, v, t, dev_), absl::StrCat("kiln::full(", dims_str(s), ", ", v, ", ", dtype_cpp(t), ")"), v,
                  v, true, false);
    }
    if (kind == 1) {  // iota
      int64_t n = uniform(1, 40);
      return push(arange(n, int64, dev_), absl::StrCat("kiln::arange(", n, ")"), 0, double(n - 1), true, false);
    }
    if (kind == 2) {  // float range
      double start = pick(std::vector<double>{-1.5, 0, 0.25}), step = pick(std::vector<double>{0.25, 0.5, -0.75});
      int64_t n = uniform(1, 30);
      double stop = start + step * double(n);
      DType t = pick(std::vector<DType>{float32, float64, float16});
      Tensor r = arange(start, stop, step, t, dev_);
      double a = start, b = start + step * double(r.numel() - 1);
      return push(r, absl::StrCat("kiln::arange(", start, ", ", stop, ", ", step, ", ", dtype_cpp(t), ")"),
                  std::min(a, b), std::max(a, b), false, false);
    }
    if (kind == 3) {  // random numbers
      Shape s = random_shape(uniform(1, o_.max_rank));
      DType t = pick(std::vector<DType>{float32, float64, float16, bfloat16});
      uint64_t seed = uint64_t(uniform(0, 1000));
      if (chance(0.5))
        return push(rand(s, seed, t, dev_), absl::StrCat("kiln::rand(", dims_str(s), ", ", seed, ", ", dtype_cpp(t), ")"),
                    0, 1, false, false);
      return push(randn(s, seed, t, dev_), absl::StrCat("kiln::randn(", dims_str(s), ", ", seed, ", ", dtype_cpp(t), ")"),
                  -7, 7, false, false);
    }
    return input(random_dtype(), random_shape(uniform(0, o_.max_rank)));
  }

  // Random host data (never all zeros), uploaded with from_vector.
  Val input(DType t, const Shape& s) {
    int64_t n = shape_numel(s);
    std::string expr;
    if (is_float(t)) {
      double lo = -2, hi = 2;
      int r = int(uniform(0, 19));
      if (r < 3) lo = 0.5, hi = 4;
      else if (r < 5) lo = -50, hi = 50;
      else if (r < 6) lo = -0.01, hi = 0.01;
      lo = std::max(lo, -limit(t));
      hi = std::min(hi, limit(t));
      std::vector<double> v(static_cast<size_t>(n));
      for (double& x : v) x = real(lo, hi);
      bool special = false;
      if (special_ && n > 0) {
        for (double& x : v) {
          if (!chance(0.06)) continue;
          x = pick(std::vector<double>{std::nan(""), INFINITY, -INFINITY, -0.0});
          special = special || !std::isfinite(x);
        }
      }
      if (n > 0 && std::all_of(v.begin(), v.end(), [](double x) { return x == 0; })) v[0] = hi;
      Tensor tt = from_vector(v, s, t, dev_);
      expr = absl::StrCat("random_input(", dtype_cpp(t), ", ", dims_str(s), ", ", lo, ", ", hi,
                          special ? ", /*with NaN/inf*/" : "", ")");
      return push(tt, expr, lo, hi, true, special);
    }
    double lo, hi;
    int_range(t, &lo, &hi);
    if (t != DType::kBool) {
      int r = int(uniform(0, 9));
      double a = r < 6 ? 9 : (r < 9 ? 100 : hi);  // mostly small; sometimes the whole range
      lo = std::max(lo, -a);
      hi = std::min(hi, a);
    }
    std::vector<int64_t> v(static_cast<size_t>(n));
    // The full int64 range is not exact in double: take the bounds from numeric_limits there.
    std::uniform_int_distribution<int64_t> d(
        lo < -9e18 ? std::numeric_limits<int64_t>::min() : int64_t(lo),
        hi > 9e18 ? std::numeric_limits<int64_t>::max() : int64_t(hi));
    for (int64_t& x : v) x = d(rng_);
    if (n > 0 && std::all_of(v.begin(), v.end(), [](int64_t x) { return x == 0; })) v[0] = 1;
    if (t == DType::kBool && n > 1 && std::all_of(v.begin(), v.end(), [](int64_t x) { return x == 1; })) v[n - 1] = 0;
    Tensor tt = from_vector(v, s, t, dev_);
    return push(tt, absl::StrCat("random_input(", dtype_cpp(t), ", ", dims_str(s), ", ", lo, ", ", hi, ")"), lo, hi,
                true, false);
  }

  // --- keeping values sane ----------------------------------------------------------------
  // Scales a float value by a power of two (exact) so that its magnitude is at most `bound`.
  Val bounded(const Val& a, double bound) {
    if (!a.is_fl() || a.mag() <= bound || a.t.numel() == 0) return a;
    double c = std::exp2(-std::ceil(std::log2(a.mag() / bound)));
    return push(a.t * c, absl::StrCat(a.name, " * ", c), a.lo * c, a.hi * c, a.exact, a.special);
  }
  // Integers and bools to a float dtype, clamping first what the float dtype cannot hold.
  Val as_float(const Val& a, DType to = DType::kFloat32) {
    if (a.is_fl()) return a;
    Val x = a;
    if (x.mag() > limit(to)) x = clamp_val(x, -limit(to), limit(to));
    bool exact = x.mag() <= exact_int_limit(to);
    return push(cast(x.t, to), absl::StrCat("kiln::cast(", x.name, ", ", dtype_cpp(to), ")"), x.lo, x.hi, exact, false);
  }
  Val clamp_val(const Val& a, double lo, double hi) {
    if (!a.is_fl()) lo = std::ceil(lo), hi = std::floor(hi);
    return push(clamp(a.t, lo, hi), absl::StrCat("kiln::clamp(", a.name, ", ", lo, ", ", hi, ")"),
                std::clamp(a.lo, lo, hi), std::clamp(a.hi, lo, hi), a.exact, a.special);
  }
  // A float value whose elements are all >= `min` (abs(x) + 0.5 when needed).
  Val positive(const Val& a0, double min) {
    Val a = as_float(a0);
    if (a.lo >= min) return a;
    Val b = push(abs(a.t), absl::StrCat("kiln::abs(", a.name, ")"), 0, a.mag(), a.exact, a.special);
    return push(b.t + 0.5, absl::StrCat(b.name, " + 0.5"), 0.5, b.hi + 0.5, false, b.special);
  }
  // A float value whose elements are all at least `min` away from zero.
  Val away_from_zero(const Val& a0, double min) {
    Val a = as_float(a0);
    if (a.lo >= min || a.hi <= -min) return a;
    return positive(a, min);
  }
  // After an op: scales the newest value back under the limit of its dtype.
  void settle() {
    Val v = pool_.back();
    if (v.is_fl() && v.mag() > limit(v.dtype())) bounded(v, limit(v.dtype()));
  }
  // Casting x to dtype t (as promotion does) keeps it bit-exact.
  static bool cast_exact(const Val& x, DType t) { return x.is_fl() || !is_float(t) || x.mag() <= exact_int_limit(t); }

  // --- one random op ----------------------------------------------------------------------
  bool step() {
    int r = int(uniform(0, 99));
    if (r < 14) return unary_float();
    if (r < 24) return unary_exact();
    if (r < 42) return r == 41 ? int_division() : binary();
    if (r < 48) return scalar_op();
    if (r < 60) return reduce();
    if (r < 73) return movement();
    if (r < 78) return r == 77 ? segment_op(pick_val()) : gather_op();
    if (r < 84) return r < 80 ? matmul_op() : r < 82 ? window_op() : attention_op();
    if (r < 92) return composite();
    if (r < 97) return concat_op();
    source();
    return true;
  }

  bool unary_float() {
    Val a = pick_val();
    if (a.t.numel() == 0) return false;
    DType ft = a.is_fl() ? a.dtype() : pick(std::vector<DType>{float32, float32, float16, float64});
    static const std::vector<std::string> ops = {"exp",  "log",     "sqrt", "rsqrt", "sin",  "cos",  "tanh",
                                                 "sigmoid", "erf", "reciprocal", "gelu", "gelu_tanh", "silu", "pow"};
    std::string op = pick(ops);
    Val x = as_float(a, ft);
    double lo = 0, hi = 0;
    Tensor r;
    if (op == "exp") {
      x = bounded(x, std::log(limit(ft)) / 2);
      r = exp(x.t), lo = std::exp(x.lo), hi = std::exp(x.hi);
    } else if (op == "log") {
      x = positive(x, 0.25);
      r = log(x.t), lo = std::log(x.lo), hi = std::log(x.hi);
    } else if (op == "sqrt") {
      if (x.lo < 0) x = push(abs(x.t), absl::StrCat("kiln::abs(", x.name, ")"), 0, x.mag(), x.exact, x.special);
      r = sqrt(x.t), lo = std::sqrt(x.lo), hi = std::sqrt(x.hi);
    } else if (op == "rsqrt") {
      x = positive(x, 0.25);
      r = rsqrt(x.t), lo = 1 / std::sqrt(x.hi), hi = 1 / std::sqrt(x.lo);
    } else if (op == "sin" || op == "cos") {
      x = bounded(x, 100);
      r = op == "sin" ? sin(x.t) : cos(x.t), lo = -1, hi = 1;
    } else if (op == "tanh") {
      r = tanh(x.t), lo = std::tanh(x.lo), hi = std::tanh(x.hi);
    } else if (op == "sigmoid") {
      r = sigmoid(x.t), lo = 0, hi = 1;
    } else if (op == "erf") {
      r = erf(x.t), lo = std::erf(x.lo), hi = std::erf(x.hi);
    } else if (op == "reciprocal") {
      x = away_from_zero(x, 0.25);
      r = reciprocal(x.t), lo = -1 / 0.25, hi = 1 / 0.25;
    } else if (op == "gelu" || op == "gelu_tanh") {
      x = bounded(x, op == "gelu" ? limit(ft) : 8);  // the tanh form cubes x
      r = gelu(x.t, op == "gelu_tanh"), lo = -0.2, hi = std::max(0.0, x.hi);
    } else if (op == "silu") {
      r = silu(x.t), lo = -0.3, hi = std::max(0.0, x.hi);
    } else {  // pow with a scalar exponent, on a positive base
      x = positive(x, 0.25);
      double e = pick(std::vector<double>{-1.5, -1, 0.5, 1.7, 2, 3});
      x = bounded(x, std::pow(limit(ft), 1.0 / std::max(1.0, std::fabs(e))) / 2);
      r = pow(x.t, e);
      double p = std::pow(x.lo, e), q = std::pow(x.hi, e);
      lo = std::min(p, q), hi = std::max(p, q);
      push(r, absl::StrCat("kiln::pow(", x.name, ", ", e, ")"), lo, hi, false, x.special);
      settle();
      return true;
    }
    std::string call = op == "gelu_tanh" ? absl::StrCat("kiln::gelu(", x.name, ", true)") : absl::StrCat("kiln::", op, "(", x.name, ")");
    push(r, call, lo, hi, false, x.special);
    settle();
    return true;
  }

  bool unary_exact() {
    Val a = pick_val();
    int k = int(uniform(0, 6));
    DType t = a.dtype();
    switch (k) {
      case 0:
        if (t == DType::kBool) return false;
        push(-a.t, absl::StrCat("-", a.name), -a.hi, -a.lo, a.exact, a.special);
        return true;
      case 1:
        push(abs(a.t), absl::StrCat("kiln::abs(", a.name, ")"), a.lo >= 0 ? a.lo : 0, a.mag(), a.exact, a.special);
        return true;
      case 2:
        push(relu(a.t), absl::StrCat("kiln::relu(", a.name, ")"), std::max(0.0, a.lo), std::max(0.0, a.hi), a.exact,
             a.special);
        return true;
      case 3: {  // floor / ceil: discontinuous, so only on exact values
        if (!a.is_fl() || !a.exact) return false;
        bool f = chance(0.5);
        push(f ? floor(a.t) : ceil(a.t), absl::StrCat(f ? "kiln::floor(" : "kiln::ceil(", a.name, ")"),
             std::floor(a.lo), std::ceil(a.hi), true, a.special);
        return true;
      }
      case 4: {
        if (t == DType::kBool || a.hi <= a.lo) return false;
        double lo = a.lo + (a.hi - a.lo) * real(0, 0.4), hi = a.hi - (a.hi - a.lo) * real(0, 0.4);
        if (!a.is_fl()) {
          lo = std::ceil(lo), hi = std::floor(hi);
          if (lo > hi) return false;
        } else {
          lo = std::round(lo * 8) / 8, hi = std::round(hi * 8) / 8;  // exact in every float dtype
          if (lo > hi) std::swap(lo, hi);
        }
        clamp_val(a, lo, hi);
        return true;
      }
      case 5: {
        if (a.is_fl() && !a.exact) return false;
        push(logical_not(a.t), absl::StrCat("kiln::logical_not(", a.name, ")"), 0, 1, true, false);
        return true;
      }
      default: return cast_op(a);
    }
  }

  bool cast_op(const Val& a) {
    DType to = kAllDTypes[uniform(0, kNumDTypes - 1)];
    if (to == a.dtype()) return false;
    // Float -> int/bool is discontinuous: only exact floats.
    if (a.is_fl() && !is_float(to) && !a.exact) return false;
    Val x = a;
    if (!a.is_fl() && is_float(to) && a.mag() > limit(to)) x = clamp_val(a, -limit(to), limit(to));
    bool exact = x.exact;
    if (is_float(to)) {
      if (!x.is_fl()) exact = x.mag() <= exact_int_limit(to);
      // f64 -> f16/bf16 rounds twice in the interpreter (through f32): not bit-exact.
      else if (x.dtype() == DType::kFloat64 && dtype_size(to) == 2) exact = false;
    }
    double lo = x.lo, hi = x.hi;
    if (x.is_fl() && !is_float(to)) {
      lo = std::floor(lo), hi = std::ceil(hi);
      if (to == DType::kBool) lo = 0, hi = 1;
    }
    if (is_float(to) && std::max(std::fabs(lo), std::fabs(hi)) > limit(to)) {
      // Narrowing a wide float: scale first so that nothing overflows.
      x = bounded(x, limit(to));
      lo = x.lo, hi = x.hi;
    }
    push(cast(x.t, to), absl::StrCat("kiln::cast(", x.name, ", ", dtype_cpp(to), ")"), lo, hi, exact, x.special);
    return true;
  }

  // A shape that broadcasts with `s`: some dims 1, maybe fewer or more leading dims.
  Shape broadcast_partner(const Shape& s) {
    Shape p = s;
    for (int64_t& d : p)
      if (chance(0.3)) d = 1;
    if (!p.empty() && chance(0.25)) {
      p.erase(p.begin(), p.begin() + uniform(1, double(p.size())));
    } else if (int64_t(p.size()) < o_.max_rank && chance(0.15)) {  // a new leading dim
      int64_t lead = random_dim();
      if (shape_numel(s) * lead <= o_.max_numel) p.insert(p.begin(), lead);
    }
    return p;
  }

  // A second operand for `a`: a pool value whose shape broadcasts with a's, or a new input.
  Val partner(const Val& a, bool same_dtype) {
    std::vector<size_t> ok;
    for (size_t i = 0; i < pool_.size(); ++i) {
      const Val& b = pool_[i];
      if (same_dtype && b.dtype() != a.dtype()) continue;
      auto s = broadcast_result(a.shape(), b.shape());
      if (s && shape_numel(*s) <= o_.max_numel) ok.push_back(i);
    }
    if (!ok.empty() && chance(0.6)) return pool_[pick(ok)];
    DType t = same_dtype || chance(0.6) ? a.dtype() : random_dtype();
    return input(t, broadcast_partner(a.shape()));
  }
  static std::optional<Shape> broadcast_result(const Shape& a, const Shape& b) {
    size_t r = std::max(a.size(), b.size());
    Shape out(r);
    for (size_t i = 0; i < r; ++i) {
      int64_t da = i < r - a.size() ? 1 : a[i - (r - a.size())];
      int64_t db = i < r - b.size() ? 1 : b[i - (r - b.size())];
      if (da != db && da != 1 && db != 1) return std::nullopt;
      out[i] = da == 1 ? db : da;
    }
    return out;
  }

  // Brings two operands to what a binary op of result dtype `t` can take without overflow.
  void fit_ints(Val* x, DType t) {
    if (!x->is_fl() && is_float(t) && x->mag() > limit(t)) *x = clamp_val(*x, -limit(t), limit(t));
  }

  // Integer division (trunc_divide, fmod, floor_divide, remainder): a value as an integer (a
  // float or bool one cast to int32 or int64) by a partner cast to its dtype; zero divisors occur.
  bool int_division() {
    Val a = pick_val();
    if (a.special) return false;
    const bool cast_a = is_float(a.dtype()) || a.dtype() == DType::kBool;
    const DType it = cast_a ? (chance(0.5) ? DType::kInt32 : DType::kInt64) : a.dtype();
    Val b = partner(a, false);
    // (a float cast to an integer must be bit-exact on every device: a value one device rounds
    // to 126.99 and another to 127 would divide differently)
    if (b.special || (cast_a && !a.exact) || (is_float(b.dtype()) && !b.exact)) return false;
    auto as_int = [&](const Val& v) { return v.dtype() == it ? v.t : v.t.cast(it); };
    auto name = [&](const Val& v) {
      return v.dtype() == it ? v.name : absl::StrCat(v.name, ".cast(", dtype_cpp(it), ")");
    };
    static const char* names[] = {"kiln::trunc_divide", "kiln::fmod", "kiln::floor_divide", "kiln::remainder"};
    const int k = int(uniform(0, 4));
    Tensor x = as_int(a), y = as_int(b);
    Tensor r = k == 0 ? trunc_divide(x, y) : k == 1 ? fmod(x, y) : k == 2 ? floor_divide(x, y) : remainder(x, y);
    const double m = std::min((k % 2 ? b.mag() : a.mag()) + 1, limit(it));
    push(r, absl::StrCat(names[k], "(", name(a), ", ", name(b), ")"), -m, m, a.exact && b.exact, false);
    settle();
    return true;
  }

  bool binary() {
    Val a = pick_val();
    int k = int(uniform(0, 12));
    if (k <= 5) {  // arithmetic
      Val b = partner(a, false);
      DType t = promote_types(a.dtype(), b.dtype());
      if (t == DType::kBool) t = DType::kInt64;
      static const char* names[] = {"+", "-", "*", "/", "kiln::maximum", "kiln::minimum"};
      if (k == 3 && !is_float(t)) t = DType::kFloat32;
      fit_ints(&a, t);
      fit_ints(&b, t);
      bool fl = is_float(t);
      double lo, hi;
      Tensor r;
      bool exact = false;
      switch (k) {
        case 0: r = a.t + b.t, lo = a.lo + b.lo, hi = a.hi + b.hi; break;
        case 1: r = a.t - b.t, lo = a.lo - b.hi, hi = a.hi - b.lo; break;
        case 2: {
          if (fl && a.mag() * b.mag() > limit(t)) {
            a = bounded(as_float(a, t), std::sqrt(limit(t)));
            b = bounded(as_float(b, t), std::sqrt(limit(t)));
          }
          r = a.t * b.t;
          double c[] = {a.lo * b.lo, a.lo * b.hi, a.hi * b.lo, a.hi * b.hi};
          lo = *std::min_element(c, c + 4), hi = *std::max_element(c, c + 4);
          break;
        }
        case 3: {
          b = away_from_zero(b, 0.25);
          r = a.t / b.t, lo = -a.mag() * 4, hi = a.mag() * 4;
          break;
        }
        default:
          r = k == 4 ? maximum(a.t, b.t) : minimum(a.t, b.t);
          lo = k == 4 ? std::max(a.lo, b.lo) : std::min(a.lo, b.lo);
          hi = k == 4 ? std::max(a.hi, b.hi) : std::min(a.hi, b.hi);
          exact = a.exact && b.exact && cast_exact(a, t) && cast_exact(b, t);
          break;
      }
      std::string expr = k <= 3 ? absl::StrCat(a.name, " ", names[k], " ", b.name)
                                : absl::StrCat(names[k], "(", a.name, ", ", b.name, ")");
      push(r, expr, lo, hi, exact, a.special || b.special);
      settle();
      return true;
    }
    if (k <= 8) {  // comparisons: discontinuous, only on exact values
      if (a.is_fl() && !a.exact) return false;
      Val b = partner(a, false);
      if (b.is_fl() && !b.exact) return false;
      DType t = promote_types(a.dtype(), b.dtype());
      if (!cast_exact(a, t) || !cast_exact(b, t)) return false;
      static const char* names[] = {"<", "<=", ">", ">=", "==", "!="};
      int c = int(uniform(0, 5));
      Tensor r;
      switch (c) {
        case 0: r = a.t < b.t; break;
        case 1: r = a.t <= b.t; break;
        case 2: r = a.t > b.t; break;
        case 3: r = a.t >= b.t; break;
        case 4: r = a.t == b.t; break;
        default: r = a.t != b.t; break;
      }
      push(r, absl::StrCat(a.name, " ", names[c], " ", b.name), 0, 1, true, false);
      return true;
    }
    if (k <= 10) {  // logical and/or (non-bool operands mean != 0)
      if (a.is_fl() && !a.exact) return false;
      Val b = partner(a, false);
      if (b.is_fl() && !b.exact) return false;
      bool is_and = chance(0.5);
      push(is_and ? logical_and(a.t, b.t) : logical_or(a.t, b.t),
           absl::StrCat(is_and ? "kiln::logical_and(" : "kiln::logical_or(", a.name, ", ", b.name, ")"), 0, 1, true,
           false);
      return true;
    }
    // where(cond, a, b): cond from an exact value
    Val c = pick_val();
    if (c.is_fl() && !c.exact) return false;
    Val b = partner(a, chance(0.5));
    if (!broadcast_result(c.shape(), a.shape()) || !broadcast_result(*broadcast_result(c.shape(), a.shape()), b.shape()))
      return false;
    Shape s = *broadcast_result(*broadcast_result(c.shape(), a.shape()), b.shape());
    if (shape_numel(s) > o_.max_numel) return false;
    DType t = promote_types(a.dtype(), b.dtype());
    fit_ints(&a, t);
    fit_ints(&b, t);
    bool exact = a.exact && b.exact && cast_exact(a, t) && cast_exact(b, t);
    push(where(c.t, a.t, b.t), absl::StrCat("kiln::where(", c.name, ", ", a.name, ", ", b.name, ")"),
         std::min(a.lo, b.lo), std::max(a.hi, b.hi), exact, a.special || b.special);
    return true;
  }

  bool scalar_op() {
    Val a = pick_val();
    double s = pick(std::vector<double>{0.5, 2, -1.5, 3, 0.1, 7, -2, 0.25});
    int k = int(uniform(0, 5));
    if (a.is_fl() && a.mag() * std::fabs(s) > limit(a.dtype())) a = bounded(a, limit(a.dtype()) / 8);
    // Python-like typing: an integral scalar keeps an integer tensor integral.
    bool integral = s == std::floor(s);
    DType t = a.is_fl() ? a.dtype() : (integral ? (a.dtype() == DType::kBool ? DType::kInt64 : a.dtype()) : DType::kFloat32);
    if (!a.is_fl() && is_float(t)) fit_ints(&a, t);
    Tensor r;
    std::string expr;
    double lo, hi;
    switch (k) {
      case 0: r = a.t + s, expr = absl::StrCat(a.name, " + ", s), lo = a.lo + s, hi = a.hi + s; break;
      case 1: r = s - a.t, expr = absl::StrCat(s, " - ", a.name), lo = s - a.hi, hi = s - a.lo; break;
      case 2: {
        r = a.t * s, expr = absl::StrCat(a.name, " * ", s);
        lo = std::min(a.lo * s, a.hi * s), hi = std::max(a.lo * s, a.hi * s);
        break;
      }
      case 3:
        r = a.t / s, expr = absl::StrCat(a.name, " / ", s);
        lo = std::min(a.lo / s, a.hi / s), hi = std::max(a.lo / s, a.hi / s);
        break;
      case 4: {  // s / a
        Val b = away_from_zero(a, 0.25);
        r = s / b.t, expr = absl::StrCat(s, " / ", b.name), lo = -std::fabs(s) * 4, hi = std::fabs(s) * 4;
        a = b;
        break;
      }
      default: {
        if ((a.is_fl() && !a.exact) || !cast_exact(a, DType::kFloat32)) return false;
        r = a.t > s, expr = absl::StrCat(a.name, " > ", s), lo = 0, hi = 1;
        push(r, expr, lo, hi, true, false);
        return true;
      }
    }
    // Multiplying by a power of two is exact; everything else rounds.
    bool exact = k == 2 && a.is_fl() && a.exact && std::fabs(s) == std::exp2(std::round(std::log2(std::fabs(s))));
    push(r, expr, lo, hi, exact, a.special);
    settle();
    return true;
  }

  std::vector<int64_t> random_axes(int64_t rank, bool allow_all_empty) {
    std::vector<int64_t> axes;
    if (allow_all_empty && chance(0.15)) return axes;  // every axis
    for (int64_t d = 0; d < rank; ++d)
      if (chance(0.45)) axes.push_back(chance(0.3) ? d - rank : d);
    if (axes.empty() && rank > 0) axes.push_back(uniform(0, double(rank - 1)));
    return axes;
  }

  bool reduce() {
    Val a = pick_val();
    int64_t rank = a.rank();
    int k = int(uniform(0, 7));
    bool keep = chance(0.4);
    if (k >= 6) {  // argmax / argmin
      if (rank == 0 || a.t.numel() == 0 || (a.is_fl() && !a.exact)) return false;
      bool is_max = k == 6;
      if (chance(0.2)) {
        push(is_max ? argmax(a.t) : argmin(a.t), absl::StrCat(is_max ? "kiln::argmax(" : "kiln::argmin(", a.name, ")"), 0,
             double(a.t.numel() - 1), true, false);
        return true;
      }
      int64_t ax = uniform(0, double(rank - 1));
      if (chance(0.3)) ax -= rank;
      push(is_max ? argmax(a.t, ax, keep) : argmin(a.t, ax, keep),
           absl::StrCat(is_max ? "kiln::argmax(" : "kiln::argmin(", a.name, ", ", ax, ", ", keep, ")"), 0,
           double(a.t.size(ax) - 1), true, false);
      return true;
    }
    std::vector<int64_t> axes = random_axes(rank, true);
    int64_t count = 1;
    bool empty_axis = false;
    if (axes.empty()) {
      count = a.t.numel();
      empty_axis = count == 0;
    } else {
      for (int64_t ax : axes) {
        int64_t n = a.shape()[ax < 0 ? ax + rank : ax];
        count *= n;
        empty_axis = empty_axis || n == 0;
      }
    }
    std::string ax_str = absl::StrCat(dims_str(axes), ", ", keep);
    static const char* names[] = {"sum", "mean", "max", "min", "prod", "sum"};
    Tensor r;
    double lo, hi;
    bool exact = false;
    switch (k) {
      case 0:
      case 5:
      case 1: {
        if (a.is_fl() || k == 1) {
          DType ft = a.is_fl() ? a.dtype() : DType::kFloat32;
          if (!a.is_fl()) fit_ints(&a, ft);
          a = bounded(a, limit(ft) / std::max<int64_t>(1, count));
        }
        if (k == 1) {
          r = mean(a.t, axes, keep), lo = a.lo, hi = a.hi;
        } else {
          r = sum(a.t, axes, keep), lo = a.lo * double(count), hi = a.hi * double(count);
          lo = std::min(lo, 0.0), hi = std::max(hi, 0.0);
        }
        break;
      }
      case 2:
      case 3:
        if (empty_axis) return false;
        r = k == 2 ? max(a.t, axes, keep) : min(a.t, axes, keep), lo = a.lo, hi = a.hi, exact = a.exact;
        break;
      default: {
        if (a.is_fl() && (count > 8 || a.mag() > 2)) return false;
        r = prod(a.t, axes, keep);
        double m = std::pow(std::max(1.0, a.mag()), double(count));
        lo = -m, hi = m;
        if (!a.is_fl()) lo = -INFINITY;  // wraps
        break;
      }
    }
    push(r, absl::StrCat("kiln::", names[k], "(", a.name, ", ", ax_str, ")"), lo, hi, exact, a.special);
    // Often combine a kept-dim reduction with its source right away (the normalization shape).
    if (keep && chance(0.5) && pool_.back().t.numel() > 0) {
      Val red = pool_.back();
      if (red.dtype() == a.dtype() && a.is_fl()) {
        bool sub_op = chance(0.5);
        Val b = sub_op ? red : away_from_zero(red, 0.25);
        push(sub_op ? a.t - b.t : a.t / b.t, absl::StrCat(a.name, sub_op ? " - " : " / ", b.name),
             sub_op ? a.lo - b.hi : -a.mag() * 4, sub_op ? a.hi - b.lo : a.mag() * 4, false, a.special || b.special);
        settle();
      }
    }
    return true;
  }

  // --- movement ------------------------------------------------------------------------------
  bool movement() {
    Val a = pick_val();
    const Shape& s = a.shape();
    int64_t rank = a.rank();
    int k = int(uniform(0, 11));
    auto keep = [&](Tensor t, const std::string& expr) {
      push(std::move(t), expr, a.lo, a.hi, a.exact, a.special);
      return true;
    };
    switch (k) {
      case 0:
      case 1: {  // reshape
        Shape to = reshape_target(s, a.t.numel());
        bool infer = !to.empty() && a.t.numel() > 0 && chance(0.3);
        Shape arg = to;
        if (infer) arg[uniform(0, double(arg.size() - 1))] = -1;
        return keep(reshape(a.t, arg), absl::StrCat(a.name, ".reshape(", dims_str(arg), ")"));
      }
      case 2: {  // permute
        if (rank < 2) return false;
        std::vector<int64_t> perm(rank);
        for (int64_t i = 0; i < rank; ++i) perm[i] = i;
        std::shuffle(perm.begin(), perm.end(), rng_);
        if (chance(0.2)) perm[0] -= rank;
        return keep(permute(a.t, perm), absl::StrCat(a.name, ".permute(", dims_str(perm), ")"));
      }
      case 3: {
        if (rank < 2) return false;
        int64_t x = uniform(0, double(rank - 1)), y = uniform(0, double(rank - 1));
        if (chance(0.3)) y -= rank;
        return keep(transpose(a.t, x, y), absl::StrCat("kiln::transpose(", a.name, ", ", x, ", ", y, ")"));
      }
      case 4: {  // expand
        Shape to = s;
        for (int64_t& d : to)
          if (d == 1 && chance(0.7)) d = uniform(2, 6);
        if (int64_t(to.size()) < o_.max_rank && chance(0.4)) to.insert(to.begin(), uniform(2, 4));
        if (to == s || shape_numel(to) > o_.max_numel) return false;
        Shape arg = to;
        size_t lead = to.size() - s.size();
        for (size_t i = lead; i < to.size(); ++i)
          if (to[i] == s[i - lead] && chance(0.3)) arg[i] = -1;
        return keep(expand(a.t, arg), absl::StrCat(a.name, ".expand(", dims_str(arg), ")"));
      }
      case 5:
      case 6: {  // slice with steps, negative steps and negative indices
        if (rank == 0) return false;
        int64_t ax = uniform(0, double(rank - 1));
        int64_t n = s[ax];
        int64_t step = pick(std::vector<int64_t>{1, 1, 2, 3, -1, -2});
        int64_t start = uniform(-n - 1, n + 1), stop = uniform(-n - 1, n + 1);
        if (chance(0.3)) start = step > 0 ? 0 : n - 1, stop = step > 0 ? n : -n - 1;
        int64_t arg = chance(0.3) ? ax - rank : ax;
        Tensor r = slice(a.t, arg, start, stop, step);
        if (r.numel() == 0 && !chance(0.1)) return false;
        return keep(r, absl::StrCat(a.name, ".slice(", arg, ", ", start, ", ", stop, ", ", step, ")"));
      }
      case 7: {  // pad (negative widths crop)
        if (rank == 0) return false;
        std::vector<std::pair<int64_t, int64_t>> w;
        std::string ws;
        Shape out = s;
        for (int64_t d = 0; d < rank; ++d) {
          int64_t lo = pick(std::vector<int64_t>{0, 0, 1, 2, 3, -1}), hi = pick(std::vector<int64_t>{0, 0, 1, 2, -1});
          if (s[d] + std::min<int64_t>(lo, 0) + std::min<int64_t>(hi, 0) < 1) lo = std::max<int64_t>(lo, 0), hi = std::max<int64_t>(hi, 0);
          out[d] += lo + hi;
          w.push_back({lo, hi});
          absl::StrAppend(&ws, d ? ", " : "", "{", lo, ", ", hi, "}");
        }
        if (shape_numel(out) > o_.max_numel) return false;
        double v = pick(std::vector<double>{0, 0, 1.5, -3, 2});
        bool inf = a.is_fl() && chance(0.1);
        if (inf) v = -INFINITY;
        if (!a.is_fl()) v = std::floor(v);
        if (a.dtype() == DType::kBool) v = v != 0;
        push(pad(a.t, w, v), absl::StrCat(a.name, ".pad({", ws, "}, ", num_str(v), ")"), std::min(a.lo, v),
             std::max(a.hi, v), a.exact, a.special || inf);
        if (inf) pool_.back().lo = a.lo;  // bounds cover finite values only
        return true;
      }
      case 8: {
        if (chance(0.5)) return keep(squeeze(a.t), absl::StrCat("kiln::squeeze(", a.name, ")"));
        if (rank >= o_.max_rank) return false;
        int64_t ax = uniform(-rank - 1, rank);
        return keep(unsqueeze(a.t, ax), absl::StrCat(a.name, ".unsqueeze(", ax, ")"));
      }
      case 9: {
        if (rank == 0) return keep(flatten(a.t), absl::StrCat("kiln::flatten(", a.name, ")"));
        int64_t x = uniform(0, double(rank - 1)), y = uniform(double(x), double(rank - 1));
        return keep(flatten(a.t, x, y), absl::StrCat("kiln::flatten(", a.name, ", ", x, ", ", y, ")"));
      }
      default: {  // a chain: view folding must compose them
        return movement_chain(a);
      }
    }
  }

  bool movement_chain(const Val& a) {
    Val cur = a;
    int n = int(uniform(2, 4));
    for (int i = 0; i < n; ++i) {
      bool ok = false;
      for (int attempt = 0; attempt < 5 && !ok; ++attempt) {
        int k = int(uniform(0, 3));
        if (k == 0 && cur.rank() >= 2) {
          std::vector<int64_t> perm(cur.rank());
          for (int64_t j = 0; j < cur.rank(); ++j) perm[j] = j;
          std::shuffle(perm.begin(), perm.end(), rng_);
          push(permute(cur.t, perm), absl::StrCat(cur.name, ".permute(", dims_str(perm), ")"), cur.lo, cur.hi,
               cur.exact, cur.special);
          ok = true;
        } else if (k == 1 && cur.rank() >= 1) {
          int64_t ax = uniform(0, double(cur.rank() - 1)), len = cur.shape()[ax];
          if (len < 2) continue;
          int64_t step = pick(std::vector<int64_t>{-1, 2, -2, 3});
          int64_t start = step > 0 ? 0 : -1, stop = step > 0 ? len : -len - 1;
          push(slice(cur.t, ax, start, stop, step),
               absl::StrCat(cur.name, ".slice(", ax, ", ", start, ", ", stop, ", ", step, ")"), cur.lo, cur.hi,
               cur.exact, cur.special);
          ok = true;
        } else if (k == 2) {
          Shape to = reshape_target(cur.shape(), cur.t.numel());
          push(reshape(cur.t, to), absl::StrCat(cur.name, ".reshape(", dims_str(to), ")"), cur.lo, cur.hi, cur.exact,
               cur.special);
          ok = true;
        } else {
          Shape to = cur.shape();
          for (int64_t& d : to)
            if (d == 1) d = uniform(2, 3);
          if (to == cur.shape() || shape_numel(to) > o_.max_numel) continue;
          push(expand(cur.t, to), absl::StrCat(cur.name, ".expand(", dims_str(to), ")"), cur.lo, cur.hi, cur.exact,
               cur.special);
          ok = true;
        }
      }
      if (!ok) break;
      cur = pool_.back();
    }
    return true;
  }

  // A new shape with the same number of elements: merge, split, drop or add size-1 dims, or a
  // random factorization.
  Shape reshape_target(const Shape& s, int64_t numel) {
    int k = int(uniform(0, 4));
    if (numel == 0) return Shape{0};
    if (k == 0 || s.empty()) return Shape{numel};
    Shape t = s;
    if (k == 1 && t.size() >= 2) {
      size_t i = size_t(uniform(0, double(t.size() - 2)));
      t[i] *= t[i + 1];
      t.erase(t.begin() + long(i) + 1);
      return t;
    }
    if (k == 2 && int64_t(t.size()) < o_.max_rank) {
      t.insert(t.begin() + long(uniform(0, double(t.size()))), 1);
      return t;
    }
    // Random factorization of numel into up to max_rank dims.
    std::vector<int64_t> primes;
    int64_t n = numel;
    for (int64_t p = 2; p * p <= n; ++p)
      while (n % p == 0) primes.push_back(p), n /= p;
    if (n > 1) primes.push_back(n);
    int64_t rank = uniform(1, double(o_.max_rank));
    Shape out(size_t(rank), 1);
    for (int64_t p : primes) out[size_t(uniform(0, double(rank - 1)))] *= p;
    return out;
  }

  // --- matmul, composites, concat -------------------------------------------------------------
  bool matmul_op() {
    if (chance(0.25)) return tensor_core_matmul_op();
    Val a = pick_val();
    if (a.rank() == 0 || a.dtype() == DType::kBool || a.t.numel() == 0) return false;
    int64_t K = a.shape().back();
    int variant = int(uniform(0, 3));
    Shape bs;
    if (variant == 0) {
      bs = {K};
    } else {
      int64_t N = random_dim();
      bs = {K, N};
      if (variant == 3 && a.rank() >= 2) {
        // batched: broadcastable batch dims
        Shape batch(a.shape().begin(), a.shape().end() - 2);
        for (int64_t& d : batch)
          if (chance(0.4)) d = 1;
        if (chance(0.3) && int64_t(batch.size()) + 2 < o_.max_rank) batch.insert(batch.begin(), uniform(2, 3));
        bs.insert(bs.begin(), batch.begin(), batch.end());
      }
    }
    // Output size check.
    int64_t out_numel = (a.t.numel() / std::max<int64_t>(K, 1)) * (bs.size() >= 2 ? bs.back() : 1);
    for (size_t i = 2; i < bs.size(); ++i) out_numel *= bs[i - 2];
    if (out_numel > o_.max_numel || shape_numel(bs) > o_.max_numel) return false;
    DType bt = chance(0.75) ? a.dtype() : pick(std::vector<DType>{float32, float16, int32, int8, float64});
    Val b = input(bt, bs);
    DType t = promote_types(a.dtype(), b.dtype());
    fit_ints(&a, t);
    fit_ints(&b, t);
    double lim = std::sqrt(limit(t) / double(std::max<int64_t>(K, 1)));
    if (is_float(t)) {
      a = bounded(a, lim);
      b = bounded(b, lim);
    }
    double m = double(K) * a.mag() * b.mag();
    push(matmul(a.t, b.t), absl::StrCat("kiln::matmul(", a.name, ", ", b.name, ")"), -m, m, false, a.special || b.special);
    settle();
    return true;
  }

  // A product of two fresh 16-bit inputs whose contiguous axes are whole 16-byte pieces, in any of
  // the four operand layouts and sometimes batched: what the tensor-core kernels take (CUDA's
  // cp.async and wgmma paths, Vulkan's cooperative matrices), ragged edges included.
  bool tensor_core_matmul_op() {
    static const int64_t mn[] = {1, 7, 16, 33, 64, 130};
    static const int64_t ks[] = {8, 16, 24, 64, 136};
    const DType t = chance(0.5) ? DType::kFloat16 : DType::kBFloat16;
    const int64_t M = mn[uniform(0, 5)], N = mn[uniform(0, 5)], K = ks[uniform(0, 4)];
    const int64_t B = chance(0.3) ? uniform(2, 3) : 1;
    if (B * (M * K + K * N + M * N) > o_.max_numel) return false;
    const bool at = chance(0.3) && M % 8 == 0, bt = chance(0.3);
    auto operand = [&](int64_t rows, int64_t cols, bool transposed) {
      Shape s = transposed ? Shape{cols, rows} : Shape{rows, cols};
      if (B > 1) s.insert(s.begin(), B);
      Val v = input(t, s);
      if (!transposed) return v;
      Tensor tt = v.t.transpose(-1, -2);
      return push(tt, absl::StrCat(v.name, ".transpose(-1, -2)"), v.lo, v.hi, v.exact, v.special);
    };
    Val a = operand(M, K, at), b = operand(K, N, bt);
    const double lim = std::sqrt(limit(t) / double(K));
    a = bounded(a, lim);
    b = bounded(b, lim);
    const double m = double(K) * a.mag() * b.mag();
    push(matmul(a.t, b.t), absl::StrCat("kiln::matmul(", a.name, ", ", b.name, ")"), -m, m, false, a.special || b.special);
    settle();
    return true;
  }

  // A convolution (with a new weight input) or a max / average / Lp pooling over a float value
  // of rank 3 to 5 read as [N, C, spatial...]: kernels, strides, dilations, padding, groups and
  // ceil_mode drawn so that every window holds an input cell (padding below the kernel size).
  bool window_op() {
    Val a = pick_val();
    if (a.rank() == 0 || a.rank() > 5 || !a.is_fl() || a.t.numel() == 0) return false;
    if (a.rank() < 3) {  // [L] -> [1, 1, L], [A, B] -> [1, A, B]
      Shape to = a.shape();
      to.insert(to.begin(), size_t(3 - a.rank()), 1);
      a = push(reshape(a.t, to), absl::StrCat(a.name, ".reshape(", dims_str(to), ")"), a.lo, a.hi, a.exact, a.special);
    }
    const Shape xs = a.shape();
    size_t sp = size_t(a.rank() - 2);
    std::vector<int64_t> k, st, dl;
    std::vector<std::pair<int64_t, int64_t>> pad;
    std::string pads;
    for (size_t d = 0; d < sp; ++d) {
      int64_t in = xs[d + 2];
      int64_t kd = uniform(1, double(std::min<int64_t>(3, in + 1))), dil = 1, lo = 0, hi = 0;
      if (kd > 1 && chance(0.3) && 2 * (kd - 1) + 1 <= in) dil = 2;
      if (dil == 1 && chance(0.5)) lo = uniform(0, double(kd - 1)), hi = uniform(0, double(kd - 1));
      if (dil * (kd - 1) + 1 > in + lo + hi) kd = 1, lo = hi = 0;
      k.push_back(kd);
      dl.push_back(dil);
      st.push_back(pick(std::vector<int64_t>{1, 1, 2, 3}));
      pad.push_back({lo, hi});
      absl::StrAppend(&pads, d ? ", " : "", "{", lo, ", ", hi, "}");
    }
    int kind = int(uniform(0, 4));
    if (kind <= 1) {
      int64_t C = xs[1], G = C % 2 == 0 && chance(0.4) ? 2 : chance(0.2) ? C : 1, Cout = G * uniform(1, 3);
      Shape ws = {Cout, C / G};
      ws.insert(ws.end(), k.begin(), k.end());
      int64_t kt = shape_numel(ws) / Cout, out = xs[0] * Cout;
      for (size_t d = 0; d < sp; ++d) out *= (xs[d + 2] + pad[d].first + pad[d].second - dl[d] * (k[d] - 1) - 1) / st[d] + 1;
      if (out > o_.max_numel || shape_numel(ws) > o_.max_numel) return false;
      Val w = input(a.dtype(), ws);
      double lim = std::sqrt(limit(a.dtype()) / double(kt));
      Val x = bounded(a, lim);
      w = bounded(w, lim);
      ConvOptions o{st, pad, dl, G};
      double m = double(kt) * x.mag() * w.mag();
      push(conv(x.t, w.t, o),
           absl::StrCat("kiln::conv(", x.name, ", ", w.name, ", {", dims_str(st), ", {", pads, "}, ", dims_str(dl), ", ", G, "})"),
           -m, m, false, x.special || w.special);
      settle();
      return true;
    }
    PoolOptions o{k, st, pad, dl, chance(0.3), chance(0.5)};
    std::string opts = absl::StrCat("{", dims_str(k), ", ", dims_str(st), ", {", pads, "}, ", dims_str(dl), ", ",
                                    o.ceil_mode, ", ", o.count_include_pad, "})");
    if (kind == 2) {
      push(max_pool(a.t, o), absl::StrCat("kiln::max_pool(", a.name, ", ", opts), a.lo, a.hi, a.exact, a.special);
    } else if (kind == 3) {
      push(avg_pool(a.t, o), absl::StrCat("kiln::avg_pool(", a.name, ", ", opts), a.lo, a.hi, false, a.special);
    } else {
      Val x = bounded(a, std::sqrt(limit(a.dtype()) / 64));
      push(lp_pool(x.t, 2, o), absl::StrCat("kiln::lp_pool(", x.name, ", 2, ", opts), 0, x.mag() * 8, false, x.special);
    }
    return true;
  }

  // scaled_dot_product_attention over a value as q: k and v new inputs of its dtype, causal or
  // not, an optional bool mask; q and k bounded so that scores stay moderate.
  bool attention_op() {
    Val q = pick_val();
    if (chance(0.5)) {
      // Shapes a fused kernel takes (16-bit floats, head dim 64 or 128) half of the time.
      Shape s{random_dim(), chance(0.5) ? 64 : 128};
      if (chance(0.6)) s.insert(s.begin(), random_dim());
      if (shape_numel(s) * 4 > o_.max_numel) return false;
      q = input(chance(0.5) ? bfloat16 : float16, s);
    }
    if (q.rank() < 2 || !q.is_fl() || q.special || q.t.numel() == 0) return false;
    const Shape& qs = q.shape();
    const int64_t D = qs.back(), Sk = random_dim();
    Shape ks(qs.begin(), qs.end() - 2), vs;
    ks.push_back(Sk);
    vs = ks;
    ks.push_back(D);
    vs.push_back(chance(0.7) ? D : random_dim());
    if (shape_numel(ks) > o_.max_numel || shape_numel(vs) > o_.max_numel) return false;
    if ((shape_numel(qs) / D) * vs.back() > o_.max_numel) return false;
    const double lim = std::sqrt(8.0 / double(std::max<int64_t>(D, 1)));
    q = bounded(q, lim);
    Val k = input(q.dtype(), ks), v = input(q.dtype(), vs);
    if (k.special || v.special) return false;  // NaN/inf keys or values: no bound to check against
    k = bounded(k, lim);
    AttentionOptions o;
    o.causal = chance(0.4);
    std::string extra = o.causal ? ", causal" : "";
    if (chance(0.3)) {
      Val m = input(DType::kBool, {qs[qs.size() - 2], Sk});
      o.mask = m.t;
      extra += ", mask " + m.name;
    }
    push(scaled_dot_product_attention(q.t, k.t, v.t, o),
         absl::StrCat("kiln::scaled_dot_product_attention(", q.name, ", ", k.name, ", ", v.name, extra, ")"), -v.mag(),
         v.mag(), false, false);
    return true;
  }

  bool composite() {
    Val a = pick_val();
    if (a.rank() == 0 || a.t.numel() == 0) return false;
    int k = int(uniform(0, 4));
    int64_t rank = a.rank();
    if (k <= 1) {
      int64_t ax = uniform(-rank, rank - 1);
      int64_t n = a.t.size(ax);
      if (k == 0)
        push(softmax(a.t, ax), absl::StrCat("kiln::softmax(", a.name, ", ", ax, ")"), 0, 1, false, a.special);
      else
        push(log_softmax(a.t, ax), absl::StrCat("kiln::log_softmax(", a.name, ", ", ax, ")"),
             -(a.hi - a.lo) - std::log(double(n)) - 1, 0, false, a.special);
      return true;
    }
    if (k <= 3) {  // layer_norm / rms_norm over the trailing 1 or 2 dims
      int64_t nd = std::min<int64_t>(rank, uniform(1, 2));
      Shape ws(a.shape().end() - nd, a.shape().end());
      int64_t n = shape_numel(ws);
      DType ft = a.is_fl() ? a.dtype() : DType::kFloat32;
      Val x = as_float(a, ft);
      x = bounded(x, std::sqrt(limit(ft) / double(std::max<int64_t>(n, 1))) / 2);  // x*x summed over a row
      Val w = input(ft, ws);
      double bound = 2 * std::sqrt(double(n)) * w.mag() + 2;
      if (k == 2) {
        Val b = input(ft, ws);
        push(layer_norm(x.t, w.t, b.t), absl::StrCat("kiln::layer_norm(", x.name, ", ", w.name, ", ", b.name, ")"),
             -bound - b.mag(), bound + b.mag(), false, x.special || w.special || b.special);
      } else {
        push(rms_norm(x.t, w.t), absl::StrCat("kiln::rms_norm(", x.name, ", ", w.name, ")"), -bound, bound, false,
             x.special || w.special);
      }
      settle();
      return true;
    }
    // linear: x @ W + bias
    if (a.dtype() == DType::kBool) return false;
    int64_t K = a.shape().back(), N = random_dim();
    if (a.t.numel() / std::max<int64_t>(K, 1) * N > o_.max_numel) return false;
    DType ft = a.is_fl() ? a.dtype() : DType::kFloat32;
    Val x = as_float(a, ft);
    double lim = std::sqrt(limit(ft) / double(std::max<int64_t>(K, 1)));
    x = bounded(x, lim);
    Val w = bounded(input(ft, {K, N}), lim);
    Val b = input(ft, {N});
    double m = double(K) * x.mag() * w.mag() + b.mag();
    push(linear(x.t, w.t, b.t), absl::StrCat("kiln::linear(", x.name, ", ", w.name, ", ", b.name, ")"), -m, m, false,
         x.special || w.special || b.special);
    settle();
    return true;
  }

  // --- gathers and scatters --------------------------------------------------------------------
  // Indices for an axis of `n`: negative ones and some out of range (those read 0 / drop the update).
  Val indices(const Shape& s, int64_t n) {
    DType t = pick(std::vector<DType>{int32, int64});
    std::vector<int64_t> v(size_t(shape_numel(s)));
    for (int64_t& x : v) x = uniform(double(-n - 1), double(n));
    Tensor tt = from_vector(v, s, t, dev_);
    return push(tt, absl::StrCat("random_input(", dtype_cpp(t), ", ", dims_str(s), ", ", -n - 1, ", ", n, ")"),
                double(-n - 1), double(n), true, false);
  }

  // segment_sum / max / min over ragged rows of `a`: sums take any offsets (out of range ones
  // clamp, ends before starts are empty segments: 0); max and min non-empty segments only (an
  // empty one holds -inf / an integer's lowest value, outside every bound kept here).
  bool segment_op(const Val& a0) {
    Val a = a0;
    if (a.rank() == 0 || a.dtype() == DType::kBool || a.shape()[0] == 0) return false;
    const int64_t N = a.shape()[0], S = uniform(0, 6);
    const int mode = int(uniform(0, 2));
    std::vector<int64_t> off(size_t(S + 1));
    if (mode == 0) {
      for (int64_t& x : off) x = uniform(-2, double(N + 2));
    } else {
      // Starts in [0, N), each end past its start: offsets s and s + 1 bound segment s, so
      // alternate starts and ends over pairs (segment 2j is [start, end), 2j + 1 [end, next)).
      off[0] = uniform(0, double(N - 1));
      for (size_t i = 1; i < off.size(); ++i)
        off[i] = off[i - 1] < N ? uniform(double(off[i - 1] + 1), double(N)) : 0;
      for (size_t i = 1; i < off.size(); ++i)
        if (off[i] <= off[i - 1]) return false;  // ran past N: no non-empty segment left
    }
    const DType t = pick(std::vector<DType>{int32, int64});
    Tensor o = from_vector(off, {S + 1}, t, dev_);
    Val ov = push(o, absl::StrCat("kiln::from_vector<int64_t>({", absl::StrJoin(off, ", "), "}, {", S + 1, "}, ", dtype_cpp(t), ")"), -2.0, double(N + 2),
                  true, false);
    static const char* names[] = {"segment_sum", "segment_max", "segment_min"};
    Tensor r = mode == 0 ? segment_sum(a.t, ov.t) : mode == 1 ? segment_max(a.t, ov.t) : segment_min(a.t, ov.t);
    const double n = double(N);
    double lo = mode == 0 ? std::min(0.0, a.lo) * n : a.lo, hi = mode == 0 ? std::max(0.0, a.hi) * n : a.hi;
    push(r, absl::StrCat("kiln::", names[mode], "(", a.name, ", ", ov.name, ")"), lo, hi, a.exact && (mode != 0 || !a.is_fl()),
         a.special);
    settle();
    return true;
  }

  bool gather_op() {
    Val a = pick_val();
    if (a.rank() == 0 || a.t.numel() == 0) return false;
    const Shape& s = a.shape();
    int64_t ax = uniform(0, double(a.rank() - 1));
    int kind = int(uniform(0, 2));
    if (kind == 1) {  // whole slices: indices of any rank up to 2
      Shape is = random_shape(uniform(0, 2));
      if (shape_numel(is) * a.t.numel() / s[ax] > o_.max_numel) return false;
      Val idx = indices(is, s[ax]);
      push(gather(a.t, ax, idx.t), absl::StrCat("kiln::gather(", a.name, ", ", ax, ", ", idx.name, ")"),
           std::min(a.lo, 0.0), std::max(a.hi, 0.0), a.exact, a.special);
      return true;
    }
    Shape is = s;  // take_along_axis / scatter: the data's rank, dims no larger outside the axis
    for (int64_t d = 0; d < a.rank(); ++d) is[d] = d == ax ? random_dim() : uniform(1, double(s[d]));
    if (shape_numel(is) > o_.max_numel || shape_numel(is) * s[ax] > 4 * o_.max_numel) return false;
    Val idx = indices(is, s[ax]);
    if (kind == 0) {
      push(take_along_axis(a.t, idx.t, ax), absl::StrCat("kiln::take_along_axis(", a.name, ", ", idx.name, ", ", ax, ")"),
           std::min(a.lo, 0.0), std::max(a.hi, 0.0), a.exact, a.special);
      return true;
    }
    // Scatter: updates of the data's dtype. No mul: products of many updates leave any bound.
    Val u = input(a.dtype(), is);
    std::vector<std::string> names = {"kNone", "kAdd", "kMax", "kMin"};
    const ScatterReduction rs[] = {ScatterReduction::kNone, ScatterReduction::kAdd, ScatterReduction::kMax,
                                   ScatterReduction::kMin};
    int r = a.dtype() == DType::kBool ? 0 : int(uniform(0, 3));
    double k = double(is[ax]);
    double lo = std::min(a.lo, u.lo), hi = std::max(a.hi, u.hi);
    bool exact = a.exact && u.exact;
    if (r == 1) {
      lo = a.lo + k * std::min(u.lo, 0.0), hi = a.hi + k * std::max(u.hi, 0.0);
      exact = exact && !a.is_fl();  // float sums of duplicates depend on the order
    }
    push(scatter(a.t, ax, idx.t, u.t, rs[r]),
         absl::StrCat("kiln::scatter(", a.name, ", ", ax, ", ", idx.name, ", ", u.name, ", kiln::ScatterReduction::",
                      names[size_t(r)], ")"),
         lo, hi, exact, a.special || u.special);
    settle();
    return true;
  }

  bool concat_op() {
    Val a = pick_val();
    if (a.rank() == 0) return false;
    int64_t rank = a.rank();
    bool do_stack = chance(0.25);
    int64_t ax = do_stack ? uniform(0, double(rank)) : uniform(0, double(rank - 1));
    std::vector<Val> parts = {a};
    int n = int(uniform(1, 2));
    for (int i = 0; i < n; ++i) {
      // A partner: a pool value that matches outside the axis, `a` itself, or a new input.
      std::vector<size_t> ok;
      for (size_t j = 0; j < pool_.size(); ++j) {
        const Val& b = pool_[j];
        if (b.rank() != rank) continue;
        bool match = true;
        for (int64_t d = 0; d < rank; ++d)
          if ((do_stack || d != ax) && b.shape()[d] != a.shape()[d]) match = false;
        if (match) ok.push_back(j);
      }
      if (!ok.empty() && chance(0.6)) {
        parts.push_back(pool_[pick(ok)]);
      } else {
        Shape s = a.shape();
        if (!do_stack) s[ax] = uniform(1, 5);
        parts.push_back(input(chance(0.7) ? a.dtype() : random_dtype(), s));
      }
    }
    DType t = parts[0].dtype();
    for (const Val& p : parts) t = promote_types(t, p.dtype());
    int64_t total = 0;
    for (Val& p : parts) {
      fit_ints(&p, t);
      total += p.t.numel();
    }
    if (total > o_.max_numel) return false;
    std::vector<Tensor> ts;
    std::vector<std::string> names;
    double lo = INFINITY, hi = -INFINITY;
    bool exact = true, special = false;
    for (const Val& p : parts) {
      ts.push_back(p.t);
      names.push_back(p.name);
      lo = std::min(lo, p.lo), hi = std::max(hi, p.hi);
      exact = exact && p.exact && (p.is_fl() || !is_float(t) || p.mag() <= exact_int_limit(t));
      if (p.is_fl() && p.dtype() == DType::kFloat64 && t != DType::kFloat64) exact = false;
      special = special || p.special;
    }
    int64_t arg = chance(0.3) ? ax - rank - (do_stack ? 1 : 0) : ax;
    Tensor r = do_stack ? stack(ts, arg) : concat(ts, arg);
    push(r, absl::StrCat(do_stack ? "kiln::stack({" : "kiln::concat({", absl::StrJoin(names, ", "), "}, ", arg, ")"), lo,
         hi, exact, special);
    return true;
  }

  std::mt19937_64 rng_;
  Device dev_;
  GenOptions o_;
  bool special_ = false;
  std::vector<Val> pool_;
  int counter_ = 0;
  std::string program_;
};

}  // namespace

uint64_t graph_seed(uint64_t run_seed, int64_t index) { return splitmix64(run_seed ^ splitmix64(uint64_t(index))); }

GeneratedGraph generate_graph(uint64_t seed, const Device& device, const GenOptions& opts) {
  Generator g(seed, device, opts);
  try {
    return g.run();
  } catch (const Error& e) {
    // The generator only records ops it believes valid: a rejection is a generator bug or a
    // frontend bug, worth reporting with the seed either way.
    throw Error(absl::InternalError(absl::StrCat("graph generator (seed ", seed, "): the frontend rejected an op: ",
                                                 e.what(), "\nprogram so far:\n", g.program())));
  }
}

}  // namespace kiln::fuzz

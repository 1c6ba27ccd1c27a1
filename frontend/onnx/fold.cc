// Host evaluation of the ops shape subgraphs use: elementwise arithmetic, comparisons and logic
// with broadcasting, Relu, Floor, Ceil, Cast, Identity, and the movement ops Reshape, Squeeze, Unsqueeze, Flatten,
// Concat, Gather and Slice. Ops that make host values themselves (Shape, Size, Constant,
// ConstantOfShape, Range) need no folding; anything else runs on the device.
#include "frontend/onnx/fold.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include "absl/strings/str_cat.h"
#include "frontend/onnx/dtypes.h"

namespace kiln::onnx {
namespace {

// Element offsets of `in` (of shape `s`) read at each index of `out` (NumPy broadcasting).
std::vector<int64_t> broadcast_offsets(const Shape& s, const Shape& out) {
  int64_t n = shape_numel(out);
  std::vector<int64_t> r(static_cast<size_t>(n));
  size_t lead = out.size() - s.size();
  std::vector<int64_t> stride(out.size(), 0);
  int64_t st = 1;
  for (size_t d = out.size(); d-- > lead;) {
    int64_t dim = s[d - lead];
    stride[d] = dim == 1 ? 0 : st;
    st *= dim;
  }
  std::vector<int64_t> idx(out.size(), 0);
  for (int64_t i = 0; i < n; ++i) {
    int64_t off = 0;
    for (size_t d = 0; d < out.size(); ++d) off += idx[d] * stride[d];
    r[size_t(i)] = off;
    for (size_t d = out.size(); d-- > 0;) {
      if (++idx[d] < out[d]) break;
      idx[d] = 0;
    }
  }
  return r;
}

bool broadcast_shape(const Shape& a, const Shape& b, Shape* out) {
  size_t r = std::max(a.size(), b.size());
  out->assign(r, 1);
  for (size_t i = 0; i < r; ++i) {
    int64_t x = i + a.size() >= r ? a[i + a.size() - r] : 1;
    int64_t y = i + b.size() >= r ? b[i + b.size() - r] : 1;
    if (x != y && x != 1 && y != 1) return false;
    (*out)[i] = x == 1 ? y : x;
  }
  return true;
}

using ScalarFn = std::function<Scalar(const std::vector<Scalar>&)>;

// Elementwise over all inputs with broadcasting; the result has dtype `out_dtype`. False (the
// device builds it) when broadcasting makes the result larger than kFoldLimit.
bool elementwise(NodeContext& c, DType out_dtype, const ScalarFn& fn) {
  Shape out;
  for (size_t i = 0; i < c.num_inputs(); ++i)
    if (Shape prev = out; !broadcast_shape(prev, c.shape(i), &out))
      c.invalid(absl::StrCat("shapes ", shape_str(c.shape(0)), " and ", shape_str(c.shape(i)), " cannot be broadcast together"));
  int64_t n = shape_numel(out);
  if (n < 0 || n > kFoldLimit) return false;
  std::vector<std::vector<int64_t>> offs;
  for (size_t i = 0; i < c.num_inputs(); ++i) offs.push_back(broadcast_offsets(c.shape(i), out));
  HostTensor r = HostTensor::zeros(out_dtype, out);
  std::vector<Scalar> args(c.num_inputs());
  for (int64_t k = 0; k < r.numel(); ++k) {
    for (size_t i = 0; i < c.num_inputs(); ++i) args[i] = c.host(i, "").at(offs[i][size_t(k)]);
    r.set(k, fn(args));
  }
  c.set_host(0, r);
  return true;
}

bool all_int(const std::vector<Scalar>& a) {
  for (const Scalar& s : a)
    if (!s.is_int) return false;
  return true;
}

Scalar arith(NodeContext& c, const std::string& op, const Scalar& a, const Scalar& b) {
  if (all_int({a, b})) {
    uint64_t x = uint64_t(a.i), y = uint64_t(b.i);  // wrapping, as the device does
    if (op == "Add") return Scalar::from_int(int64_t(x + y));
    if (op == "Sub") return Scalar::from_int(int64_t(x - y));
    if (op == "Mul") return Scalar::from_int(int64_t(x * y));
    if (b.i == 0) c.invalid("integer division by zero");
    if (a.i == INT64_MIN && b.i == -1) return Scalar::from_int(INT64_MIN);
    if (op == "Div") return Scalar::from_int(a.i / b.i);
    if (op == "Mod") {
      int64_t m = a.i % b.i;
      if (c.attr_int("fmod", 0) == 0 && m != 0 && ((m < 0) != (b.i < 0))) m += b.i;
      return Scalar::from_int(m);
    }
    return Scalar::from_int(op == "Max" ? std::max(a.i, b.i) : std::min(a.i, b.i));
  }
  double x = a.as_double(), y = b.as_double();
  if (op == "Add") return Scalar::from_double(x + y);
  if (op == "Sub") return Scalar::from_double(x - y);
  if (op == "Mul") return Scalar::from_double(x * y);
  if (op == "Div") return Scalar::from_double(x / y);
  if (op == "Mod") {
    if (c.attr_int("fmod", 0) == 0) c.invalid("fmod must be 1 for floating-point inputs");
    return Scalar::from_double(std::fmod(x, y));
  }
  if (std::isnan(x) || std::isnan(y)) return Scalar::from_double(NAN);
  return Scalar::from_double(op == "Max" ? std::max(x, y) : std::min(x, y));
}

bool compare(const std::string& op, const Scalar& a, const Scalar& b) {
  if (all_int({a, b})) {
    if (op == "Equal") return a.i == b.i;
    if (op == "Less") return a.i < b.i;
    if (op == "Greater") return a.i > b.i;
    if (op == "LessOrEqual") return a.i <= b.i;
    return a.i >= b.i;
  }
  double x = a.as_double(), y = b.as_double();
  if (op == "Equal") return x == y;
  if (op == "Less") return x < y;
  if (op == "Greater") return x > y;
  if (op == "LessOrEqual") return x <= y;
  return x >= y;
}

// Output shape of a reshape-like op, computed as the device handler would (same rules).
void reshape_like(NodeContext& c, Shape out) {
  HostTensor r = c.host(0, "");
  if (shape_numel(out) != r.numel()) c.invalid(absl::StrCat("cannot reshape ", shape_str(r.shape), " to ", shape_str(out)));
  r.shape = std::move(out);
  c.set_host(0, r);
}

Shape reshape_target(NodeContext& c) {
  const Shape& in = c.shape(0);
  std::vector<int64_t> s = c.host_ints(1, "shape");
  bool allowzero = c.attr_int("allowzero", 0) != 0;
  int64_t known = 1;
  int infer = -1;
  for (size_t d = 0; d < s.size(); ++d) {
    if (s[d] == 0 && !allowzero) {
      if (d >= in.size()) c.invalid("shape copies a dimension the input lacks");
      s[d] = in[d];
    }
    if (s[d] == -1) {
      if (infer >= 0) c.invalid("only one -1 is allowed");
      infer = int(d);
    } else if (s[d] < 0) {
      c.invalid(absl::StrCat("invalid dimension ", s[d]));
    } else {
      known *= s[d];
    }
  }
  if (infer >= 0) {
    int64_t n = shape_numel(in);
    if (known == 0 || n % known) c.invalid(absl::StrCat("cannot reshape ", shape_str(in), " to ", shape_str(s)));
    s[size_t(infer)] = n / known;
  }
  return s;
}

std::vector<int64_t> axes_of(NodeContext& c, std::vector<int64_t> axes, int64_t rank) {
  for (int64_t& a : axes) a = c.axis(a, rank);
  return axes;
}

// A strided selection: out[i0, i1, ...] = in[start0 + i0*step0, ...].
HostTensor select(const HostTensor& in, const std::vector<int64_t>& start, const std::vector<int64_t>& step, const Shape& out) {
  HostTensor r = HostTensor::zeros(in.dtype, out);
  size_t rank = in.shape.size();
  std::vector<int64_t> stride(rank, 1);
  for (size_t d = rank; d-- > 1;) stride[d - 1] = stride[d] * in.shape[d];
  std::vector<int64_t> idx(rank, 0);
  int64_t es = dtype_size(in.dtype);
  for (int64_t k = 0; k < r.numel(); ++k) {
    int64_t off = 0;
    for (size_t d = 0; d < rank; ++d) off += (start[d] + idx[d] * step[d]) * stride[d];
    std::copy_n(in.bytes.data() + off * es, es, r.bytes.data() + k * es);
    for (size_t d = rank; d-- > 0;) {
      if (++idx[d] < out[d]) break;
      idx[d] = 0;
    }
  }
  return r;
}

bool fold_slice(NodeContext& c) {
  const HostTensor& x = c.host(0, "");
  size_t rank = x.shape.size();
  std::vector<int64_t> starts = c.host_ints(1, "starts"), ends = c.host_ints(2, "ends");
  std::vector<int64_t> axes, steps(starts.size(), 1);
  if (c.has_input(3)) axes = c.host_ints(3, "axes");
  else
    for (size_t i = 0; i < starts.size(); ++i) axes.push_back(int64_t(i));
  if (c.has_input(4)) steps = c.host_ints(4, "steps");
  if (ends.size() != starts.size() || axes.size() != starts.size() || steps.size() != starts.size())
    c.invalid("starts, ends, axes and steps differ in length");
  axes = axes_of(c, axes, int64_t(rank));
  std::vector<int64_t> start(rank, 0), step(rank, 1);
  Shape out = x.shape;
  for (size_t i = 0; i < axes.size(); ++i) {
    size_t a = size_t(axes[i]);
    int64_t n = x.shape[a], st = steps[i], s = starts[i], e = ends[i];
    if (st == 0) c.invalid("a step is 0");
    if (s < 0) s += n;
    if (e < 0) e += n;
    int64_t count;
    if (st > 0) {
      s = std::clamp<int64_t>(s, 0, n);
      e = std::clamp<int64_t>(e, 0, n);
      count = e > s ? (e - s - 1) / st + 1 : 0;
    } else {
      s = std::clamp<int64_t>(s, 0, std::max<int64_t>(n - 1, 0));
      e = std::clamp<int64_t>(e, -1, n - 1);
      count = n > 0 && s > e ? (s - e - 1) / -st + 1 : 0;
    }
    start[a] = count ? s : 0;
    step[a] = st;
    out[a] = count;
  }
  c.set_host(0, select(x, start, step, out));
  return true;
}

bool fold_gather(NodeContext& c) {
  const HostTensor& x = c.host(0, "");
  const HostTensor& idx = c.host(1, "indices");
  int64_t rank = int64_t(x.shape.size());
  int64_t axis = c.axis(c.attr_int("axis", 0), rank);
  int64_t n = x.shape[size_t(axis)], inner = 1, outer = 1;
  for (int64_t d = axis + 1; d < rank; ++d) inner *= x.shape[size_t(d)];
  for (int64_t d = 0; d < axis; ++d) outer *= x.shape[size_t(d)];
  Shape out(x.shape.begin(), x.shape.begin() + axis);
  out.insert(out.end(), idx.shape.begin(), idx.shape.end());
  out.insert(out.end(), x.shape.begin() + axis + 1, x.shape.end());
  if (shape_numel(out) < 0 || shape_numel(out) > kFoldLimit) return false;
  HostTensor r = HostTensor::zeros(x.dtype, out);
  int64_t es = dtype_size(x.dtype), k = idx.numel();
  for (int64_t j = 0; j < k; ++j) {
    int64_t i = idx.int_at(j);
    if (i < -n || i >= n) c.invalid(absl::StrCat("index ", i, " is out of range for an axis of size ", n));
    if (i < 0) i += n;
    for (int64_t o = 0; o < outer; ++o)
      std::copy_n(x.bytes.data() + ((o * n + i) * inner) * es, inner * es, r.bytes.data() + ((o * k + j) * inner) * es);
  }
  c.set_host(0, r);
  return true;
}

bool fold_concat(NodeContext& c) {
  const HostTensor& first = c.host(0, "");
  int64_t rank = int64_t(first.shape.size());
  int64_t axis = c.axis(c.attr_int("axis", 0), rank);
  Shape out = first.shape;
  out[size_t(axis)] = 0;
  for (size_t i = 0; i < c.num_inputs(); ++i) {
    const HostTensor& h = c.host(i, "");
    if (int64_t(h.shape.size()) != rank || h.dtype != first.dtype) c.invalid("inputs differ in rank or dtype");
    for (int64_t d = 0; d < rank; ++d)
      if (d != axis && h.shape[size_t(d)] != first.shape[size_t(d)]) c.invalid("inputs differ in shape off the axis");
    out[size_t(axis)] += h.shape[size_t(axis)];
  }
  int64_t outer = 1, es = dtype_size(first.dtype);
  for (int64_t d = 0; d < axis; ++d) outer *= out[size_t(d)];
  HostTensor r = HostTensor::zeros(first.dtype, out);
  int64_t at = 0;
  for (int64_t o = 0; o < outer; ++o)
    for (size_t i = 0; i < c.num_inputs(); ++i) {
      const HostTensor& h = c.host(i, "");
      int64_t chunk = h.numel() / std::max<int64_t>(outer, 1) * es;
      std::copy_n(h.bytes.data() + o * chunk, chunk, r.bytes.data() + at);
      at += chunk;
    }
  c.set_host(0, r);
  return true;
}

// ReduceSum/Prod/Max/Min of host values (the element count of a shape, its largest entry).
bool fold_reduce(NodeContext& c, const std::string& op) {
  const HostTensor& x = c.host(0, "");
  int64_t rank = int64_t(x.shape.size());
  std::vector<int64_t> axes;
  if (op == "ReduceSum") {
    std::optional<std::vector<int64_t>> given = c.moved_operand(1, "axes");
    if (given) axes = *given;
    if (axes.empty() && c.attr_int("noop_with_empty_axes", 0)) {
      c.set_host(0, x);
      return true;
    }
  } else {
    axes = c.attr_ints("axes");
  }
  if (axes.empty())
    for (int64_t d = 0; d < rank; ++d) axes.push_back(d);
  axes = axes_of(c, axes, rank);
  bool keep = c.attr_int("keepdims", 1) != 0;
  Shape kept = x.shape, out;
  for (int64_t a : axes) {
    if (x.shape[size_t(a)] == 0) return false;  // the handler reports it
    kept[size_t(a)] = 1;
  }
  for (int64_t d = 0; d < rank; ++d)
    if (kept[size_t(d)] != 1 || std::find(axes.begin(), axes.end(), d) == axes.end() || keep) out.push_back(kept[size_t(d)]);
  HostTensor r = HostTensor::zeros(x.dtype, kept);
  std::vector<bool> seen(size_t(r.numel()), false);
  std::vector<int64_t> idx(size_t(rank), 0);
  for (int64_t k = 0; k < x.numel(); ++k) {
    int64_t o = 0;
    for (int64_t d = 0; d < rank; ++d) o = o * kept[size_t(d)] + (kept[size_t(d)] == 1 ? 0 : idx[size_t(d)]);
    Scalar v = x.at(k);
    if (!seen[size_t(o)]) {
      r.set(o, v);
      seen[size_t(o)] = true;
    } else {
      Scalar acc = r.at(o);
      bool ints = acc.is_int && v.is_int;
      if (op == "ReduceSum") acc = ints ? Scalar::from_int(int64_t(uint64_t(acc.i) + uint64_t(v.i))) : Scalar::from_double(acc.as_double() + v.as_double());
      else if (op == "ReduceProd") acc = ints ? Scalar::from_int(int64_t(uint64_t(acc.i) * uint64_t(v.i))) : Scalar::from_double(acc.as_double() * v.as_double());
      else acc = arith(c, op == "ReduceMax" ? "Max" : "Min", acc, v);
      r.set(o, acc);
    }
    for (int64_t d = rank; d-- > 0;) {
      if (++idx[size_t(d)] < x.shape[size_t(d)]) break;
      idx[size_t(d)] = 0;
    }
  }
  if (x.numel() == 0) return false;
  r.shape = out;
  c.set_host(0, r);
  return true;
}

using Folder = std::function<bool(NodeContext&)>;

const std::map<std::string, Folder>& folders() {
  static const auto* m = [] {
    auto* f = new std::map<std::string, Folder>;
    for (const char* op : {"Add", "Sub", "Mul", "Div", "Mod", "Max", "Min"})
      (*f)[op] = [op = std::string(op)](NodeContext& c) {
        if (c.num_inputs() == 1) {
          c.set_host(0, c.host(0, ""));
          return true;
        }
        for (size_t i = 1; i < c.num_inputs(); ++i)
          if (c.dtype(i) != c.dtype(0)) return false;  // let the handler report it
        if (c.num_inputs() != 2 && op != "Max" && op != "Min") return false;
        return elementwise(c, c.dtype(0), [&](const std::vector<Scalar>& a) {
          Scalar r = a[0];
          for (size_t i = 1; i < a.size(); ++i) r = arith(c, op, r, a[i]);
          return r;
        });
      };
    for (const char* op : {"Equal", "Less", "Greater", "LessOrEqual", "GreaterOrEqual"})
      (*f)[op] = [op = std::string(op)](NodeContext& c) {
        return elementwise(c, DType::kBool, [&](const std::vector<Scalar>& a) { return Scalar::from_int(compare(op, a[0], a[1])); });
      };
    (*f)["And"] = [](NodeContext& c) {
      return elementwise(c, DType::kBool, [](const std::vector<Scalar>& a) { return Scalar::from_int(a[0].as_int() && a[1].as_int()); });
    };
    (*f)["Or"] = [](NodeContext& c) {
      return elementwise(c, DType::kBool, [](const std::vector<Scalar>& a) { return Scalar::from_int(a[0].as_int() || a[1].as_int()); });
    };
    (*f)["Not"] = [](NodeContext& c) {
      return elementwise(c, DType::kBool, [](const std::vector<Scalar>& a) { return Scalar::from_int(!a[0].as_int()); });
    };
    (*f)["Neg"] = [](NodeContext& c) {
      return elementwise(c, c.dtype(0), [](const std::vector<Scalar>& a) {
        return a[0].is_int ? Scalar::from_int(int64_t(0 - uint64_t(a[0].i))) : Scalar::from_double(-a[0].f);
      });
    };
    (*f)["Abs"] = [](NodeContext& c) {
      return elementwise(c, c.dtype(0), [](const std::vector<Scalar>& a) {
        return a[0].is_int ? Scalar::from_int(a[0].i < 0 ? int64_t(0 - uint64_t(a[0].i)) : a[0].i) : Scalar::from_double(std::fabs(a[0].f));
      });
    };
    (*f)["Relu"] = [](NodeContext& c) {
      return elementwise(c, c.dtype(0), [](const std::vector<Scalar>& a) {
        return a[0].is_int ? Scalar::from_int(std::max<int64_t>(a[0].i, 0)) : Scalar::from_double(a[0].f > 0 || std::isnan(a[0].f) ? a[0].f : 0.0);
      });
    };
    (*f)["Floor"] = [](NodeContext& c) {
      return elementwise(c, c.dtype(0), [](const std::vector<Scalar>& a) { return a[0].is_int ? a[0] : Scalar::from_double(std::floor(a[0].f)); });
    };
    (*f)["Ceil"] = [](NodeContext& c) {
      return elementwise(c, c.dtype(0), [](const std::vector<Scalar>& a) { return a[0].is_int ? a[0] : Scalar::from_double(std::ceil(a[0].f)); });
    };
    (*f)["Where"] = [](NodeContext& c) {
      if (c.dtype(1) != c.dtype(2)) return false;
      return elementwise(c, c.dtype(1), [](const std::vector<Scalar>& a) { return a[0].as_int() ? a[1] : a[2]; });
    };
    (*f)["Cast"] = [](NodeContext& c) {
      auto t = dtype_from_onnx(c.attr_int("to", 0), absl::StrCat(c.label(), ": attribute 'to'"));
      if (!t.ok()) return false;  // the handler reports it
      DType to = *t;
      // Float -> integer truncates toward zero, saturating like the device cast.
      return elementwise(c, to, [to](const std::vector<Scalar>& a) {
        if (!a[0].is_int && !is_float(to) && to != DType::kBool) return Scalar::from_double(std::trunc(a[0].f));
        return a[0];
      });
    };
    (*f)["Identity"] = [](NodeContext& c) {
      c.set_host(0, c.host(0, ""));
      return true;
    };
    (*f)["Reshape"] = [](NodeContext& c) {
      reshape_like(c, reshape_target(c));
      return true;
    };
    (*f)["Flatten"] = [](NodeContext& c) {
      const Shape& s = c.shape(0);
      int64_t r = int64_t(s.size()), axis = c.attr_int("axis", 1);
      if (axis < -r || axis > r) c.invalid(absl::StrCat("axis ", axis, " is out of range for rank ", r));
      if (axis < 0) axis += r;
      int64_t a = 1, b = 1;
      for (int64_t d = 0; d < r; ++d) (d < axis ? a : b) *= s[size_t(d)];
      reshape_like(c, {a, b});
      return true;
    };
    (*f)["Squeeze"] = [](NodeContext& c) {
      const Shape& s = c.shape(0);
      Shape out;
      std::optional<std::vector<int64_t>> given = c.moved_operand(1, "axes");
      std::vector<int64_t> axes;
      if (given) axes = axes_of(c, *given, int64_t(s.size()));
      for (size_t d = 0; d < s.size(); ++d) {
        bool listed = std::find(axes.begin(), axes.end(), int64_t(d)) != axes.end();
        bool drop = given ? listed : s[d] == 1;
        if (drop && s[d] != 1) c.invalid(absl::StrCat("cannot squeeze axis ", d, " of size ", s[d]));
        if (!drop) out.push_back(s[d]);
      }
      reshape_like(c, out);
      return true;
    };
    (*f)["Unsqueeze"] = [](NodeContext& c) {
      const Shape& s = c.shape(0);
      std::optional<std::vector<int64_t>> operand = c.moved_operand(1, "axes");
      if (!operand) c.invalid("axes are required");
      std::vector<int64_t> given = *operand;
      int64_t r = int64_t(s.size() + given.size());
      std::vector<int64_t> axes = axes_of(c, given, r);
      Shape out;
      size_t k = 0;
      for (int64_t d = 0; d < r; ++d) {
        if (std::count(axes.begin(), axes.end(), d) > 1) c.invalid("an axis appears twice");
        out.push_back(std::find(axes.begin(), axes.end(), d) != axes.end() ? 1 : s[k++]);
      }
      reshape_like(c, out);
      return true;
    };
    for (const char* op : {"ReduceSum", "ReduceProd", "ReduceMax", "ReduceMin"})
      (*f)[op] = [op = std::string(op)](NodeContext& c) { return fold_reduce(c, op); };
    (*f)["Slice"] = fold_slice;
    (*f)["Gather"] = fold_gather;
    (*f)["Concat"] = fold_concat;
    return f;
  }();
  return *m;
}

}  // namespace

bool try_fold(NodeContext& ctx) {
  auto it = folders().find(ctx.node().op_type);
  if (it == folders().end()) return false;
  for (size_t i = 0; i < ctx.num_inputs(); ++i)
    if (ctx.has_input(i) && ctx.dtype(i) == DType::kFloat16) return false;  // f16 rounding is the device's
  return it->second(ctx);
}

}  // namespace kiln::onnx

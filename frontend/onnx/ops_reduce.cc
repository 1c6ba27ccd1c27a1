// Reductions (ReduceSum/Mean/Max/Min/Prod/SumSquare/L1/L2/LogSum/LogSumExp) and ArgMax/ArgMin
// on kiln's reductions. Axes come from the attribute, or (ReduceSum from opset 13) from an input
// known at import; empty axes reduce everything unless noop_with_empty_axes. Integer sums and
// products accumulate in int64 (kiln's rule) and are cast back to the input dtype, as ONNX keeps
// the dtype.
#include "absl/strings/str_cat.h"
#include "frontend/onnx/ops.h"

namespace kiln::onnx {
namespace {

struct Axes {
  std::vector<int64_t> axes;  // normalized; all axes when empty axes mean "all"
  bool noop = false;
};

Axes reduce_axes(NodeContext& c) {
  Axes r;
  std::vector<int64_t> given;
  // ReduceSum is the only one with axes as an input in opsets 13-17.
  bool from_input = c.node().op_type == "ReduceSum" && c.opset() >= 13;
  if (c.node().op_type == "ReduceSum") given = c.moved_operand(1, "axes").value_or(std::vector<int64_t>{});
  else given = c.attr_ints("axes");
  if (!from_input && c.has_attr("noop_with_empty_axes")) c.unsupported("noop_with_empty_axes before opset 18");
  int64_t rank = c.rank(0);
  if (given.empty()) {
    if (from_input && c.attr_int("noop_with_empty_axes", 0)) {
      r.noop = true;
      return r;
    }
    for (int64_t d = 0; d < rank; ++d) r.axes.push_back(d);
    return r;
  }
  for (int64_t a : given) {
    int64_t n = c.axis(a, rank, "axis");
    for (int64_t e : r.axes)
      if (e == n) c.invalid(absl::StrCat("axis ", a, " appears twice"));
    r.axes.push_back(n);
  }
  return r;
}

using Reducer = std::function<Tensor(NodeContext&, const Tensor&, const std::vector<int64_t>&, bool)>;

void reduction(OpTable& t, const char* name, Reducer fn) {
  bool axes_input = std::string(name) == "ReduceSum";
  std::vector<std::string> attrs = {"keepdims", "axes", "noop_with_empty_axes"};
  t[name] = {[fn](NodeContext& c) {
               Axes a = reduce_axes(c);
               Tensor x = c.in(0);
               if (a.noop) {
                 c.set(0, x);
                 return;
               }
               bool keep = c.attr_int("keepdims", 1) != 0;
               for (int64_t ax : a.axes)
                 if (x.shape()[size_t(ax)] == 0) c.unsupported("reducing over an axis of size 0");
               if (a.axes.empty()) {  // a scalar: nothing to reduce, the op's elementwise part only
                 c.set(0, fn(c, x.reshape({1}), {0}, false));
                 return;
               }
               c.set(0, fn(c, x, a.axes, keep));
             },
             attrs, axes_input ? std::vector<int>{1} : std::vector<int>{}};
}

Tensor keep_dtype(const Tensor& r, DType t) { return r.dtype() == t ? r : cast(r, t); }

Tensor float_only(NodeContext& c, const Tensor& x) {
  if (!is_float(x.dtype())) c.unsupported(absl::StrCat(c.node().op_type, " of ", dtype_name(x.dtype()), " (kiln computes it for floats)"));
  return x;
}

void arg_reduction(OpTable& t, const char* name, bool is_max) {
  t[name] = {[is_max](NodeContext& c) {
               Tensor x = c.in(0);
               int64_t axis = c.axis(c.attr_int("axis", 0), x.ndim());
               bool keep = c.attr_int("keepdims", 1) != 0;
               bool last = c.attr_int("select_last_index", 0) != 0;
               int64_t n = x.shape()[size_t(axis)];
               if (n == 0) c.invalid("the axis has size 0");
               if (last) x = slice(x, axis, n - 1, -n - 1, -1);  // reversed: the first hit is the last index
               Tensor r = is_max ? argmax(x, axis, keep) : argmin(x, axis, keep);
               if (last) r = (n - 1) - r;
               c.set(0, keep_dtype(r, DType::kInt64));
             },
             {"axis", "keepdims", "select_last_index"}, {}};
}

// TopK without a sort primitive: each element's rank in a strict total order (larger first, or
// smaller first; NaN above every number and equal to NaN, as PyTorch orders it, so it comes
// first among the largest and last among the smallest; ties by the lower index, as ONNX requires) from all pairwise comparisons along the axis, then output slot t
// takes the element of rank t. O(n^2) comparisons per row, so rows above kTopKMaxRow elements are
// refused at import rather than computed slowly.
constexpr int64_t kTopKMaxRow = 4096;

void topk_op(NodeContext& c) {
  Tensor x = c.in(0);
  std::vector<int64_t> kv = c.host_ints(1, "K");
  if (kv.size() != 1) c.invalid(absl::StrCat("K has ", kv.size(), " elements (one expected)"));
  const int64_t axis = c.axis(c.attr_int("axis", -1), x.ndim()), k = kv[0], n = x.shape()[size_t(axis)];
  const bool largest = c.attr_int("largest", 1) != 0;
  if (k < 0 || k > n) c.invalid(absl::StrCat("K = ", k, " is outside [0, ", n, "] (the axis' size)"));
  if (n > kTopKMaxRow)
    c.unsupported(absl::StrCat("TopK over ", n, " elements per row (kiln has no sort primitive yet; up to ", kTopKMaxRow,
                               " are ranked by pairwise comparison)"));
  Tensor xl = x.transpose(axis, x.ndim() - 1);  // the axis last: [..., n]
  Tensor xi = xl.unsqueeze(-1), xj = xl.unsqueeze(-2);  // element i down, element j across
  Tensor nan_i = xi != xi, nan_j = xj != xj;
  // j ranks before i: NaN is the largest value (first when largest, last otherwise).
  Tensor before = largest ? (nan_j && !nan_i) || (xj > xi) : (nan_i && !nan_j) || (xj < xi);
  Tensor same = (xj == xi) || (nan_j && nan_i);
  Tensor pos = arange(n, DType::kInt64, x.device());
  Tensor lower = pos.reshape({1, n}) < pos.reshape({n, 1});  // j < i
  Tensor rank = sum(cast(before || (same && lower), DType::kInt64), {-1});  // [..., n]
  Tensor slot = arange(k, DType::kInt64, x.device());
  Tensor hit = rank.unsqueeze(-1) == slot;  // [..., n, k]: element i fills slot t
  Tensor idx = sum(where(hit, pos.reshape({n, 1}), 0.0), {-2});  // [..., k]
  Tensor values = take_along_axis(xl, idx, -1);
  c.set(0, values.transpose(axis, x.ndim() - 1));
  if (c.num_outputs() > 1) c.set(1, idx.transpose(axis, x.ndim() - 1));
}

}  // namespace

void register_reduce_ops(OpTable& t) {
  reduction(t, "ReduceSum", [](NodeContext&, const Tensor& x, const std::vector<int64_t>& ax, bool k) {
    return keep_dtype(sum(x, ax, k), x.dtype());
  });
  reduction(t, "ReduceProd", [](NodeContext&, const Tensor& x, const std::vector<int64_t>& ax, bool k) {
    return keep_dtype(prod(x, ax, k), x.dtype());
  });
  reduction(t, "ReduceMax", [](NodeContext&, const Tensor& x, const std::vector<int64_t>& ax, bool k) { return max(x, ax, k); });
  reduction(t, "ReduceMin", [](NodeContext&, const Tensor& x, const std::vector<int64_t>& ax, bool k) { return min(x, ax, k); });
  reduction(t, "ReduceMean", [](NodeContext& c, const Tensor& x, const std::vector<int64_t>& ax, bool k) {
    return mean(float_only(c, x), ax, k);
  });
  reduction(t, "ReduceSumSquare", [](NodeContext&, const Tensor& x, const std::vector<int64_t>& ax, bool k) {
    return keep_dtype(sum(x * x, ax, k), x.dtype());
  });
  reduction(t, "ReduceL1", [](NodeContext&, const Tensor& x, const std::vector<int64_t>& ax, bool k) {
    return keep_dtype(sum(abs(x), ax, k), x.dtype());
  });
  reduction(t, "ReduceL2", [](NodeContext& c, const Tensor& x, const std::vector<int64_t>& ax, bool k) {
    return sqrt(sum(float_only(c, x) * x, ax, k));
  });
  reduction(t, "ReduceLogSum", [](NodeContext& c, const Tensor& x, const std::vector<int64_t>& ax, bool k) {
    return log(sum(float_only(c, x), ax, k));
  });
  reduction(t, "ReduceLogSumExp", [](NodeContext& c, const Tensor& x, const std::vector<int64_t>& ax, bool k) {
    Tensor f = float_only(c, x);
    Tensor m = max(f, ax, true);
    m = where(abs(m) == INFINITY, zeros({}, m.dtype(), m.device()), m);  // keep inf inputs from making NaN
    Tensor r = log(sum(exp(f - m), ax, true)) + m;
    if (!k) {
      Shape s;
      for (int64_t d = 0; d < f.ndim(); ++d)
        if (std::find(ax.begin(), ax.end(), d) == ax.end()) s.push_back(f.shape()[size_t(d)]);
      r = r.reshape(s);
    }
    return r;
  });
  arg_reduction(t, "ArgMax", true);
  arg_reduction(t, "ArgMin", false);
  t["TopK"] = {topk_op, {"axis", "largest", "sorted"}, {1}};
}

}  // namespace kiln::onnx

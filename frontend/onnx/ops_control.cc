// Control flow. If: a condition known at import builds the taken branch in place; one computed
// on the device becomes a kiln::cond (both branches traced, the taken one run on the device:
// their outputs must agree in dtype and shape; a graph input as the condition is one too). A Loop
// whose trip count and conditions are known at import is unrolled (at most kMaxUnroll
// iterations); one whose trip count or condition is computed at run time, or that runs longer,
// is a kiln::while_loop (without scan outputs). Scan is unrolled over its (static) scan axis. A
// Loop's initial condition or trip count read from a graph input makes that input a value input.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "frontend/onnx/ops.h"
#include "kiln/control.h"
#include "kiln/error.h"

namespace kiln::onnx {
namespace {

constexpr int64_t kMaxUnroll = 1024;

bool host_bool(NodeContext& c, const Value& v, const std::string& what) {
  if (!v.host) c.unsupported(absl::StrCat(what, " computed at run time (kiln has no device-side control flow yet)"));
  if (v.host->numel() != 1) c.invalid(absl::StrCat(what, " must hold one value"));
  return v.host->int_at(0) != 0;
}

// An If whose condition is computed on the device: kiln::cond over the two branches, each run
// as a subgraph of this scope (what it reads of the enclosing graphs is captured).
void if_on_device(NodeContext& c) {
  Tensor pred = c.in(0);
  if (pred.numel() != 1) c.invalid("an If condition must hold one value");
  if (pred.dtype() != DType::kBool) c.invalid(absl::StrCat("an If condition must be bool, got ", dtype_name(pred.dtype())));
  auto branch = [&c](const char* name) {
    return [&c, name](const Values&) {
      const Graph& g = c.attr_graph(name);
      if (!g.inputs.empty()) c.invalid("a branch takes no inputs");
      Values r;
      for (const Value& v : c.run_subgraph(g, {})) r.push_back(v.tensor.defined() ? v.tensor : to_tensor(*v.host, c.device()));
      return r;
    };
  };
  Values outs;
  try {
    outs = kiln::cond(reshape(pred, {}), branch("then_branch"), branch("else_branch"), {}, c.node().name);
  } catch (const Error& e) {
    c.unsupported(absl::StrCat("an If on a condition computed at run time runs on the device, where ",
                               e.status().message()));
  }
  if (outs.size() != c.num_outputs()) c.invalid(absl::StrCat("the branches have ", outs.size(), " outputs, the node ", c.num_outputs()));
  for (size_t i = 0; i < outs.size(); ++i) c.set(i, outs[i]);
}

void if_op(NodeContext& c) {
  if (!c.is_host(0)) return if_on_device(c);
  bool cond = host_bool(c, c.value(0), "an If condition");
  const Graph& branch = c.attr_graph(cond ? "then_branch" : "else_branch");
  if (!branch.inputs.empty()) c.invalid("a branch takes no inputs");
  std::vector<Value> outs = c.run_subgraph(branch, {});
  if (outs.size() != c.num_outputs()) c.invalid(absl::StrCat("the branch has ", outs.size(), " outputs, the node ", c.num_outputs()));
  for (size_t i = 0; i < outs.size(); ++i) c.set_value(i, std::move(outs[i]));
}

Value host_value(HostTensor h) {
  DType t = h.dtype;
  Shape s = h.shape;
  return Value{t, s, Tensor(), std::make_shared<const HostTensor>(std::move(h))};
}

Value device_value(const Tensor& t) { return Value{t.dtype(), t.shape(), t, nullptr}; }

// A Loop whose trip count or condition is decided at run time, or that runs more iterations than
// are unrolled: a kiln::while_loop over (iteration, condition, carried values...), the body run
// as a subgraph of this scope; its carried values keep their dtypes and shapes. Scan outputs
// (one row per iteration: a length known only at run time) are refused.
void loop_on_device(NodeContext& c, const Graph& body, size_t carried, size_t scans) {
  if (scans > 0)
    c.unsupported("scan outputs of a Loop whose iterations are decided at run time or exceed the unrolled 1024 "
                  "(their length is not static)");
  auto scalar = [&](size_t i, DType t, const char* what) {
    Tensor v = c.in(i);
    if (v.numel() != 1) c.invalid(absl::StrCat(what, " must hold one value"));
    if (v.dtype() != t) c.invalid(absl::StrCat(what, " must be ", dtype_name(t), ", got ", dtype_name(v.dtype())));
    return reshape(v, {});
  };
  const bool has_m = c.has_input(0), has_cond = c.has_input(1);
  const Tensor m = has_m ? scalar(0, DType::kInt64, "the trip count M") : Tensor();
  Values init = {full({}, 0, DType::kInt64, c.device()),
                 has_cond ? scalar(1, DType::kBool, "the loop condition") : full({}, 1, DType::kBool, c.device())};
  for (size_t k = 0; k < carried; ++k) init.push_back(c.in(2 + k));
  Values out;
  try {
    out = while_loop(
        [&](const Values& v) { return has_m ? logical_and(v[0] < m, v[1]) : v[1]; },
        [&](const Values& v) {
          std::vector<Value> bound;
          for (const Tensor& t : v) bound.push_back(device_value(t));
          std::vector<Value> outs = c.run_subgraph(body, bound);
          Values next = {v[0] + 1.0, v[1]};
          if (has_cond) {  // without a cond input, the body's cond output is ignored
            const Value& o = outs[0];
            Tensor b = o.tensor.defined() ? o.tensor : to_tensor(*o.host, c.device());
            if (b.numel() != 1 || b.dtype() != DType::kBool) c.invalid("the body's condition must be one bool");
            next[1] = reshape(b, {});
          }
          for (size_t k = 0; k < carried; ++k) {
            const Value& o = outs[1 + k];
            next.push_back(o.tensor.defined() ? o.tensor : to_tensor(*o.host, c.device()));
          }
          return next;
        },
        init, {}, c.node().name);
  } catch (const Error& e) {
    c.unsupported(absl::StrCat("a Loop decided at run time runs on the device, where ", e.status().message()));
  }
  for (size_t k = 0; k < carried && k < c.num_outputs(); ++k) c.set(k, out[2 + k]);
}

void loop_op(NodeContext& c) {
  const Graph& body = c.attr_graph("body");
  size_t carried = c.num_inputs() > 2 ? c.num_inputs() - 2 : 0;
  if (body.inputs.size() != carried + 2) c.invalid(absl::StrCat("the body takes ", body.inputs.size(), " inputs for ", carried, " loop-carried values"));
  if (body.outputs.size() < carried + 1) c.invalid("the body must output the condition and every loop-carried value");
  size_t scans = body.outputs.size() - 1 - carried;
  if (c.num_outputs() > carried + scans) c.invalid("more outputs than loop-carried values and scan outputs");
  if ((c.has_input(0) && !c.is_host(0)) || (c.has_input(1) && !c.is_host(1))) return loop_on_device(c, body, carried, scans);
  int64_t trips = kMaxUnroll + 1;
  if (c.has_input(0)) {
    const HostTensor& m = c.host(0, "the trip count M");
    if (m.numel() != 1) c.invalid("M must hold one value");
    trips = m.int_at(0);
  }
  bool cond = c.has_input(1) ? host_bool(c, c.value(1), "the loop condition") : true;
  std::vector<Value> state;
  for (size_t k = 0; k < carried; ++k) state.push_back(c.value(2 + k));
  std::vector<std::vector<Tensor>> scanned(scans);
  int64_t i = 0;
  if (trips > kMaxUnroll && c.has_input(0)) return loop_on_device(c, body, carried, scans);
  for (; i < trips && cond; ++i) {
    if (i >= kMaxUnroll) c.unsupported(absl::StrCat("a Loop of more than ", kMaxUnroll, " iterations (loops are unrolled at import)"));
    Value cond_in = host_value(HostTensor::from_ints({1}, {}, DType::kBool));
    std::vector<Value> bound = {host_value(HostTensor::from_ints({i}, {})), cond_in};
    bound.insert(bound.end(), state.begin(), state.end());
    std::vector<Value> outs = c.run_subgraph(body, bound);
    // Without a cond input, cond_out is ignored; one computed at run time makes the whole Loop a
    // device loop (the iterations unrolled so far are never read).
    if (c.has_input(1) && !outs[0].host) return loop_on_device(c, body, carried, scans);
    if (c.has_input(1)) cond = host_bool(c, outs[0], "the loop condition");
    for (size_t k = 0; k < carried; ++k) state[k] = outs[1 + k];
    for (size_t k = 0; k < scans; ++k) {
      Value& v = outs[1 + carried + k];
      scanned[k].push_back(v.tensor.defined() ? v.tensor : to_tensor(*v.host, c.device()));
    }
  }
  for (size_t k = 0; k < carried && k < c.num_outputs(); ++k) c.set_value(k, state[k]);
  for (size_t k = 0; k < scans && carried + k < c.num_outputs(); ++k) {
    if (scanned[k].empty()) c.unsupported("a scan output of a Loop that runs no iteration (its shape is unknown)");
    std::vector<Tensor> rows;
    for (const Tensor& t : scanned[k]) rows.push_back(unsqueeze(t, 0));
    c.set(carried + k, rows.size() == 1 ? rows[0] : concat(rows, 0));
  }
}

// Scan (opset 9+) unrolled over its scan axis, whose length is static: each step binds the
// states and one slice of every scan input, and stacks the body's scan outputs.
void scan_op(NodeContext& c) {
  const Graph& body = c.attr_graph("body");
  int64_t num_scan = c.attr_int("num_scan_inputs", -1);
  int64_t n_in = int64_t(c.num_inputs());
  if (num_scan <= 0 || num_scan > n_in) c.invalid("num_scan_inputs must be between 1 and the number of inputs");
  size_t states = size_t(n_in - num_scan);
  if (body.inputs.size() != size_t(n_in)) c.invalid("the body takes one input per state and scan input");
  if (body.outputs.size() < states) c.invalid("the body must output every state");
  size_t scan_outs = body.outputs.size() - states;
  auto per = [&](const char* name, size_t n) {
    std::vector<int64_t> v = c.attr_ints(name, std::vector<int64_t>(n, 0));
    if (v.size() != n) c.invalid(absl::StrCat("attribute '", name, "' needs ", n, " values"));
    return v;
  };
  std::vector<int64_t> in_axes = per("scan_input_axes", size_t(num_scan)), in_dirs = per("scan_input_directions", size_t(num_scan));
  std::vector<int64_t> out_axes = per("scan_output_axes", scan_outs), out_dirs = per("scan_output_directions", scan_outs);
  std::vector<Tensor> xs;
  int64_t length = -1;
  for (int64_t k = 0; k < num_scan; ++k) {
    Tensor x = c.in(states + size_t(k));
    int64_t axis = c.axis(in_axes[size_t(k)], x.ndim(), "scan input axis");
    in_axes[size_t(k)] = axis;
    if (length >= 0 && x.shape()[size_t(axis)] != length) c.invalid("scan inputs differ in length");
    length = x.shape()[size_t(axis)];
    xs.push_back(x);
  }
  if (length > kMaxUnroll) c.unsupported(absl::StrCat("a Scan of ", length, " steps (scans are unrolled at import, up to ", kMaxUnroll, ")"));
  if (length == 0 && scan_outs > 0) c.unsupported("a Scan of zero steps with scan outputs (their shapes are unknown)");
  std::vector<Value> state;
  for (size_t k = 0; k < states; ++k) state.push_back(c.value(k));
  std::vector<std::vector<Tensor>> scanned(scan_outs);
  for (int64_t t = 0; t < length; ++t) {
    std::vector<Value> bound = state;
    for (int64_t k = 0; k < num_scan; ++k) {
      int64_t at = in_dirs[size_t(k)] ? length - 1 - t : t;
      Tensor s = squeeze(slice(xs[size_t(k)], in_axes[size_t(k)], at, at + 1), in_axes[size_t(k)]);
      bound.push_back(Value{s.dtype(), s.shape(), s, nullptr});
    }
    std::vector<Value> outs = c.run_subgraph(body, bound);
    for (size_t k = 0; k < states; ++k) state[k] = outs[k];
    for (size_t k = 0; k < scan_outs; ++k) {
      Value& v = outs[states + k];
      scanned[k].push_back(v.tensor.defined() ? v.tensor : to_tensor(*v.host, c.device()));
    }
  }
  for (size_t k = 0; k < states && k < c.num_outputs(); ++k) c.set_value(k, state[k]);
  for (size_t k = 0; k < scan_outs && states + k < c.num_outputs(); ++k) {
    std::vector<Tensor> rows = scanned[k];
    if (out_dirs[k]) std::reverse(rows.begin(), rows.end());
    int64_t axis = c.axis(out_axes[k], rows[0].ndim() + 1, "scan output axis");
    for (Tensor& r : rows) r = unsqueeze(r, axis);
    c.set(states + k, rows.size() == 1 ? rows[0] : concat(rows, axis));
  }
}

}  // namespace

void register_control_ops(OpTable& t) {
  t["Scan"] = {scan_op, {"body", "num_scan_inputs", "scan_input_axes", "scan_input_directions", "scan_output_axes", "scan_output_directions"}, {}};
  t["If"] = {if_op, {"then_branch", "else_branch"}, {}};
  t["Loop"] = {loop_op, {"body"}, {0, 1}};
}

}  // namespace kiln::onnx

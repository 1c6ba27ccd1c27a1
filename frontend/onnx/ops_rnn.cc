// RNN, GRU and LSTM unrolled over their (static) sequence length: the input projection of every
// step is one matmul, then each step is a small matmul with the recurrence weights and the
// gates' elementwise arithmetic, which kiln fuses. Directions forward, reverse and
// bidirectional; layout 0 and 1; initial states; LSTM peepholes; GRU's linear_before_reset;
// clip; sequence_lens (forward only: steps past a sequence's end keep its state and output 0);
// the activations Sigmoid, Tanh and Relu.
#include <algorithm>

#include "absl/strings/str_cat.h"
#include "frontend/onnx/ops.h"

namespace kiln::onnx {
namespace {

enum class Cell { kRnn, kGru, kLstm };

constexpr int64_t kMaxSteps = 1024;

Tensor activate(NodeContext& c, const std::string& name, const Tensor& x) {
  if (name == "Sigmoid") return sigmoid(x);
  if (name == "Tanh") return tanh(x);
  if (name == "Relu") return relu(x);
  c.unsupported(absl::StrCat("activation '", name, "' (kiln supports Sigmoid, Tanh and Relu here)"));
}

// Rows [k*h, (k+1)*h) of the last axis.
Tensor part(const Tensor& t, int64_t k, int64_t h) { return slice(t, -1, k * h, (k + 1) * h); }

void recurrent(NodeContext& c, Cell cell) {
  const int64_t gates = cell == Cell::kRnn ? 1 : cell == Cell::kGru ? 3 : 4;
  const size_t acts_per_dir = cell == Cell::kRnn ? 1 : cell == Cell::kGru ? 2 : 3;
  if (!is_float(c.dtype(0))) c.unsupported(absl::StrCat("input dtype ", dtype_name(c.dtype(0))));
  if (c.has_attr("activation_alpha") || c.has_attr("activation_beta")) c.unsupported("activation_alpha / activation_beta");
  if (cell == Cell::kLstm && c.attr_int("input_forget", 0)) c.unsupported("input_forget = 1");
  bool batch_first = c.attr_int("layout", 0) != 0;
  Tensor X = c.in(0);
  if (X.ndim() != 3) c.invalid("X must be 3-D");
  if (batch_first) X = permute(X, {1, 0, 2});
  int64_t seq = X.shape()[0], batch = X.shape()[1];
  if (seq > kMaxSteps) c.unsupported(absl::StrCat("a sequence of ", seq, " steps (recurrences are unrolled at import, up to ", kMaxSteps, ")"));
  Tensor W = c.in(1), R = c.in(2);
  if (R.ndim() != 3 || W.ndim() != 3) c.invalid("W and R must be 3-D");
  int64_t H = R.shape()[2];
  if (c.has_attr("hidden_size") && c.attr_int("hidden_size", 0) != H) c.invalid("hidden_size does not match R");
  std::string direction = c.attr_string("direction", "forward");
  int64_t dirs = direction == "bidirectional" ? 2 : 1;
  if (direction != "forward" && direction != "reverse" && direction != "bidirectional") c.invalid(absl::StrCat("direction '", direction, "'"));
  if (W.shape() != Shape{dirs, gates * H, X.shape()[2]} || R.shape() != Shape{dirs, gates * H, H})
    c.invalid(absl::StrCat("W ", shape_str(W.shape()), " or R ", shape_str(R.shape()), " does not match ", dirs, " direction(s), hidden size ", H));
  DType dt = X.dtype();
  Tensor B = c.has_input(3) ? c.in(3) : zeros({dirs, 2 * gates * H}, dt, X.device());
  Tensor mask;  // [seq, batch, 1]: step t is inside sequence b
  if (c.has_input(4)) {
    if (direction != "forward") c.unsupported("sequence_lens with a reverse or bidirectional direction");
    Tensor lens = cast(c.in(4), DType::kInt64).reshape({1, batch, 1});
    mask = less(reshape(arange(seq, DType::kInt64, X.device()), {seq, 1, 1}), lens);
  }
  auto initial = [&](size_t i) {
    if (!c.has_input(i)) return zeros({dirs, batch, H}, dt, X.device());
    Tensor t = c.in(i);
    return batch_first ? permute(t, {1, 0, 2}) : t;
  };
  Tensor h0 = initial(5);
  Tensor c0 = cell == Cell::kLstm ? initial(6) : Tensor();
  Tensor P = cell == Cell::kLstm && c.has_input(7) ? c.in(7) : Tensor();
  std::vector<std::string> acts = c.has_attr("activations") ? std::vector<std::string>() : std::vector<std::string>();
  if (const auto it = c.node().attributes.find("activations"); it != c.node().attributes.end()) acts = it->second.strings;
  if (acts.empty())
    for (int64_t d = 0; d < dirs; ++d) {
      if (cell == Cell::kRnn) acts.push_back("Tanh");
      else if (cell == Cell::kGru) acts.insert(acts.end(), {"Sigmoid", "Tanh"});
      else acts.insert(acts.end(), {"Sigmoid", "Tanh", "Tanh"});
    }
  if (acts.size() != acts_per_dir * size_t(dirs)) c.invalid(absl::StrCat("activations needs ", acts_per_dir * size_t(dirs), " names"));
  bool clip = c.has_attr("clip");
  double limit = c.attr_float("clip", 0.0);
  auto clipped = [&](const Tensor& t) { return clip ? clamp(t, -limit, limit) : t; };
  bool lbr = cell == Cell::kGru && c.attr_int("linear_before_reset", 0) != 0;

  std::vector<Tensor> ys, hs, cs;
  for (int64_t d = 0; d < dirs; ++d) {
    bool reverse = direction == "reverse" || d == 1;
    auto act = [&](size_t j, const Tensor& x) { return activate(c, acts[size_t(d) * acts_per_dir + j], clipped(x)); };
    Tensor Wd = squeeze(slice(W, 0, d, d + 1), 0).t(), Rd = squeeze(slice(R, 0, d, d + 1), 0).t();  // [in, G*H], [H, G*H]
    Tensor Bd = squeeze(slice(B, 0, d, d + 1), 0);
    Tensor Wb = slice(Bd, 0, 0, gates * H), Rb = slice(Bd, 0, gates * H, 2 * gates * H);
    Tensor XW = matmul(X, Wd) + Wb;  // every step's input projection, [seq, batch, G*H]
    Tensor h = squeeze(slice(h0, 0, d, d + 1), 0), cst = cell == Cell::kLstm ? squeeze(slice(c0, 0, d, d + 1), 0) : Tensor();
    Tensor Pd = P.defined() ? squeeze(slice(P, 0, d, d + 1), 0) : Tensor();
    std::vector<Tensor> outs(static_cast<size_t>(seq));
    for (int64_t k = 0; k < seq; ++k) {
      int64_t t = reverse ? seq - 1 - k : k;
      Tensor x = squeeze(slice(XW, 0, t, t + 1), 0);  // [batch, G*H]
      Tensor hr = matmul(h, Rd);                        // [batch, G*H], without Rb
      Tensor h_new, c_new;
      if (cell == Cell::kRnn) {
        h_new = act(0, x + hr + Rb);
      } else if (cell == Cell::kGru) {
        // gates z, r, h
        Tensor z = act(0, part(x, 0, H) + part(hr, 0, H) + part(Rb, 0, H));
        Tensor r = act(0, part(x, 1, H) + part(hr, 1, H) + part(Rb, 1, H));
        Tensor Rh = part(Rd, 2, H);
        Tensor cand = lbr ? act(1, part(x, 2, H) + r * (part(hr, 2, H) + part(Rb, 2, H)))
                          : act(1, part(x, 2, H) + matmul(r * h, Rh) + part(Rb, 2, H));
        h_new = (1.0 - z) * cand + z * h;
      } else {
        // gates i, o, f, c; peepholes i, o, f
        Tensor g = x + hr + Rb;
        Tensor gi = part(g, 0, H), go = part(g, 1, H), gf = part(g, 2, H), gc = part(g, 3, H);
        if (Pd.defined()) {
          gi = gi + part(Pd, 0, H) * cst;
          gf = gf + part(Pd, 2, H) * cst;
        }
        Tensor i = act(0, gi), f = act(0, gf), cc = act(1, gc);
        c_new = f * cst + i * cc;
        if (Pd.defined()) go = go + part(Pd, 1, H) * c_new;
        h_new = act(0, go) * act(2, c_new);
      }
      Tensor y = h_new;
      if (mask.defined()) {
        Tensor m = squeeze(slice(mask, 0, t, t + 1), 0);  // [batch, 1]
        y = where(m, h_new, zeros({}, dt, X.device()));
        h_new = where(m, h_new, h);
        if (c_new.defined()) c_new = where(m, c_new, cst);
      }
      h = cast(h_new, dt);
      if (c_new.defined()) cst = cast(c_new, dt);
      outs[size_t(t)] = cast(y, dt);
    }
    ys.push_back(stack(outs, 0));  // [seq, batch, H]
    hs.push_back(h);
    if (cst.defined()) cs.push_back(cst);
  }
  Tensor Y = stack(ys, 1), Yh = stack(hs, 0);  // [seq, dirs, batch, H], [dirs, batch, H]
  Tensor Yc = cs.empty() ? Tensor() : stack(cs, 0);
  if (batch_first) {
    Y = permute(Y, {2, 0, 1, 3});
    Yh = permute(Yh, {1, 0, 2});
    if (Yc.defined()) Yc = permute(Yc, {1, 0, 2});
  }
  c.set(0, Y);
  c.set(1, Yh);
  if (Yc.defined()) c.set(2, Yc);
}

const std::vector<std::string> kAttrs = {"activation_alpha", "activation_beta", "activations", "clip", "direction", "hidden_size", "layout"};

std::vector<std::string> with(std::vector<std::string> extra) {
  std::vector<std::string> a = kAttrs;
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

}  // namespace

void register_rnn_ops(OpTable& t) {
  t["RNN"] = {[](NodeContext& c) { recurrent(c, Cell::kRnn); }, kAttrs, {}};
  t["GRU"] = {[](NodeContext& c) { recurrent(c, Cell::kGru); }, with({"linear_before_reset"}), {}};
  t["LSTM"] = {[](NodeContext& c) { recurrent(c, Cell::kLstm); }, with({"input_forget"}), {}};
}

}  // namespace kiln::onnx

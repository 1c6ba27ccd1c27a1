// kiln on a GPU: BENCH.md's W1-W6 (and W7's first-call times), written as JSONL records in the
// format of ../shared/bench-anchors (sec "C": the anchors' summarize.py prints kiln's rows next to
// torch and jax), plus kiln's host overhead per cached realize (sec "KH") and W7 (sec "KW7").
//
//   anchor_bench [--device cuda] [--results results.jsonl] [--only W1,W6,H]
//   anchor_bench --first-call W1|W3 --var cold|warm [--device cuda] [--results results.jsonl]
//   anchor_bench --w11 [--device cuda] [--results results.jsonl]   (in a fresh process)
//   anchor_bench --w10 [--scale 32] [--device cuda] [--results results.jsonl]
//   anchor_bench --segments short|skewed|long [--width R] [--device cuda] [--results results.jsonl]
//
// Timing, per workload and path ("jit": kiln::Jit replay; "realize": record + realize each call):
//   first_call_s  first call including compilation, then a device sync
//   ms_wall       pipelined wall time per call: n calls back to back, one sync; median of 5 batches
//   ms            GPU time per call over the same batches (CUDA events on kiln's stream)
//   host_us       host time spent inside each call (what the application thread pays)
// GB/s uses the minimal traffic of BENCH.md; rel_err = |out - ref| / |ref| against a float64
// reference computed on the host from the same inputs (W5: on 8 sampled rows).
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "bench/gpu/gpu_timer.h"
#include "bench/workloads.h"
#include "kiln/kiln.h"
#include "runtime/device.h"

namespace kiln::bench {
namespace {

using V = std::vector<Tensor>;
using Clock = std::chrono::steady_clock;

double since_ms(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

// Deterministic inputs in [lo, hi), never all zeros.
std::vector<float> uniform(size_t n, uint64_t seed, float lo, float hi) {
  std::vector<float> v(n);
  uint64_t s = seed * 0x9e3779b97f4a7c15ull + 1;
  for (size_t i = 0; i < n; ++i) {
    s ^= s << 13;
    s ^= s >> 7;
    s ^= s << 17;
    v[i] = lo + (hi - lo) * float(double(s >> 11) * (1.0 / 9007199254740992.0));
  }
  return v;
}

// f32 rounded to nearest even at `drop` fewer mantissa bits, as the device stores it: 16 for
// bfloat16, 13 for float16 (its normal range: the values used here).
float round_bits(float f, int drop) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += ((1u << (drop - 1)) - 1u) + ((u >> drop) & 1u);
  u &= ~((1u << drop) - 1u);
  std::memcpy(&f, &u, 4);
  return f;
}
float bf16_round(float f) { return round_bits(f, 16); }
float half_round(float f) { return round_bits(f, 13); }

double rel_err(const std::vector<float>& out, const std::vector<double>& ref) {
  if (out.size() != ref.size()) return INFINITY;
  double num = 0, den = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    num += (double(out[i]) - ref[i]) * (double(out[i]) - ref[i]);
    den += ref[i] * ref[i];
  }
  return std::sqrt(num / std::max(den, 1e-300));
}

struct Workload {
  std::string id;
  V inputs;
  Jit::Fn fn;
  double bytes = 0;   // minimal traffic
  double flops = 0;   // W5
  std::function<double(const Tensor& out)> check;  // rel err against the float64 reference
};

Tensor upload(const std::vector<float>& v, Shape s, const Device& d, DType t = float32) {
  return from_vector(v, std::move(s), t, d).realize();
}

Workload make(const std::string& id, const Device& d) {
  Workload w;
  w.id = id;
  if (id == "W1") {
    const size_t n = size_t(1) << 24;
    auto x = std::make_shared<std::vector<float>>(uniform(n, 1, -2, 2));
    auto a = std::make_shared<std::vector<float>>(uniform(n, 2, -2, 2));
    auto b = std::make_shared<std::vector<float>>(uniform(n, 3, -2, 2));
    w.inputs = {upload(*x, {int64_t(n)}, d), upload(*a, {int64_t(n)}, d), upload(*b, {int64_t(n)}, d)};
    w.fn = [](const V& in) { return V{w1(in[0], in[1], in[2])}; };
    w.bytes = 4.0 * 4 * double(n);
    w.check = [x, a, b](const Tensor& out) {
      std::vector<double> ref(x->size());
      for (size_t i = 0; i < ref.size(); ++i) {
        double X = (*x)[i], A = (*a)[i], B = (*b)[i];
        ref[i] = std::tanh(X * A + B) / (1 + std::exp(-X)) + std::exp(-std::fabs(B)) * 0.5 - X * X;
      }
      return rel_err(out.to_vector<float>(), ref);
    };
  } else if (id == "W2" || id == "W3") {
    const int64_t rows = id == "W2" ? 8192 : 16384, cols = id == "W2" ? 8192 : 4096;
    auto x = std::make_shared<std::vector<float>>(uniform(size_t(rows * cols), 4, -3, 3));
    auto wt = std::make_shared<std::vector<float>>(uniform(size_t(cols), 6, 0.5f, 1.5f));
    auto bs = std::make_shared<std::vector<float>>(uniform(size_t(cols), 7, -1, 1));
    w.inputs = {upload(*x, {rows, cols}, d)};
    if (id == "W3") w.inputs.push_back(upload(*wt, {cols}, d)), w.inputs.push_back(upload(*bs, {cols}, d));
    if (id == "W2") w.fn = [](const V& in) { return V{w2(in[0])}; };
    else w.fn = [](const V& in) { return V{w3(in[0], in[1], in[2])}; };
    w.bytes = 2.0 * 4 * double(rows * cols);
    const bool softmax = id == "W2";
    w.check = [x, wt, bs, rows, cols, softmax](const Tensor& out) {
      std::vector<double> ref(size_t(rows * cols));
      for (int64_t r = 0; r < rows; ++r) {
        const float* row = x->data() + r * cols;
        double* o = ref.data() + r * cols;
        if (softmax) {
          double m = -INFINITY, s = 0;
          for (int64_t c = 0; c < cols; ++c) m = std::max(m, double(row[c]));
          for (int64_t c = 0; c < cols; ++c) s += std::exp(row[c] - m);
          for (int64_t c = 0; c < cols; ++c) o[c] = std::exp(row[c] - m) / s;
        } else {
          double mean = 0, var = 0;
          for (int64_t c = 0; c < cols; ++c) mean += row[c];
          mean /= double(cols);
          for (int64_t c = 0; c < cols; ++c) var += (row[c] - mean) * (row[c] - mean);
          var /= double(cols);
          const double inv = 1 / std::sqrt(var + 1e-5);
          for (int64_t c = 0; c < cols; ++c) o[c] = (row[c] - mean) * inv * (*wt)[size_t(c)] + (*bs)[size_t(c)];
        }
      }
      return rel_err(out.to_vector<float>(), ref);
    };
  } else if (id == "W4a") {
    const size_t n = size_t(1) << 26;
    auto x = std::make_shared<std::vector<float>>(uniform(n, 8, 0, 1));
    w.inputs = {upload(*x, {int64_t(n)}, d)};
    w.fn = [](const V& in) { return V{w4a(in[0])}; };
    w.bytes = 4.0 * double(n);
    w.check = [x](const Tensor& out) {
      double s = 0;
      for (float v : *x) s += v;
      return rel_err(out.to_vector<float>(), {s});
    };
  } else if (id == "W4b") {
    const int64_t rows = 16384, cols = 4096;
    auto x = std::make_shared<std::vector<float>>(uniform(size_t(rows * cols), 9, -1, 1));
    w.inputs = {upload(*x, {rows, cols}, d)};
    w.fn = [](const V& in) { return V{w4b(in[0])}; };
    w.bytes = 4.0 * double(rows * cols) + 4.0 * double(cols);
    w.check = [x, rows, cols](const Tensor& out) {
      std::vector<double> ref(size_t(cols), 0.0);
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) ref[size_t(c)] += (*x)[size_t(r * cols + c)];
      for (double& v : ref) v /= double(rows);
      return rel_err(out.to_vector<float>(), ref);
    };
  } else if (id == "W5" || id == "W5h") {
    // W5h: the same block in float16 (Vulkan's cooperative matrices take f16 only).
    const int64_t n = 4096;
    const DType wdt = id == "W5h" ? float16 : bfloat16;
    auto make_bf16 = [wdt](std::vector<float> v) {
      for (float& f : v) f = wdt == float16 ? half_round(f) : bf16_round(f);
      return std::make_shared<std::vector<float>>(std::move(v));
    };
    const float s = 1.0f / 64.0f;  // keeps activations O(1) through two 4096-wide products
    auto x = make_bf16(uniform(size_t(n * n), 10, -1, 1));
    auto W1 = make_bf16(uniform(size_t(n * n), 11, -s, s)), W2 = make_bf16(uniform(size_t(n * n), 13, -s, s));
    auto b1 = make_bf16(uniform(size_t(n), 12, -0.5f, 0.5f)), b2 = make_bf16(uniform(size_t(n), 14, -0.5f, 0.5f));
    w.inputs = {upload(*x, {n, n}, d, wdt), upload(*W1, {n, n}, d, wdt), upload(*b1, {n}, d, wdt),
                upload(*W2, {n, n}, d, wdt), upload(*b2, {n}, d, wdt)};
    w.fn = [](const V& in) { return V{w5(in[0], in[1], in[2], in[3], in[4])}; };
    w.flops = 2.0 * 2.0 * double(n) * double(n) * double(n);
    w.bytes = 2.0 * double(4 * n * n);
    w.check = [x, W1, b1, W2, b2, n](const Tensor& out) {
      std::vector<float> got = out.to_vector<float>();
      std::vector<float> sampled;
      std::vector<double> ref;
      for (int64_t r = 0; r < n; r += n / 8) {
        std::vector<double> h(size_t(n), 0.0);
        for (int64_t k = 0; k < n; ++k) {
          const double xv = (*x)[size_t(r * n + k)];
          const float* wrow = W1->data() + k * n;
          for (int64_t c = 0; c < n; ++c) h[size_t(c)] += xv * wrow[c];
        }
        for (int64_t c = 0; c < n; ++c) {
          double v = h[size_t(c)] + (*b1)[size_t(c)];
          h[size_t(c)] = 0.5 * v * (1 + std::tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
        }
        std::vector<double> y(size_t(n), 0.0);
        for (int64_t k = 0; k < n; ++k) {
          const float* wrow = W2->data() + k * n;
          for (int64_t c = 0; c < n; ++c) y[size_t(c)] += h[size_t(k)] * wrow[c];
        }
        for (int64_t c = 0; c < n; ++c) {
          ref.push_back(y[size_t(c)] + (*b2)[size_t(c)]);
          sampled.push_back(got[size_t(r * n + c)]);
        }
      }
      return rel_err(sampled, ref);
    };
  } else if (id == "W9" || id == "W9n") {
    // Causal attention, bf16, batch 8, 16 heads, seq 2048, head dim 128 (causal FLOPs: half);
    // W9n: the same without the mask (not a BENCH.md workload: it tells the mask's cost apart).
    const int64_t B = 8, H = 16, S = 2048, D = 128;
    const bool causal = id == "W9";
    auto make_bf16 = [](std::vector<float> v) {
      for (float& f : v) f = bf16_round(f);
      return std::make_shared<std::vector<float>>(std::move(v));
    };
    const size_t n = size_t(B * H * S * D);
    auto q = make_bf16(uniform(n, 30, -1, 1)), k = make_bf16(uniform(n, 31, -1, 1)), v = make_bf16(uniform(n, 32, -1, 1));
    w.inputs = {upload(*q, {B, H, S, D}, d, bfloat16), upload(*k, {B, H, S, D}, d, bfloat16),
                upload(*v, {B, H, S, D}, d, bfloat16)};
    w.fn = [causal](const V& in) {
      AttentionOptions o;
      o.causal = causal;
      return V{scaled_dot_product_attention(in[0], in[1], in[2], o)};
    };
    w.flops = 4.0 * double(B * H) * double(S) * double(S) * double(D) / (causal ? 2 : 1);
    w.bytes = 2.0 * 4 * double(n);
    w.check = [q, k, v, S, D, causal](const Tensor& out) {
      std::vector<float> got = out.to_vector<float>();
      std::vector<float> sampled;
      std::vector<double> ref;
      // Rows of a few (batch, head) pairs, first, middle and last positions.
      for (int64_t bh : {int64_t(0), int64_t(77), int64_t(127)})
        for (int64_t i : {int64_t(0), int64_t(1), S / 2 + 3, S - 1}) {
          const float* qi = q->data() + (bh * S + i) * D;
          const int64_t last = causal ? i : S - 1;
          std::vector<double> s(size_t(last + 1));
          double mx = -INFINITY;
          for (int64_t j = 0; j <= last; ++j) {
            const float* kj = k->data() + (bh * S + j) * D;
            double dot = 0;
            for (int64_t x = 0; x < D; ++x) dot += double(qi[x]) * kj[x];
            s[size_t(j)] = dot / std::sqrt(double(D));
            mx = std::max(mx, s[size_t(j)]);
          }
          double z = 0;
          for (double& e : s) z += (e = std::exp(e - mx));
          for (int64_t x = 0; x < D; ++x) {
            double acc = 0;
            for (int64_t j = 0; j <= last; ++j) acc += s[size_t(j)] * (*v)[size_t((bh * S + j) * D + x)];
            ref.push_back(acc / z);
            sampled.push_back(got[size_t((bh * S + i) * D + x)]);
          }
        }
      return rel_err(sampled, ref);
    };
  } else if (id == "W8") {
    // A causal transformer block, bf16: batch 8, seq 2048, d_model 2048, 16 heads of 128.
    const int64_t B = 8, S = 2048, dm = 2048;
    auto make_bf16 = [](std::vector<float> v) {
      for (float& f : v) f = bf16_round(f);
      return v;
    };
    const float s = 1.0f / 45.0f;  // ~1/sqrt(d): activations stay O(1)
    w.inputs = {upload(make_bf16(uniform(size_t(B * S * dm), 40, -1, 1)), {B, S, dm}, d, bfloat16),
                upload(make_bf16(uniform(size_t(dm), 41, 0.5f, 1.5f)), {dm}, d, bfloat16),
                upload(make_bf16(uniform(size_t(dm), 42, -0.1f, 0.1f)), {dm}, d, bfloat16),
                upload(make_bf16(uniform(size_t(dm * 3 * dm), 43, -s, s)), {dm, 3 * dm}, d, bfloat16),
                upload(make_bf16(uniform(size_t(dm * dm), 44, -s, s)), {dm, dm}, d, bfloat16),
                upload(make_bf16(uniform(size_t(dm), 45, 0.5f, 1.5f)), {dm}, d, bfloat16),
                upload(make_bf16(uniform(size_t(dm), 46, -0.1f, 0.1f)), {dm}, d, bfloat16),
                upload(make_bf16(uniform(size_t(dm * 4 * dm), 47, -s, s)), {dm, 4 * dm}, d, bfloat16),
                upload(make_bf16(uniform(size_t(4 * dm * dm), 48, -s / 2, s / 2)), {4 * dm, dm}, d, bfloat16)};
    w.fn = [](const V& in) { return V{w8(in[0], in[1], in[2], in[3], in[4], in[5], in[6], in[7], in[8])}; };
    w.flops = double(B * S) * 24.0 * double(dm) * double(dm) + 2.0 * double(B) * double(S) * double(S) * double(dm);
    w.bytes = 2.0 * double(2 * B * S * dm + 12 * dm * dm);
    // No host reference (a full block costs minutes on the host): the value is checked by the
    // op and fusion suites; here only that it is finite.
    w.check = [](const Tensor& out) {
      for (float f : out.to_vector<float>())
        if (!std::isfinite(f)) return double(INFINITY);
      return 0.0;
    };
  } else if (id.rfind("MM", 0) == 0 || id.rfind("BMM", 0) == 0 || id.rfind("FMM", 0) == 0 || id.rfind("HMM", 0) == 0 ||
             id.rfind("HBMM", 0) == 0) {
    // The bf16 matmul sweep (issue 10), f32 accumulation: MM<n> is [n x n] @ [n x n], MM<m>x<n>x<k>
    // is [m x k] @ [k x n], BMM<b>x<m>x<n>x<k> the same batched. FMM<...>: float32 operands, at
    // the process's matmul precision (KILN_MATMUL_PRECISION=tf32 for tensor cores). FMMT<...>:
    // the same with the rhs stored [n x k] and transposed (x @ W^T, a linear layer's layout).
    // HMM<...>: float16 operands.
    const bool f32 = id[0] == 'F', f16 = id[0] == 'H', rhs_t = id.rfind("FMMT", 0) == 0;
    const std::string shape_id = rhs_t ? "MM" + id.substr(4) : f32 || f16 ? id.substr(1) : id;
    const bool batched = shape_id[0] == 'B';
    std::vector<int64_t> dims;
    for (absl::string_view p : absl::StrSplit(shape_id.substr(batched ? 3 : 2), 'x')) dims.push_back(std::stoll(std::string(p)));
    if (dims.size() == 1) dims = {dims[0], dims[0], dims[0]};
    if (!batched) dims.insert(dims.begin(), 1);
    if (dims.size() != 4) throw std::invalid_argument("bad matmul workload " + id);
    const int64_t bs = dims[0], m = dims[1], n = dims[2], kk = dims[3];
    auto make_bf16 = [f32, f16](std::vector<float> v) {
      if (!f32)
        for (float& f : v) f = f16 ? half_round(f) : bf16_round(f);
      return std::make_shared<std::vector<float>>(std::move(v));
    };
    auto a = make_bf16(uniform(size_t(bs * m * kk), 20, -1, 1)), b = make_bf16(uniform(size_t(bs * kk * n), 21, -1, 1));
    std::vector<int64_t> as = {m, kk}, bsh = rhs_t ? std::vector<int64_t>{n, kk} : std::vector<int64_t>{kk, n};
    if (batched) {
      as.insert(as.begin(), bs);
      bsh.insert(bsh.begin(), bs);
    }
    const DType dt = f32 ? float32 : f16 ? float16 : bfloat16;
    w.inputs = {upload(*a, as, d, dt), upload(*b, bsh, d, dt)};
    w.fn = [rhs_t](const V& in) { return V{matmul(in[0], rhs_t ? in[1].transpose(-1, -2) : in[1])}; };
    w.flops = 2.0 * double(bs) * double(m) * double(n) * double(kk);
    w.bytes = double(dtype_size(dt)) * double(bs) * double(m * kk + kk * n + m * n);
    w.check = [a, b, bs, m, n, kk, rhs_t](const Tensor& out) {
      std::vector<float> got = out.to_vector<float>();
      std::vector<float> sampled;
      std::vector<double> ref;
      for (int64_t bi = 0; bi < bs; bi += std::max<int64_t>(1, bs / 2))
        for (int64_t r = 0; r < m; r += std::max<int64_t>(1, m / 4)) {
          std::vector<double> y(size_t(n), 0.0);
          for (int64_t k = 0; k < kk; ++k) {
            const double av = (*a)[size_t((bi * m + r) * kk + k)];
            const float* bb = b->data() + bi * kk * n;
            for (int64_t c = 0; c < n; ++c) y[size_t(c)] += av * (rhs_t ? bb[c * kk + k] : bb[k * n + c]);
          }
          for (int64_t c = 0; c < n; ++c) {
            ref.push_back(y[size_t(c)]);
            sampled.push_back(got[size_t((bi * m + r) * n + c)]);
          }
        }
      return rel_err(sampled, ref);
    };
  } else if (id == "W6" || id == "H") {
    const int64_t n = 4096;
    auto x = std::make_shared<std::vector<float>>(uniform(size_t(n), 15, -1, 1));
    w.inputs = {upload(*x, {n}, d)};
    const bool chain = id == "W6";
    if (chain) w.fn = [](const V& in) { return V{w6(in[0])}; };
    else w.fn = [](const V& in) { return V{in[0] + 1.0}; };  // H: the smallest graph: host overhead
    w.bytes = 2.0 * 4 * double(n);
    w.check = [x, chain](const Tensor& out) {
      std::vector<double> ref(x->begin(), x->end());
      for (double& v : ref) {
        if (!chain) v += 1;
        for (int i = 0; chain && i < 64; ++i) v = i % 2 == 0 ? v * 1.0001 + 0.001 : std::tanh(v);
      }
      return rel_err(out.to_vector<float>(), ref);
    };
  }
  return w;
}

struct Timing {
  double first_call_s = 0, ms_wall = 0, ms_gpu = -1, host_us = 0, ms_sync = 0, kernels_per_call = 0;
  int n = 0;
};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

Timing time_calls(const std::function<void()>& call, const Device& dev, GpuTimer* timer, bool latency) {
  auto sync = [&] { dev.synchronize(); };
  Timing t;
  auto t0 = Clock::now();
  call();
  sync();
  t.first_call_s = since_ms(t0) / 1e3;
  double one = INFINITY;
  for (int i = 0; i < 3; ++i) {
    t0 = Clock::now();
    call();
    sync();
    one = std::min(one, since_ms(t0));
  }
  t.n = int(std::clamp(std::ceil(60.0 / std::max(one, 1e-3)), 3.0, 5000.0));
  std::vector<double> wall, gpu, host;
  const int64_t launched0 = stats().kernels_launched;
  for (int b = 0; b < 5; ++b) {
    double h = 0;
    if (timer) timer->start();
    t0 = Clock::now();
    for (int i = 0; i < t.n; ++i) {
      auto c0 = Clock::now();
      call();
      h += since_ms(c0);
    }
    if (timer) gpu.push_back(timer->stop_ms() / t.n);
    else sync();
    wall.push_back(since_ms(t0) / t.n);
    host.push_back(h * 1e3 / t.n);
  }
  t.kernels_per_call = double(stats().kernels_launched - launched0) / (5.0 * t.n);
  t.ms_wall = median(wall);
  t.host_us = median(host);
  if (timer) t.ms_gpu = median(gpu);
  if (latency) {
    std::vector<double> lat;
    for (int i = 0; i < 300; ++i) {
      t0 = Clock::now();
      call();
      sync();
      lat.push_back(since_ms(t0));
    }
    t.ms_sync = median(lat);
  }
  return t;
}

struct Output {
  FILE* jsonl = nullptr;
  void emit(const std::string& json) {
    std::printf("RESULT %s\n", json.c_str());
    if (jsonl) {
      std::fprintf(jsonl, "%s\n", json.c_str());
      std::fflush(jsonl);
    }
  }
};

std::string num(double v) { return std::isfinite(v) ? absl::StrFormat("%.6g", v) : "null"; }

void run_workload(const std::string& id, const Device& dev, GpuTimer* timer, Output* out) {
  Workload w = make(id, dev);
  Jit jit(w.fn);
  for (const char* path : {"jit", "realize"}) {
    const bool use_jit = std::strcmp(path, "jit") == 0;
    std::function<void()> call = [&] {
      V y = use_jit ? jit(w.inputs) : w.fn(w.inputs);
      if (!use_jit) realize(y);
    };
    const std::string var = absl::StrCat(dev.name(), " ", path);
    try {
      const bool launch_bound = id == "W6" || id == "H";
      Timing t = time_calls(call, dev, timer, launch_bound);
      V y = use_jit ? jit(w.inputs) : w.fn(w.inputs);
      const double err = w.check(y[0]);
      // Launch-bound work is timed by the pipelined wall (as the anchors do for W6).
      const double ms = launch_bound || t.ms_gpu < 0 ? t.ms_wall : t.ms_gpu;
      std::string rec = absl::StrFormat(
          R"({"sec": "%s", "wl": "%s", "fw": "kiln", "var": "%s", "ok": true, "ms": %s, "ms_wall": %s, "ms_gpu": %s, )"
          R"("GBps": %s, "TFLOPs": %s, "rel_err": %s, "first_call_s": %s, "host_us_per_call": %s, )"
          R"("kernels_per_call": %s, "batch": %d, "ms_sync_latency": %s, "ms_events": %s, "device": "%s"})",
          id == "H" ? "KH" : "C", id, var, num(ms), num(t.ms_wall), num(t.ms_gpu < 0 ? NAN : t.ms_gpu), num(w.bytes / (ms * 1e6)),
          num(w.flops > 0 ? w.flops / (ms * 1e9) : NAN), num(err), num(t.first_call_s), num(t.host_us),
          num(t.kernels_per_call), t.n, num(launch_bound ? t.ms_sync : NAN), num(t.ms_gpu), dev.description());
      out->emit(rec);
      std::printf("%-4s %-14s %9.4f ms  wall %9.4f ms  gpu %9.4f ms  host %7.2f us/call  %6.0f GB/s  %s  rel err %.1e  "
                  "first call %.3f s  %.1f kernels/call\n",
                  id.c_str(), var.c_str(), ms, t.ms_wall, t.ms_gpu, t.host_us, w.bytes / (ms * 1e6),
                  w.flops > 0 ? absl::StrFormat("%.0f TFLOP/s", w.flops / (ms * 1e9)).c_str() : "", err,
                  t.first_call_s, t.kernels_per_call);
    } catch (const Error& e) {
      out->emit(absl::StrFormat(R"({"sec": "C", "wl": "%s", "fw": "kiln", "var": "%s", "ok": false, "error": "%s"})", id,
                                var, absl::StrReplaceAll(e.what(), {{"\"", "'"}, {"\n", " "}, {"\\", "/"}})));
      std::printf("%-4s %-14s FAILED: %s\n", id.c_str(), var.c_str(), e.what());
    }
    std::fflush(stdout);
  }
}

// W7: the first realize of a workload in this (fresh) process; `var` says whether the disk cache
// was empty (cold) or filled by an earlier process (warm).
int first_call(const std::string& id, const std::string& var, const Device& dev, Output* out) {
  Workload w = make(id, dev);
  dev.synchronize();
  const Stats before = stats();
  auto t0 = Clock::now();
  V y = w.fn(w.inputs);
  realize(y);
  dev.synchronize();
  const double first = since_ms(t0) / 1e3;
  const Stats after = stats();
  const double err = w.check(y[0]);
  out->emit(absl::StrFormat(
      R"({"sec": "KW7", "wl": "%s", "fw": "kiln", "var": "%s", "first_call_s": %s, "kernels_compiled": %d, )"
      R"("kernel_disk_cache_hits": %d, "rel_err": %s, "device": "%s"})",
      id, var, num(first), after.kernels_compiled - before.kernels_compiled,
      after.kernel_disk_cache_hits - before.kernel_disk_cache_hits, num(err), dev.description()));
  std::printf("W7 %s %s: first realize %.1f ms, %lld kernels compiled, %lld from the disk cache, rel err %.1e\n",
              id.c_str(), var.c_str(), first * 1e3, (long long)(after.kernels_compiled - before.kernels_compiled),
              (long long)(after.kernel_disk_cache_hits - before.kernel_disk_cache_hits), err);
  return 0;
}

// W11: the W8-style MLP block (d 2048, 4x hidden, bf16: y = x + gelu_tanh(layer_norm(x) @ W1 +
// b1) @ W2 + b2) called at batch sizes 1, 7, 64 and 1000 in sequence in this fresh process: for
// each new size the time to its first result (recording, compiles, run, device sync), the kernels
// it compiled, then the steady time of one more call (median of 20). Frameworks: w11_anchor.py.
// With `symbolic` (--w11-dim, fw "kiln-dim"): the block is a kiln::Jit whose batch is a
// kiln::Dim, so the sizes after the first share its code.
int w11(const Device& dev, Output* out, bool symbolic) {
  const int64_t D = 2048, Hd = 4 * D;
  auto bf = [](std::vector<float> v) {
    for (float& f : v) f = bf16_round(f);
    return v;
  };
  const Tensor W1 = upload(bf(uniform(size_t(D * Hd), 60, -1.0f / 64, 1.0f / 64)), {D, Hd}, dev, bfloat16);
  const Tensor W2 = upload(bf(uniform(size_t(Hd * D), 61, -1.0f / 128, 1.0f / 128)), {Hd, D}, dev, bfloat16);
  const Tensor b1 = upload(bf(uniform(size_t(Hd), 62, -0.05f, 0.05f)), {Hd}, dev, bfloat16);
  const Tensor b2 = upload(bf(uniform(size_t(D), 63, -0.05f, 0.05f)), {D}, dev, bfloat16);
  const Tensor g = upload(std::vector<float>(size_t(D), 1.0f), {D}, dev, bfloat16);
  const Tensor beta = upload(std::vector<float>(size_t(D), 0.0f), {D}, dev, bfloat16);
  auto block_of = [&](const Tensor& x) {
    return x + matmul(gelu(matmul(layer_norm(x, g, beta, 1e-5), W1) + b1, true), W2) + b2;
  };
  Jit jit([&](const std::vector<Tensor>& in) { return std::vector<Tensor>{block_of(in[0])}; }, {{Dim("batch"), D}});
  auto block = [&](const Tensor& x) { return symbolic ? jit({x})[0] : block_of(x); };
  const char* fw = symbolic ? "kiln-dim" : "kiln";
  dev.synchronize();
  for (int64_t size : {1, 7, 64, 1000}) {
    const std::vector<float> xv = bf(uniform(size_t(size * D), 64 + uint64_t(size), -1, 1));
    const Tensor x = upload(xv, {size, D}, dev, bfloat16);
    dev.synchronize();
    const Stats before = stats();
    auto t0 = Clock::now();
    Tensor y = block(x).realize();
    dev.synchronize();
    const double first = since_ms(t0);
    const int64_t compiled = stats().kernels_compiled - before.kernels_compiled;
    std::vector<double> steady;
    for (int i = 0; i < 20; ++i) {
      t0 = Clock::now();
      y = block(x).realize();
      dev.synchronize();
      steady.push_back(since_ms(t0));
    }
    out->emit(absl::StrFormat(
        R"({"sec": "W11", "wl": "W11", "fw": "%s", "batch": %d, "first_ms": %s, "steady_ms": %s, )"
        R"("kernels_compiled": %d, "device": "%s"})",
        fw, size, num(first), num(median(steady)), compiled, dev.description()));
    std::printf("W11 %s batch %lld: first result %.1f ms (%lld kernels compiled), then %.3f ms per call\n", fw,
                (long long)size, first, (long long)compiled, median(steady));
  }
  return 0;
}

// W10: up to 1000 trips of x = tanh(x @ W + b) (x [64x1024], W [1024x1024], f32) stopping when
// max|x_new - x| < 1e-6, the whole loop one kiln::while_loop (on CUDA one graph launch: the
// loop is a conditional node). Inputs are the integer hashes of w10_anchor.py (same values).
// Reports the median time per whole loop of 10 after a warm-up, the trips, the launches.
std::vector<float> hashed(size_t n, uint64_t mult, double lo, double hi, double scale = 1) {
  std::vector<float> v(n);
  for (size_t k = 0; k < n; ++k)
    v[k] = float((lo + (hi - lo) * double((uint64_t(k) * mult) & 0xFFFFFFFFull) / 4294967296.0) / scale);
  return v;
}

int w10(const Device& dev, double scale, Output* out) {
  const Tensor x0 = upload(hashed(64 * 1024, 2654435761ull, -1, 1), {64, 1024}, dev, float32);
  const Tensor W = upload(hashed(1024 * 1024, 2246822519ull, -1, 1, scale), {1024, 1024}, dev, float32);
  const Tensor b = upload(hashed(1024, 3266489917ull, -0.1, 0.1), {1024}, dev, float32);
  auto loop = [&] {
    return while_loop([](const Values& v) { return logical_and(v[1] < 1000, !v[2]); },
                      [&](const Values& v) {
                        Tensor next = tanh(matmul(v[0], W) + b);
                        return Values{next, v[1] + 1, abs(next - v[0]).max() < 1e-6};
                      },
                      {x0, full({}, 0, int32, dev), full({}, 0, bool_, dev)});
  };
  auto t0 = Clock::now();
  Values r = loop();
  realize({r[0], r[1]});
  dev.synchronize();
  const double first = since_ms(t0);
  std::vector<double> times;
  int64_t launches = 0;
  for (int i = 0; i < 10; ++i) {
    const Stats before = stats();
    t0 = Clock::now();
    r = loop();
    realize({r[0], r[1]});
    dev.synchronize();
    times.push_back(since_ms(t0));
    launches = stats().graphs_realized - before.graphs_realized;
  }
  const int trips = r[1].to_vector<int32_t>()[0];
  double checksum = 0;
  for (float f : r[0].to_vector<float>()) checksum += f;
  const double ms = median(times);
  out->emit(absl::StrFormat(
      R"({"sec": "W10", "wl": "W10", "fw": "kiln", "ms": %s, "iterations": %d, "us_per_iter": %s, "launches": %d, )"
      R"("first_ms": %s, "checksum": %s, "device": "%s"})",
      num(ms), trips, num(ms * 1e3 / std::max(trips, 1)), launches, num(first), num(checksum), dev.description()));
  std::printf("W10 kiln: %.3f ms per loop (%d iterations, %.2f us per iteration, %lld realize(s) per loop), first %.1f ms, checksum %.6g\n",
              ms, trips, ms * 1e3 / std::max(trips, 1), (long long)launches, first, checksum);
  return 0;
}

// Ragged segment sums (issue 15's persistent kernels): segment_sum of x [N, R] over S segments
// whose lengths are integer hashes (segment_anchor.py builds the same ones):
//   short   S = 2^18, lengths h % 16 (about 2M rows)
//   skewed  S = 2^17, every 512th segment 16384 + h % 16384 rows, the others h % 16
//   long    S = 512, lengths 8192 + h % 16384
// with h = (s * 2654435761) mod 2^32, x[k] = the hash of k in [-1, 1). GPU time per call (CUDA
// events around back-to-back realizes); the thread mapping is KILN_GPU_SEGMENTS's (labelled).
std::vector<int64_t> segment_offsets(const std::string& dist) {
  const int64_t S = dist == "short" ? int64_t(1) << 18 : dist == "skewed" ? int64_t(1) << 17 : 512;
  std::vector<int64_t> off = {0};
  for (int64_t s = 0; s < S; ++s) {
    const int64_t h = int64_t((uint64_t(s) * 2654435761ull) & 0xFFFFFFFFull);
    int64_t len = h % 16;
    if (dist == "skewed" && s % 512 == 0) len = 16384 + h % 16384;
    if (dist == "long") len = 8192 + h % 16384;
    off.push_back(off.back() + len);
  }
  return off;
}

int segments(const Device& dev, const std::string& dist, int64_t width, Output* out) {
  if (dist != "short" && dist != "skewed" && dist != "long") {
    std::fprintf(stderr, "anchor_bench: --segments takes short, skewed or long\n");
    return 2;
  }
  const std::vector<int64_t> off = segment_offsets(dist);
  const int64_t S = int64_t(off.size()) - 1, N = off.back();
  const Tensor x = upload(hashed(size_t(N * width), 2246822519ull, -1, 1), {N, width}, dev, float32);
  const Tensor o = from_vector(off, {S + 1}, int64, dev).realize();
  std::unique_ptr<GpuTimer> timer = GpuTimer::create(dev);
  Tensor y;
  Timing t = time_calls([&] { y = segment_sum(x, o).realize(); }, dev, timer.get(), false);
  double checksum = 0;
  for (float f : y.to_vector<float>()) checksum += f;
  const char* how = std::getenv("KILN_GPU_SEGMENTS");
  std::string mapping = how && *how ? how : "default";
  if (const char* grid = std::getenv("KILN_GPU_SEGMENTS_GRID"); grid && *grid) mapping += absl::StrCat(" grid=", grid);
  const double ms = t.ms_gpu >= 0 ? t.ms_gpu : t.ms_wall;
  const double gbps = double(N * width * 4 + (S + 1) * 8 + S * width * 4) / (ms * 1e6);
  out->emit(absl::StrFormat(
      R"({"sec": "SEG", "wl": "SEG-%s-R%d", "fw": "kiln", "mapping": "%s", "ms": %s, "ms_wall": %s, "gbps": %s, )"
      R"("rows": %d, "segments": %d, "checksum": %s, "device": "%s"})",
      dist, width, mapping, num(ms), num(t.ms_wall), num(gbps), N, S, num(checksum), dev.description()));
  std::printf("SEG %s R=%lld kiln (%s): %.4f ms GPU per call (%.1f GB/s), %.4f ms wall; %lld rows in %lld segments, checksum %.6g\n",
              dist.c_str(), (long long)width, mapping.c_str(), ms, gbps, t.ms_wall, (long long)N, (long long)S, checksum);
  return 0;
}

int main_impl(int argc, char** argv) {
  std::string device = "cuda", results, only = "W1,W2,W3,W4a,W4b,W5,W6,H", first, var = "cold";
  double scale = 32;
  std::string dist;
  int64_t width = 1;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    auto value = [&]() -> std::string { return i + 1 < argc ? argv[++i] : ""; };
    if (a == "--device") device = value();
    else if (a == "--results") results = value();
    else if (a == "--only") only = value();
    else if (a == "--first-call") first = value();
    else if (a == "--var") var = value();
    else if (a == "--w11") first = "W11";
    else if (a == "--w11-dim") first = "W11-dim";
    else if (a == "--w10") first = "W10";
    else if (a == "--scale") scale = std::atof(value().c_str());
    else if (a == "--segments") dist = value();
    else if (a == "--width") width = std::atol(value().c_str());
    else {
      std::fprintf(stderr, "usage: anchor_bench [--device cuda] [--results f.jsonl] [--only W1,...] "
                           "[--first-call W1|W3 --var cold|warm] [--w11|--w11-dim] [--w10 [--scale S]] "
                           "[--segments short|skewed|long [--width R]]\n");
      return 2;
    }
  }
  auto dev = Device::get(device);
  if (!dev.ok()) {
    std::fprintf(stderr, "anchor_bench: %s\n", std::string(dev.status().message()).c_str());
    return 2;
  }
  Output out;
  if (!results.empty() && !(out.jsonl = std::fopen(results.c_str(), "a"))) {
    std::fprintf(stderr, "anchor_bench: cannot append to %s\n", results.c_str());
    return 2;
  }
  std::printf("anchor_bench on %s\n", dev->description().c_str());
  if (first == "W11" || first == "W11-dim") return w11(*dev, &out, first == "W11-dim");
  if (first == "W10") return w10(*dev, scale, &out);
  if (!dist.empty()) return segments(*dev, dist, std::max<int64_t>(width, 1), &out);
  if (!first.empty()) return first_call(first, var, *dev, &out);
  std::unique_ptr<GpuTimer> timer = GpuTimer::create(*dev);
  for (absl::string_view id : absl::StrSplit(only, ',', absl::SkipEmpty())) run_workload(std::string(id), *dev, timer.get(), &out);
  if (out.jsonl) std::fclose(out.jsonl);
  return 0;
}

}  // namespace
}  // namespace kiln::bench

int main(int argc, char** argv) {
  try {
    return kiln::bench::main_impl(argc, argv);
  } catch (const kiln::Error& e) {
    std::fprintf(stderr, "anchor_bench: %s\n", e.what());
    return 1;
  }
}

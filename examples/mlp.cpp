// A 2-layer MLP forward pass with layer_norm and softmax on random weights.
//
//   build/examples/mlp            (default device; KILN_DEVICE=cpu|vulkan|cuda to choose)
#include <chrono>
#include <cmath>
#include <cstdio>

#include <kiln/kiln.h>

int main() {
  using namespace kiln;
  const int64_t batch = 256, in = 512, hidden = 1024, classes = 10;
  try {
    Device dev;
    std::printf("device: %s\n", dev.description().c_str());
    Tensor w1 = randn({in, hidden}, 1) * (1.0 / std::sqrt(double(in)));
    Tensor b1 = zeros({hidden});
    Tensor w2 = randn({hidden, classes}, 2) * (1.0 / std::sqrt(double(hidden)));
    Tensor b2 = zeros({classes});
    Tensor gamma = ones({in}), beta = zeros({in});
    realize({w1, w2, b1, b2, gamma, beta});

    auto forward = [&](const Tensor& x) {
      Tensor h = gelu(matmul(layer_norm(x, gamma, beta), w1) + b1, /*tanh_approx=*/true);
      return softmax(matmul(h, w2) + b2, -1);
    };
    for (int run = 0; run < 2; ++run) {
      Tensor x = randn({batch, in}, 100 + run);
      x.realize();
      reset_stats();
      auto t0 = std::chrono::steady_clock::now();
      Tensor probs = forward(x);
      std::vector<float> p = probs.to_vector<float>();
      double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      std::vector<int64_t> pred = probs.argmax(-1).to_vector<int64_t>();
      double row_sum = 0;
      for (int64_t c = 0; c < classes; ++c) row_sum += p[c];
      std::printf("run %d (%s): probs %s, row 0 sums to %.6f, predicted classes of rows 0-4: %lld %lld %lld %lld %lld\n",
                  run, run == 0 ? "compile + run" : "cached replay", shape_str(probs.shape()).c_str(), row_sum,
                  (long long)pred[0], (long long)pred[1], (long long)pred[2], (long long)pred[3], (long long)pred[4]);
      Stats s = stats();
      std::printf("  kernels launched %lld (forward graph + argmax), kernels compiled %lld, wall time %.2f ms\n",
                  (long long)s.kernels_launched, (long long)s.kernels_compiled, ms);
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "mlp: %s\n", e.what());
    return 1;
  }
  return 0;
}

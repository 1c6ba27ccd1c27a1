// Row softmax of a matrix: one fused kernel (max, sum and the normalization in one pass per row).
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include <kiln/kiln.h>

int main(int argc, char** argv) {
  using namespace kiln;
  int64_t rows = argc > 1 ? std::atoll(argv[1]) : 2048, cols = argc > 2 ? std::atoll(argv[2]) : 2048;
  try {
    Tensor x = randn({rows, cols}, 7);
    x.realize();
    for (int run = 0; run < 3; ++run) {
      reset_stats();
      auto t0 = std::chrono::steady_clock::now();
      Tensor y = softmax(x * 3.0, -1);
      y.realize();
      double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
      double first_row = y.slice(0, 0, 1).sum().item();
      std::printf("softmax %lldx%lld on %s: %lld kernel(s) launched, %lld compiled, %.3f ms; row 0 sums to %.6f\n",
                  (long long)rows, (long long)cols, x.device().name().c_str(), (long long)stats().kernels_launched,
                  (long long)stats().kernels_compiled, ms, first_row);
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "softmax: %s\n", e.what());
    return 1;
  }
  return 0;
}

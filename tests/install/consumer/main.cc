#include <kiln/kiln.h>

#include <cstdio>

int main() {
  kiln::Tensor x = kiln::arange(5, kiln::int32);
  auto v = (x * x).sum().to_vector<int64_t>();
  // The same sum from the model kilnc compiled at build time; loading it compiles nothing.
  kiln::Tensor x_host = kiln::from_vector<int32_t>({0, 1, 2, 3, 4}, {5}, kiln::Device("cpu"));  // uploaded, not computed
  kiln::reset_stats();
  kiln::Model m = kiln::load(SQUARE_KILN, kiln::Device("cpu"));
  auto w = m({{"x", x_host}})[0].to_vector<int64_t>();
  std::printf("sum of squares: %lld, from square.kiln: %lld (%lld kernels compiled)\n", (long long)v[0], (long long)w[0],
              (long long)kiln::stats().kernels_compiled);
  return v[0] == 30 && w[0] == 30 && kiln::stats().kernels_compiled == 0 ? 0 : 1;
}

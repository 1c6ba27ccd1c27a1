#include <kiln/kiln.h>

#include <cstdio>

int main() {
  kiln::Tensor x = kiln::arange(5, kiln::int32);
  auto v = (x * x).sum().to_vector<int64_t>();
  std::printf("sum of squares: %lld\n", (long long)v[0]);
  return v[0] == 30 ? 0 : 1;
}

// Tensor parallelism (Megatron-style): an MLP block y = gelu(x @ W1) @ W2 with W1 split by
// columns and W2 by rows over the ranks. Each rank computes its slice of the hidden layer and a
// partial product; ONE all_reduce per block sums them. The kernels before and after the
// collective are fused as usual: the collective is a step of the compiled program between them.
// The example checks the result against the whole block on one process.
//
//   build/examples/tensor_parallel                                   (2 ranks on threads)
//   mpirun --allow-run-as-root -np 2 build/examples/tensor_parallel  (2 processes)
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <thread>

#include <kiln/kiln.h>

using namespace kiln;

namespace {

constexpr int64_t kBatch = 16, kModel = 64, kHidden = 256, kLayers = 2;

struct Layer {
  Tensor w1, w2;
};

std::vector<Layer> weights(const Device& cpu) {
  std::vector<Layer> ls;
  for (int64_t l = 0; l < kLayers; ++l)
    ls.push_back({(randn({kModel, kHidden}, 2 * l + 1) * (1.0 / std::sqrt(double(kModel)))).to(cpu),
                  (randn({kHidden, kModel}, 2 * l + 2) * (1.0 / std::sqrt(double(kHidden)))).to(cpu)});
  return ls;
}

// The blocks on rank `rank` of `size` (size 1: the whole block), residual connections between.
Tensor forward(const std::vector<Layer>& ls, Tensor x, int rank, int size, const dist::ProcessGroup* group) {
  const int64_t part = kHidden / size, lo = rank * part;
  for (const Layer& l : ls) {
    Tensor partial = matmul(gelu(matmul(x, l.w1.slice(1, lo, lo + part))), l.w2.slice(0, lo, lo + part));
    x = x + (group ? dist::all_reduce(partial, *group) : partial);
  }
  return x;
}

}  // namespace

int main() {
  try {
    const Device cpu("cpu");
    const std::vector<Layer> ls = weights(cpu);
    Tensor x = randn({kBatch, kModel}, 100).to(cpu);
    const std::vector<float> whole = forward(ls, x, 0, 1, nullptr).to_vector<float>();
    std::vector<float> mine;
    int rank = 0, size = 2;
    std::string backend;
    if (std::getenv("OMPI_COMM_WORLD_SIZE")) {
      auto g = dist::init();
      throw_if_error(g.status());
      rank = g->rank();
      size = g->size();
      backend = g->backend();
      reset_stats();
      mine = forward(ls, x, rank, size, &*g).to_vector<float>();
    } else {
      auto groups = dist::local_group(size);
      throw_if_error(groups.status());
      backend = (*groups)[0].backend();
      std::vector<std::vector<float>> out(static_cast<size_t>(size));
      std::vector<std::thread> threads;
      std::mutex failed_mu;
      std::string failed;
      for (int r = 0; r < size; ++r) threads.emplace_back([&, r] {
          try {
            out[size_t(r)] = forward(ls, x, r, size, &(*groups)[size_t(r)]).to_vector<float>();
          } catch (const Error& e) {
            std::lock_guard<std::mutex> lock(failed_mu);
            failed = e.what();
          }
        });
      for (std::thread& t : threads) t.join();
      if (!failed.empty()) throw Error(absl::InternalError(failed));
      mine = out[0];
    }
    double d = 0;
    for (size_t i = 0; i < mine.size(); ++i) d = std::max(d, double(std::fabs(mine[i] - whole[i])));
    if (rank == 0)
      std::printf("%lld blocks of [%lld x %lld] split over %d ranks (%s): largest difference from one process %.3g\n",
                  (long long)kLayers, (long long)kModel, (long long)kHidden, size, backend.c_str(), d);
    if (!(d < 1e-4)) {
      std::fprintf(stderr, "tensor_parallel: rank %d differs from one process by %g\n", rank, d);
      return 1;
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "tensor_parallel: %s\n", e.what());
    return 1;
  }
  return 0;
}

// Data parallelism: every rank holds the same MLP and a shard of the batch, computes gradients on
// its shard (written out by hand: kiln has no autodiff yet), and all_reduce sums them, so every
// rank takes the same SGD step as one process training on the whole batch. The example checks
// exactly that: after the steps, rank 0's weights are compared with a single-process run.
//
//   build/examples/data_parallel                                   (2 ranks on threads)
//   mpirun --allow-run-as-root -np 2 build/examples/data_parallel  (2 processes)
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <mutex>
#include <string>
#include <thread>

#include <kiln/kiln.h>

using namespace kiln;

namespace {

constexpr int64_t kBatch = 64, kIn = 32, kHidden = 64, kOut = 8;
constexpr int kSteps = 3;
constexpr double kLr = 0.1;

struct Weights {
  Tensor w1, b1, w2;
};

Weights initial(const Device& cpu) {
  return {(randn({kIn, kHidden}, 1) * (1.0 / std::sqrt(double(kIn)))).to(cpu), zeros({kHidden}).to(cpu),
          (randn({kHidden, kOut}, 2) * (1.0 / std::sqrt(double(kHidden)))).to(cpu)};
}

// One SGD step on rows [lo, hi) of the batch; `reduce` sums a gradient over the ranks (identity
// when one process has the whole batch). The mean squared error is over the whole batch.
Weights step(const Weights& w, const Tensor& x, const Tensor& t, const std::function<Tensor(const Tensor&)>& reduce, double* loss) {
  Tensor h = relu(matmul(x, w.w1) + w.b1);
  Tensor out = matmul(h, w.w2);
  Tensor diff = out - t;
  const double scale = 2.0 / double(kBatch * kOut);
  Tensor dout = diff * scale;
  Tensor dw2 = matmul(h.transpose(0, 1), dout);
  Tensor dh = matmul(dout, w.w2.transpose(0, 1)) * (h > 0.0).cast(float32);
  Tensor dw1 = matmul(x.transpose(0, 1), dh);
  Tensor db1 = dh.sum({0});
  Tensor sq = reduce((diff * diff).sum().reshape({1}));
  Weights next{w.w1 - reduce(dw1) * kLr, w.b1 - reduce(db1) * kLr, w.w2 - reduce(dw2) * kLr};
  realize({next.w1, next.b1, next.w2, sq});
  *loss = sq.to_vector<float>()[0] / double(kBatch * kOut);
  return next;
}

// Rank `rank` of `group`: trains on its shard; returns its final weights.
Weights train(const dist::ProcessGroup& group, const Tensor& x, const Tensor& t) {
  const int64_t rows = kBatch / group.size(), lo = group.rank() * rows;
  Tensor xs = x.slice(0, lo, lo + rows), ts = t.slice(0, lo, lo + rows);
  Weights w = initial(Device("cpu"));
  for (int s = 0; s < kSteps; ++s) {
    double loss = 0;
    w = step(w, xs, ts, [&](const Tensor& g) { return dist::all_reduce(g, group); }, &loss);
    if (group.rank() == 0) std::printf("step %d: loss %.6f (rank 0 of %d, %s)\n", s, loss, group.size(), group.backend().c_str());
  }
  return w;
}

double max_difference(const Weights& a, const Weights& b) {
  double d = 0;
  for (auto [x, y] : {std::pair{a.w1, b.w1}, std::pair{a.b1, b.b1}, std::pair{a.w2, b.w2}}) {
    std::vector<float> u = x.to_vector<float>(), v = y.to_vector<float>();
    for (size_t i = 0; i < u.size(); ++i) d = std::max(d, double(std::fabs(u[i] - v[i])));
  }
  return d;
}

}  // namespace

int main() {
  try {
    const Device cpu("cpu");
    Tensor x = randn({kBatch, kIn}, 10).to(cpu), t = randn({kBatch, kOut}, 11).to(cpu);
    realize({x, t});
    Weights reference = initial(cpu);
    for (int s = 0; s < kSteps; ++s) {
      double loss = 0;
      reference = step(reference, x, t, [](const Tensor& g) { return g; }, &loss);
      const char* r = std::getenv("OMPI_COMM_WORLD_RANK");
      if (!r || std::string(r) == "0") std::printf("one process, step %d: loss %.6f\n", s, loss);
    }
    Weights mine;
    int rank = 0;
    if (const char* launched = std::getenv("OMPI_COMM_WORLD_SIZE"); launched) {
      dist::ProcessGroup g = [] {
        auto r = dist::init();
        throw_if_error(r.status());
        return *r;
      }();
      rank = g.rank();
      mine = train(g, x, t);
    } else {
      auto groups = dist::local_group(2);
      throw_if_error(groups.status());
      std::vector<Weights> result(2);
      std::vector<std::thread> threads;
      std::mutex failed_mu;
      std::string failed;
      for (int r = 0; r < 2; ++r) threads.emplace_back([&, r] {
          try {
            result[size_t(r)] = train((*groups)[size_t(r)], x, t);
          } catch (const Error& e) {
            std::lock_guard<std::mutex> lock(failed_mu);
            failed = e.what();
          }
        });
      for (std::thread& th : threads) th.join();
      if (!failed.empty()) throw Error(absl::InternalError(failed));
      mine = result[0];
    }
    const double d = max_difference(mine, reference);
    if (rank == 0) std::printf("largest difference from the one-process weights: %.3g\n", d);
    if (!(d < 1e-4)) {
      std::fprintf(stderr, "data_parallel: rank %d's weights differ from one process's by %g\n", rank, d);
      return 1;
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "data_parallel: %s\n", e.what());
    return 1;
  }
  return 0;
}

// dist_bench: issue 16's measurements on local GPUs, one rank per GPU on a thread of this process
// (kiln::dist::local_group; NCCL inside each rank's CUDA graph). bench/gpu/dist_anchor.py
// measures torch.distributed the same way in the same device call.
//
//   dist_bench --allreduce [--ranks 2] [--results r.jsonl]   all_reduce(sum) of f32, 1 MiB .. 1 GiB:
//                                                            time per call and bus bandwidth
//   dist_bench --tp [--ranks 1|2] [--results r.jsonl]        a Megatron MLP block (bf16, x [16, 4096],
//                                                            W1 [4096, 16384] by columns, W2 by rows,
//                                                            one all_reduce): time per step, host time
//     [--collective auto|always|inner|alternate|never]       the block's all_reduce: with 2+ ranks
//                                                            (auto), also on 1 rank, followed by a
//                                                            kernel (+ 1), in two graphs used in
//                                                            turn, or left out (diagnoses of the
//                                                            host time per step)
//     with RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT and LOCAL_RANK set (as torchrun sets them):
//     this process is one rank of a TCP group, on cuda:<LOCAL_RANK>; rank 0 reports
//   dist_bench --overlap [--ranks 2]                         an all_reduce (f32, 64 MiB) and work that
//                                                            does not depend on it (a bf16 4096^3
//                                                            matmul; an elementwise pass over 256 MiB):
//                                                            each alone, one after the other (two
//                                                            realizes), and in one graph, where they
//                                                            may overlap
//
// Bus bandwidth = bytes * 2 (W - 1) / W / time (NCCL's definition, as nccl-tests report it).
#include <algorithm>
#include <barrier>
#include <functional>
#include <mutex>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "kiln/kiln.h"

using namespace kiln;

namespace {

double now_ms() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

FILE* results = nullptr;

void emit(const std::string& json) {
  std::printf("RESULT %s\n", json.c_str());
  if (results) std::fprintf(results, "%s\n", json.c_str());
}

// Runs body(rank, group, device) on one thread per rank; each returns its numbers in `out`.
void on_ranks(int ranks, const std::function<void(int, const dist::ProcessGroup&, const Device&)>& body) {
  auto groups = dist::local_group(ranks);
  throw_if_error(groups.status());
  std::vector<std::thread> threads;
  std::string failed;
  std::mutex mu;
  for (int r = 0; r < ranks; ++r) threads.emplace_back([&, r] {
      try {
        body(r, (*groups)[size_t(r)], Device("cuda:" + std::to_string(r)));
      } catch (const std::exception& e) {
        std::lock_guard<std::mutex> lock(mu);
        failed = e.what();
      }
    });
  for (std::thread& t : threads) t.join();
  if (!failed.empty()) throw Error(absl::InternalError(failed));
}

void allreduce(int ranks) {
  std::barrier sync(ranks);
  for (int64_t bytes = int64_t(1) << 20; bytes <= int64_t(1) << 30; bytes *= 4) {
    const int64_t n = bytes / 4;
    const int iters = int(std::clamp<int64_t>((int64_t(16) << 30) / bytes, 10, 200));
    std::vector<double> ms(static_cast<size_t>(ranks));
    std::string desc;
    bool ok = true;
    on_ranks(ranks, [&](int r, const dist::ProcessGroup& g, const Device& d) {
      Tensor x = full({n}, 1.0 + r, float32, d);
      x.realize();
      for (int w = 0; w < 3; ++w) dist::all_reduce(x, g).realize();
      d.synchronize();
      sync.arrive_and_wait();
      const double t0 = now_ms();
      Tensor y;
      for (int i = 0; i < iters; ++i) {
        y = dist::all_reduce(x, g);
        y.realize();
      }
      d.synchronize();
      ms[size_t(r)] = (now_ms() - t0) / iters;
      sync.arrive_and_wait();
      const std::vector<float> v = y.slice(0, 0, 4).to_vector<float>();
      const float want = float(ranks * (ranks + 1) / 2);
      if (v[0] != want || v[3] != want) ok = false;
      if (r == 0) desc = d.description();
    });
    double t = 0;
    for (double m : ms) t = std::max(t, m);
    const double busbw = double(bytes) * 2.0 * (ranks - 1) / ranks / (t * 1e-3) / 1e9;
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "{\"sec\": \"dist\", \"wl\": \"allreduce\", \"fw\": \"kiln\", \"ranks\": %d, \"bytes\": %lld, \"ms\": %.5f, "
                  "\"busbw_GBps\": %.2f, \"iterations\": %d, \"ok\": %s, \"device\": \"%s\"}",
                  ranks, (long long)bytes, t, busbw, iters, ok ? "true" : "false", desc.c_str());
    emit(buf);
  }
}

std::string collective_mode = "auto";
bool with_all_reduce(int ranks) { return collective_mode == "auto" ? ranks > 1 : collective_mode != "never"; }

// One rank's part of the tensor-parallel block: its step time, host time and recording time
// per step. `barrier` meets the other ranks (threads: a std::barrier; processes: a collective).
struct TpTimes {
  double ms = 0, host = 0, record = 0;
  int64_t kernels = 0;
};
TpTimes tp_rank(int r, int ranks, bool reduce, const dist::ProcessGroup& g, const Device& d,
                const std::function<void()>& barrier, bool threads) {
  const int64_t B = 16, D = 4096, H = 16384, part = H / ranks;
  const int iters = 200;
  TpTimes t;
  Tensor x = (randn({B, D}, 1) * 0.5).cast(bfloat16).to(d);
  Tensor w1 = (randn({D, part}, 2 + r) * (1.0 / 64)).cast(bfloat16).to(d);
  Tensor w2 = (randn({part, D}, 10 + r) * (1.0 / 128)).cast(bfloat16).to(d);
  realize({x, w1, w2});
  auto step = [&] {
    Tensor partial = matmul(gelu(matmul(x, w1)), w2);
    if (!reduce) return partial;
    // inner: a kernel after the all_reduce writes the result, so the collective's buffers are
    // the executable's own and never move between steps (a diagnosis of the host time)
    // alternate: two structurally different steps (two executables, two CUDA graphs) in turn
    thread_local int turn = 0;
    if (collective_mode == "alternate") return (turn++ % 2) ? dist::all_reduce(partial, g) + 1.0 : dist::all_reduce(partial, g) - 1.0;
    return collective_mode == "inner" ? dist::all_reduce(partial, g) + 1.0 : dist::all_reduce(partial, g);
  };
  for (int w = 0; w < 5; ++w) step().realize();
  d.synchronize();
  barrier();
  const double r0 = now_ms();
  for (int i = 0; i < iters; ++i) (void)step();  // recording alone (nothing realized)
  t.record = (now_ms() - r0) / iters;
  d.synchronize();
  barrier();
  const double t0 = now_ms();
  for (int i = 0; i < iters; ++i) step().realize();
  t.host = (now_ms() - t0) / iters;
  d.synchronize();
  t.ms = (now_ms() - t0) / iters;
  barrier();
  if (!threads) reset_stats();  // (a barrier of processes launches kernels of its own)
  if (threads && r == 0) reset_stats();
  if (threads) barrier();
  step().realize();
  d.synchronize();
  // (stats are per process: with ranks on threads rank 0 reads every rank's launches once all
  // are done; a process reads its own before the barrier, which launches a kernel of its own)
  if (!threads) t.kernels = stats().kernels_launched;
  barrier();
  if (threads && r == 0) t.kernels = stats().kernels_launched;
  return t;
}

void emit_tp(int ranks, bool reduce, const TpTimes& t, const char* mode, const std::string& desc) {
  char buf[640];
  std::snprintf(buf, sizeof buf,
                "{\"sec\": \"dist\", \"wl\": \"tp_mlp\", \"fw\": \"kiln\", \"ranks\": %d, \"ranks_on\": \"%s\", \"all_reduce\": %s, "
                "\"shape\": \"x[16,4096] W1[4096,16384] bf16\", \"ms\": %.5f, \"host_ms_per_step\": %.5f, \"record_ms_per_step\": %.5f, "
                "\"launches_per_step\": 1, \"kernels_per_step\": %lld, \"device\": \"%s\"}",
                ranks, mode, reduce ? "true" : "false", t.ms, t.host, t.record, (long long)t.kernels, desc.c_str());
  emit(buf);
}

// One process per rank (RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT / LOCAL_RANK set, as
// torchrun does): rank r on cuda:<local rank>; rank 0 reports its own times.
void tp_processes() {
  auto g = dist::init();
  throw_if_error(g.status());
  const int ranks = g->size();
  const bool reduce = with_all_reduce(ranks);
  Device d("cuda:" + std::to_string(g->local_rank()));
  // (an all_reduce on the rank's GPU: GPU-machine bundles have no CPU backend)
  auto barrier = [&] {
    dist::all_reduce(full({1}, 0.0, float32, d), *g).realize();
    d.synchronize();
  };
  TpTimes t = tp_rank(g->rank(), ranks, reduce, *g, d, barrier, /*threads=*/false);
  if (g->rank() == 0) emit_tp(ranks, reduce, t, "processes", d.description());
}

void tp(int ranks) {
  if (std::getenv("RANK")) return tp_processes();
  const bool reduce = with_all_reduce(ranks);
  std::barrier sync(ranks);
  std::vector<TpTimes> times(static_cast<size_t>(ranks));
  std::string desc;
  on_ranks(ranks, [&](int r, const dist::ProcessGroup& g, const Device& d) {
    times[size_t(r)] = tp_rank(r, ranks, reduce, g, d, [&] { sync.arrive_and_wait(); }, /*threads=*/true);
    if (r == 0) desc = d.description();
  });
  TpTimes worst;
  for (const TpTimes& t : times) {
    worst.ms = std::max(worst.ms, t.ms);
    worst.host = std::max(worst.host, t.host);
    worst.record = std::max(worst.record, t.record);
  }
  worst.kernels = times[0].kernels / ranks;
  emit_tp(ranks, reduce, worst, "threads", desc);
}

// Device ms per iteration of `run` on every rank (the slowest rank's), after warm-up.
double per_iteration(int iters, std::barrier<>& sync, const Device& d, const std::function<void()>& run) {
  for (int w = 0; w < 3; ++w) run();
  d.synchronize();
  sync.arrive_and_wait();
  const double t0 = now_ms();
  for (int i = 0; i < iters; ++i) run();
  d.synchronize();
  const double ms = (now_ms() - t0) / iters;
  sync.arrive_and_wait();
  return ms;
}

// `compute_kind`: "matmul" (bf16 4096^3: a persistent grid, a block per multiprocessor) or
// "elementwise" (f32 exp(sin(u)) over 64 Mi elements: a block per tile).
void overlap(int ranks, const std::string& compute_kind) {
  const int64_t n = (int64_t(64) << 20) / 4, M = 4096, E = int64_t(64) << 20;
  const int iters = 50;
  std::barrier sync(ranks);
  std::vector<std::vector<double>> t(static_cast<size_t>(ranks));
  std::string desc;
  bool ok = true;
  on_ranks(ranks, [&](int r, const dist::ProcessGroup& g, const Device& d) {
    Tensor x = full({n}, 1.0 + r, float32, d);
    const bool mm = compute_kind == "matmul";
    Tensor a = mm ? (randn({M, M}, 3 + r) * 0.1).cast(bfloat16).to(d) : full({E}, 0.5, float32, d);
    Tensor b = mm ? (randn({M, M}, 5) * 0.1).cast(bfloat16).to(d) : a;
    realize({x, a, b});
    Tensor y, c;
    auto work = [&] { return mm ? matmul(a, b) * 1.0 : exp(sin(a * 1.0)); };
    auto comm = [&] { (y = dist::all_reduce(x * 1.0, g)).realize(); };
    auto compute = [&] { (c = work()).realize(); };
    auto serial = [&] { comm(); compute(); };
    auto together = [&] {
      y = dist::all_reduce(x * 1.0, g);
      c = work();
      realize({y, c});
    };
    auto& mine = t[size_t(r)];
    mine.push_back(per_iteration(iters, sync, d, comm));
    mine.push_back(per_iteration(iters, sync, d, compute));
    mine.push_back(per_iteration(iters, sync, d, serial));
    mine.push_back(per_iteration(iters, sync, d, together));
    if (y.slice(0, 0, 2).to_vector<float>()[1] != float(ranks * (ranks + 1) / 2)) ok = false;
    if (r == 0) desc = d.description();
  });
  double m[4] = {0, 0, 0, 0};
  for (const auto& mine : t)
    for (size_t k = 0; k < 4; ++k) m[k] = std::max(m[k], mine[k]);
  // The share of the shorter one hidden under the other: 0 = none, 1 = all of it.
  const double hidden = (m[0] + m[1] - m[3]) / std::min(m[0], m[1]);
  char buf[640];
  std::snprintf(buf, sizeof buf,
                "{\"sec\": \"dist\", \"wl\": \"overlap\", \"fw\": \"kiln\", \"ranks\": %d, \"shape\": \"all_reduce f32 64 MiB + %s\", "
                "\"allreduce_ms\": %.5f, \"compute_ms\": %.5f, \"two_realizes_ms\": %.5f, "
                "\"one_graph_ms\": %.5f, \"hidden_fraction\": %.3f, \"ok\": %s, \"device\": \"%s\"}",
                ranks, compute_kind == "matmul" ? "matmul bf16 4096^3" : "exp(sin(u)) f32 64 Mi", m[0], m[1], m[2], m[3],
                hidden, ok ? "true" : "false", desc.c_str());
  emit(buf);
}

}  // namespace

int main(int argc, char** argv) {
  std::string mode;
  int ranks = 2;
  for (int i = 1; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--allreduce" || a == "--tp" || a == "--overlap") mode = a;
    else if (a == "--collective" && i + 1 < argc) collective_mode = argv[++i];
    else if (a == "--ranks" && i + 1 < argc) ranks = std::atoi(argv[++i]);
    else if (a == "--results" && i + 1 < argc) results = std::fopen(argv[++i], "a");
    else {
      std::fprintf(stderr, "usage: dist_bench --allreduce|--tp|--overlap [--ranks N] [--collective auto|always|inner|alternate|never] [--results file.jsonl]\n");
      return 2;
    }
  }
  try {
    if (mode == "--allreduce") allreduce(ranks);
    else if (mode == "--tp") tp(ranks);
    else if (mode == "--overlap") {
      overlap(ranks, "matmul");
      overlap(ranks, "elementwise");
    }
    else {
      std::fprintf(stderr, "dist_bench: say --allreduce, --tp or --overlap\n");
      return 2;
    }
  } catch (const Error& e) {
    std::fprintf(stderr, "dist_bench: %s\n", e.what());
    return 1;
  }
  if (results) std::fclose(results);
  return 0;
}

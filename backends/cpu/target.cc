// The CPU TargetInfo, target key and key comparison of target.h (LLVM's host detection is in
// codegen/llvm/compile.cc, shared with the compiler's "host when empty").
#include "backends/cpu/target.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <fstream>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "codegen/llvm/compile.h"

namespace kiln::runtime::cpu {

absl::StatusOr<ir::TargetInfo> host_target(int threads) {
  auto host = codegen::cpu::resolve_cpu(ir::TargetInfo{});
  if (!host.ok()) return host.status();
  ir::TargetInfo t;
  t.name = "cpu";
  t.parallelism = threads;
  t.is_gpu = false;
  t.vector_width = 8;
  t.max_fused_row = int64_t(1) << 40;
  t.cpu_name = host->cpu;
  t.cpu_features = host->features;
  return t;
}

absl::StatusOr<std::string> target_key(const ir::TargetInfo& t) {
  auto c = codegen::cpu::resolve_cpu(t);
  if (!c.ok()) return c.status();
  return c->key();
}

namespace {

// Features of a key ("<triple> <cpu> <features>") that `other` lacks, at most a few.
std::string features_missing(const std::vector<std::string>& key, const std::vector<std::string>& other) {
  std::vector<std::string> mine, theirs, missing;
  if (key.size() > 2) mine = absl::StrSplit(key[2], ',', absl::SkipEmpty());
  if (other.size() > 2) theirs = absl::StrSplit(other[2], ',', absl::SkipEmpty());
  std::sort(theirs.begin(), theirs.end());
  for (const std::string& f : mine)
    if (!std::binary_search(theirs.begin(), theirs.end(), f)) missing.push_back(f);
  constexpr size_t kShown = 8;
  std::string more = missing.size() > kShown ? absl::StrCat(" and ", missing.size() - kShown, " more") : "";
  if (missing.size() > kShown) missing.resize(kShown);
  return missing.empty() ? "none" : absl::StrCat(absl::StrJoin(missing, ", "), more);
}

}  // namespace

bool key_compatible(const std::string& compiled, const std::string& here) {
  if (compiled == here) return true;
  std::vector<std::string> a = absl::StrSplit(compiled, absl::MaxSplits(' ', 2));
  std::vector<std::string> b = absl::StrSplit(here, absl::MaxSplits(' ', 2));
  if (a.size() < 2 || b.size() < 2 || a[0] != b[0]) return false;
  // A CPU name without a feature list stands for features only LLVM knows: exact keys only.
  if (a.size() < 3 || a[2].empty()) return false;
  std::vector<std::string> have;
  if (b.size() > 2) have = absl::StrSplit(b[2], ',', absl::SkipEmpty());
  std::sort(have.begin(), have.end());
  if (a.size() > 2)
    for (absl::string_view f : absl::StrSplit(a[2], ',', absl::SkipEmpty()))
      if (f[0] == '+' && !std::binary_search(have.begin(), have.end(), std::string(f))) return false;
  return true;
}

std::string describe_difference(const std::string& compiled, const std::string& here) {
  std::vector<std::string> a = absl::StrSplit(compiled, absl::MaxSplits(' ', 2));
  std::vector<std::string> b = absl::StrSplit(here, absl::MaxSplits(' ', 2));
  auto head = [](const std::vector<std::string>& k) { return absl::StrJoin(k.begin(), k.begin() + std::min<size_t>(k.size(), 2), " "); };
  return absl::StrCat("compiled for ", head(a), ", this CPU is ", head(b), "; features only in the program: ",
                      features_missing(a, b), "; only here: ", features_missing(b, a));
}

namespace {

// Bytes per second of a copy of 64 MiB split over `threads` threads, the best of three.
double measured_copy_bandwidth(int threads) {
  constexpr size_t kBytes = size_t(64) << 20;
  std::unique_ptr<char[]> src(new char[kBytes]), dst(new char[kBytes]);
  std::memset(src.get(), 1, kBytes);
  std::memset(dst.get(), 0, kBytes);
  threads = std::max(1, threads);
  const size_t chunk = kBytes / size_t(threads);
  double best = 1e30;
  for (int rep = 0; rep < 3; ++rep) {
    const auto t0 = std::chrono::steady_clock::now();
    std::vector<std::thread> pool;
    for (int t = 0; t < threads; ++t)
      pool.emplace_back([&, t] {
        const size_t begin = size_t(t) * chunk, end = t + 1 == threads ? kBytes : begin + chunk;
        std::memcpy(dst.get() + begin, src.get() + begin, end - begin);
      });
    for (std::thread& th : pool) th.join();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return 2.0 * double(kBytes) / best;
}

// The clock /proc/cpuinfo reports for the first CPU, in Hz; 0 when unknown.
double cpu_clock_hz() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("cpu MHz", 0) != 0) continue;
    const size_t colon = line.find(':');
    if (colon == std::string::npos) break;
    return std::atof(line.c_str() + colon + 1) * 1e6;
  }
  return 0;
}

}  // namespace

support::Peaks host_peaks(int threads, int vector_width) {
  static std::once_flag once;
  static support::Peaks measured;
  std::call_once(once, [&] {
    measured.bytes_per_s = measured_copy_bandwidth(threads);
    const double hz = cpu_clock_hz();
    measured.flops_per_s = double(threads) * double(vector_width) * 2 * 2 * hz;
    measured.launch_floor_us = 20;  // a kernel handed to the thread pool
    measured.source = absl::StrFormat("measured copy of 64 MiB on %d threads; f32 FMA peak at %.0f MHz", threads, hz / 1e6);
  });
  return support::with_peak_overrides(measured);
}

}  // namespace kiln::runtime::cpu

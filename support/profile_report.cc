// Roofline and launch-overhead report (profile_report.h).
#include "support/profile_report.h"

#include <algorithm>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace kiln::support {
namespace {

std::string human_bytes(int64_t b) {
  if (b >= (int64_t(1) << 30)) return absl::StrFormat("%.1f GiB", double(b) / double(int64_t(1) << 30));
  if (b >= (int64_t(1) << 20)) return absl::StrFormat("%.1f MiB", double(b) / double(int64_t(1) << 20));
  if (b >= 1024) return absl::StrFormat("%.1f KiB", double(b) / 1024.0);
  return absl::StrCat(b, " B");
}

// Union length of [start, start + dur) intervals (kernels of one run may overlap on GPUs).
double busy_us(std::vector<std::pair<double, double>> spans) {
  std::sort(spans.begin(), spans.end());
  double total = 0, end = -1e300;
  for (const auto& [s, d] : spans) {
    const double e = s + d;
    if (s >= end) {
      total += d;
      end = e;
    } else if (e > end) {
      total += e - end;
      end = e;
    }
  }
  return total;
}

struct ExecutableStats {
  std::string label, device;
  std::vector<std::string> kernel_names;
  double compile_us = -1;  // -1: compiled before the profile
  int runs = 0, kernels_per_run = 0, runs_with_kernels = 0;
  double host_us = 0, busy_us = 0, idle_us = 0;
  struct Kernel {
    std::string name;
    double us = 0;  // total device time
    int launches = 0;
    int64_t bytes = 0;
    std::map<std::string, int> bound;  // roofline class -> launches with it
  };
  std::map<int, Kernel> kernels;  // by kernel index
};

std::string majority(const std::map<std::string, int>& votes) {
  std::string best;
  int n = -1;
  for (const auto& [k, v] : votes)
    if (v > n) best = k, n = v;
  return best;
}

}  // namespace

Roofline roofline(int64_t bytes, int64_t flops, bool tensor_math, double dur_us, const Peaks& peaks) {
  Roofline r;
  const double t = std::max(dur_us, 1e-3) * 1e-6;  // seconds
  r.gbps = double(bytes) / t / 1e9;
  r.gflops = double(flops) / t / 1e9;
  r.intensity = bytes > 0 ? double(flops) / double(bytes) : 0;
  const double p = tensor_math && peaks.matrix_flops_per_s > 0 ? peaks.matrix_flops_per_s : peaks.flops_per_s;
  const bool known = peaks.bytes_per_s > 0 && p > 0;
  if (!known) {
    r.bound = dur_us < peaks.launch_floor_us && bytes < (int64_t(1) << 20) ? "launch-bound" : "unknown";
    return r;
  }
  const double ideal = std::max(double(bytes) / peaks.bytes_per_s, double(flops) / p);
  r.roof_fraction = ideal / t;
  if (dur_us < peaks.launch_floor_us && r.roof_fraction < 0.5)
    r.bound = "launch-bound";
  else
    r.bound = r.intensity < p / peaks.bytes_per_s ? "memory-bound" : "compute-bound";
  return r;
}

std::string profile_report(const std::vector<ExecutableRecord>& executables, const std::vector<RunRecord>& runs,
                           double wall_us) {
  std::map<uint64_t, int> order;  // executable -> position in the report
  std::vector<ExecutableStats> stats;
  auto entry = [&](uint64_t id) -> ExecutableStats& {
    auto [it, fresh] = order.emplace(id, int(stats.size()));
    if (fresh) {
      stats.emplace_back();
      stats.back().label = absl::StrCat("graph #", id);
    }
    return stats[size_t(it->second)];
  };
  double compile_total = 0;
  for (const ExecutableRecord& e : executables) {
    ExecutableStats& s = entry(e.executable);
    s.kernel_names = e.kernels;
    s.compile_us = e.compile_us;
    compile_total += e.compile_us;
  }
  int64_t launched = 0;
  double host_total = 0, busy_total = 0;
  for (const RunRecord& r : runs) {
    ExecutableStats& s = entry(r.executable);
    s.device = r.device;
    s.runs++;
    s.kernels_per_run = r.kernels_per_run;
    s.host_us += r.host_us;
    host_total += r.host_us;
    launched += r.kernels_per_run;
    if (r.kernels.empty()) continue;
    s.runs_with_kernels++;
    std::vector<std::pair<double, double>> spans;
    double first = 1e300, last = -1e300;
    for (const ReportKernel& k : r.kernels) {
      spans.emplace_back(k.run.start_us, k.run.dur_us);
      first = std::min(first, k.run.start_us);
      last = std::max(last, k.run.start_us + k.run.dur_us);
      ExecutableStats::Kernel& e = s.kernels[k.run.kernel];
      e.name = k.run.name;
      e.us += k.run.dur_us;
      e.launches++;
      e.bytes = k.run.bytes;
      e.bound[k.bound]++;
    }
    const double busy = busy_us(spans);
    s.busy_us += busy;
    s.idle_us += std::max(0.0, (last - first) - busy);
    busy_total += busy;
  }

  std::string out = absl::StrFormat("kiln profile report: %.3f ms of wall time\n", wall_us / 1000);
  absl::StrAppendFormat(&out,
                        "totals: %d runs (graphs realized), %d executables compiled (%.3f ms compiling), %d kernels "
                        "launched, host %.1f us in runs, device busy %.1f us\n",
                        int(runs.size()), int(executables.size()), compile_total / 1000, int(launched), host_total,
                        busy_total);
  for (const ExecutableStats& s : stats) {
    absl::StrAppend(&out, "\n", s.label);
    if (!s.kernel_names.empty()) {
      absl::StrAppend(&out, " (", s.kernel_names.size(), " kernel", s.kernel_names.size() == 1 ? "" : "s");
      for (size_t i = 0; i < s.kernel_names.size() && i < 4; ++i) absl::StrAppend(&out, i ? ", " : ": ", s.kernel_names[i]);
      out += s.kernel_names.size() > 4 ? ", ...)" : ")";
    }
    if (!s.device.empty()) absl::StrAppend(&out, " on ", s.device);
    if (s.compile_us >= 0)
      absl::StrAppendFormat(&out, ", compiled in %.3f ms", s.compile_us / 1000);
    else
      out += " (compiled before the profile began)";
    out += "\n";
    if (s.runs == 0) {
      out += "  not run during the profile\n";
      continue;
    }
    absl::StrAppendFormat(&out, "  runs %d, kernels per run %d, host %.1f us per run (%.1f us per kernel)\n", s.runs,
                          s.kernels_per_run, s.host_us / s.runs, s.host_us / s.runs / std::max(1, s.kernels_per_run));
    if (s.runs_with_kernels == 0) {
      out += "  device time not measured (no kernel spans: executables loaded before a Vulkan profile began have no "
             "timestamps)\n";
      continue;
    }
    absl::StrAppendFormat(&out, "  device busy %.1f us per run, idle between kernels %.1f us per run\n",
                          s.busy_us / s.runs_with_kernels, s.idle_us / s.runs_with_kernels);
    for (const auto& [k, e] : s.kernels)
      absl::StrAppendFormat(&out, "  %-28s %10.1f us in all, %5.1f%% of device time, %.1f us per launch, %s\n", e.name,
                            e.us, s.busy_us > 0 ? 100.0 * e.us / s.busy_us : 0.0, e.us / e.launches, majority(e.bound));
  }

  std::vector<std::string> advice;
  int small_runs = 0;
  double small_host = 0, small_busy = 0;
  for (const ExecutableStats& s : stats)
    if (s.runs > 0 && s.kernels_per_run <= 2) {
      small_runs += s.runs;
      small_host += s.host_us;
      small_busy += s.busy_us;
    }
  if (small_runs >= 16 && small_host > small_busy)
    advice.push_back(absl::StrFormat(
        "%d realizes ran graphs of at most 2 kernels each, spending %.1f us on the host against %.1f us on the device: "
        "a loop that realizes every step separately. Record the loop body once with kiln::jit, or realize once after "
        "the loop so kiln fuses the steps into fewer kernels and one launch.",
        small_runs, small_host, small_busy));
  if (executables.size() >= 8)
    advice.push_back(absl::StrFormat(
        "%d separate graphs were compiled (%.3f ms): graphs that differ only in shapes or constants compile again; "
        "keep shapes fixed where you can, or use kiln::jit for the repeated part.",
        int(executables.size()), compile_total / 1000));
  for (const ExecutableStats& s : stats) {
    if (s.runs >= 4 && s.runs_with_kernels > 0 && s.host_us / s.runs > 2 * (s.busy_us / s.runs_with_kernels))
      advice.push_back(absl::StrFormat(
          "%s: the host spends %.1f us per run to launch %.1f us of device work; call it through kiln::jit (a replay "
          "costs a few us of host time) or give each realize more work.",
          s.label, s.host_us / s.runs, s.busy_us / s.runs_with_kernels));
    if (s.runs_with_kernels > 0) {
      const double idle = s.idle_us / s.runs_with_kernels, busy = s.busy_us / s.runs_with_kernels;
      if (idle > 5 && idle > 0.3 * (idle + busy))
        advice.push_back(absl::StrFormat("%s: the device idles %.1f us per run between its kernels (%.0f%% of the run).",
                                         s.label, idle, 100 * idle / (idle + busy)));
    }
    int shown = 0;
    for (const auto& [k, e] : s.kernels) {
      // Only kernels that matter: a tenth of their graph's device time or more.
      if (majority(e.bound) != "launch-bound" || shown >= 5 || e.us < 0.1 * s.busy_us) continue;
      ++shown;
      advice.push_back(absl::StrFormat(
          "kernel %s (%s) is launch-bound: %.1f us for %s; it needs more work per launch (a larger batch, or fusion "
          "with its neighbours) to use the device.",
          e.name, s.label, e.us / e.launches, human_bytes(e.bytes)));
    }
  }
  if (compile_total > 0.5 * wall_us && wall_us > 0)
    advice.push_back(absl::StrFormat(
        "compiling took %.3f of the profile's %.3f ms: shapes that repeat replay without compiling, and the on-disk "
        "kernel cache (KILN_CACHE_DIR) makes the next process start warm.",
        compile_total / 1000, wall_us / 1000));
  out += "\nrecommendations:\n";
  if (advice.empty()) out += "  none: nothing stood out\n";
  for (size_t i = 0; i < advice.size(); ++i) absl::StrAppend(&out, "  ", i + 1, ". ", advice[i], "\n");
  return out;
}

}  // namespace kiln::support

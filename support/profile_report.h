// The analysis behind a profile: the roofline of one kernel, and the launch-overhead report of a
// whole profile (what kiln::profile writes beside the trace as <trace>.report.txt and prints at
// KILN_DEBUG=1). Pure functions of what the trace collected (trace.h), so they are tested on
// made-up runs as well as real ones.
//
// Roofline class of a kernel that took `t` us, moving B bytes and doing F operations, on a
// device with peaks BW (bytes/s) and P (ops/s; the matrix peak for 16-bit matrix math):
//   launch-bound   t < the device's launch floor (10 us on GPUs) and the ideal time
//                  max(B / BW, F / P) is under half of t: launching and ramping up dominate;
//   memory-bound   otherwise, when F / B is below the ridge P / BW;
//   compute-bound  otherwise;
//   unknown        the device's peaks are unknown (set KILN_PEAK_GBPS and KILN_PEAK_GFLOPS);
//                  a kernel under the launch floor moving under 1 MiB is still launch-bound.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "support/trace.h"

namespace kiln::support {

struct Roofline {
  double gbps = 0, gflops = 0;  // achieved
  double intensity = 0;         // operations per byte
  double roof_fraction = -1;    // ideal time / actual time; -1 when peaks are unknown
  std::string bound;            // launch-bound, memory-bound, compute-bound, unknown
};
Roofline roofline(int64_t bytes, int64_t flops, bool tensor_math, double dur_us, const Peaks& peaks);

// A kernel as the report sees it: what ran, and its class.
struct ReportKernel {
  KernelRun run;
  std::string bound;
  std::string device;
};

struct RunRecord {
  uint64_t executable = 0;
  std::string device;
  int kernels_per_run = 0;
  double host_start_us = 0, host_us = 0;
  std::vector<ReportKernel> kernels;
};

// An executable compiled while profiling (the report calls every executable "graph #<id>").
struct ExecutableRecord {
  uint64_t executable = 0;
  std::vector<std::string> kernels;
  double compile_us = 0;
  size_t graph_nodes = 0;
};

// The report: totals (runs = realizes that ran a graph, compiles, kernels launched), then per
// executable: runs, kernels per run, host us per run and per kernel, device busy us per run and
// the device's idle time between its kernels, then numbered recommendations.
std::string profile_report(const std::vector<ExecutableRecord>& executables, const std::vector<RunRecord>& runs,
                           double wall_us);

}  // namespace kiln::support

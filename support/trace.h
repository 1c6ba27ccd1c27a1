// Tracing for kiln::profile and KILN_PROFILE: spans on a host track per thread and on one track
// per device, collected in memory while a profile is on and written as a Chrome trace / Perfetto
// JSON file ({"traceEvents": [...]}, "X" events in microseconds on one steady clock). Besides the
// spans, a profile keeps what its report needs (profile_report.h): each run of an executable
// (its host span and the kernels it launched, with their costs and roofline) and, for each
// executable compiled while profiling, a way to draw its graph. When no profile is on, a span
// costs one relaxed atomic load.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace kiln::support {

namespace trace_detail {
extern std::atomic<bool> on;
}

inline bool tracing() { return trace_detail::on.load(std::memory_order_relaxed); }

// Microseconds on the trace's clock.
int64_t trace_now_us();
double trace_now_us_precise();

// Tracks: host spans go on their thread's track; device spans on the device's own.
inline constexpr int kHostTrack = 0;  // the calling thread's track
int device_track(const std::string& device);

// One complete span; `args_json` is "" or the members of a JSON object ("\"tiles\": 4").
void trace_event(const std::string& name, const char* category, double start_us, double dur_us, int track = kHostTrack,
                 const std::string& args_json = "");

// A host span from construction to destruction (nothing when no profile is on).
class TraceSpan {
 public:
  explicit TraceSpan(const char* name, const char* category = "host")
      : name_(name), category_(category), start_(tracing() ? trace_now_us_precise() : -1) {}
  ~TraceSpan() {
    if (start_ >= 0) trace_event(name_, category_, start_, trace_now_us_precise() - start_);
  }
  TraceSpan(const TraceSpan&) = delete;
  TraceSpan& operator=(const TraceSpan&) = delete;

 private:
  const char* name_;
  const char* category_;
  double start_;
};

// What a device can do at best, for the roofline of its kernels; 0 = unknown. `source` says
// where the numbers come from (driver attributes, a measurement, KILN_PEAK_*).
struct Peaks {
  double bytes_per_s = 0;         // memory bandwidth
  double flops_per_s = 0;         // vector arithmetic (f32)
  double matrix_flops_per_s = 0;  // 16-bit matrix math (tensor cores); 0: same as flops_per_s
  double launch_floor_us = 10;    // below this a kernel's time is mostly launch and ramp-up
  std::string source;
};

// `p` with the peaks set by KILN_PEAK_GBPS / KILN_PEAK_GFLOPS / KILN_PEAK_MATRIX_GFLOPS put in.
Peaks with_peak_overrides(Peaks p);

// One kernel a device ran, as the backend saw it.
struct KernelRun {
  std::string name;
  int kernel = 0;  // index among its executable's kernels
  double start_us = 0, dur_us = 0;  // on the trace's clock
  int64_t bytes = 0, flops = 0;     // runtime::CompiledKernel's estimates
  bool tensor_math = false;
  std::string computes;            // graph nodes it computes
};

// Records `k` as a span on `device`'s track, with its bytes, flops, achieved GB/s and GFLOP/s,
// the peaks and its roofline class, and attaches it to the thread's current TraceRun.
void trace_kernel(const std::string& device, const KernelRun& k, const Peaks& peaks, const std::string& extra_args = "");

// One run of an executable (kiln's replay of a compiled graph), from construction to
// destruction: the host time it took and the kernels traced meanwhile on this thread.
class TraceRun {
 public:
  TraceRun(uint64_t executable, const std::string& device, int kernels_per_run);
  ~TraceRun();
  TraceRun(const TraceRun&) = delete;
  TraceRun& operator=(const TraceRun&) = delete;

 private:
  int index_ = -1;  // in the collector's runs; -1 when no profile is on
  TraceRun* outer_ = nullptr;
  friend void trace_kernel(const std::string&, const KernelRun&, const Peaks&, const std::string&);
};

// Draws an executable's graph (Graphviz text) with each kernel coloured by its share of the
// device time: `kernel_us[k]` is kernel k's total time in the profile.
using GraphPicture = std::function<std::string(const std::vector<double>& kernel_us)>;

// Registers an executable compiled while profiling: its kernel names, how long compiling took,
// the graph's node count and a picture of it.
void trace_executable(uint64_t executable, const std::vector<std::string>& kernels, double compile_us,
                      size_t graph_nodes, GraphPicture picture);

// Work to do whenever a profile starts, before its clock starts (a backend measuring its peaks,
// so that the measurement does not land inside the first traced run).
void add_trace_start_hook(std::function<void()> hook);

// Starts collecting (dropping anything collected before); false when a profile is already on.
bool trace_start();

// What a finished profile hands back.
struct TraceResult {
  std::string json;    // the Chrome trace
  std::string report;  // the launch-overhead report (profile_report.h)
  struct Picture {
    uint64_t executable = 0;
    std::string dot;
    size_t nodes = 0;
  };
  std::vector<Picture> pictures;  // one per executable compiled while profiling that ran
};

// Stops collecting and returns the trace, its report and pictures.
TraceResult trace_stop();

}  // namespace kiln::support

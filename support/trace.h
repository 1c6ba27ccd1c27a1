// Tracing for kiln::profile and KILN_PROFILE: spans on a host track per thread and on one track
// per device, collected in memory while a profile is on and written as a Chrome trace / Perfetto
// JSON file ({"traceEvents": [...]}, "X" events in microseconds on one steady clock). When no
// profile is on, a span costs one relaxed atomic load.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

namespace kiln::support {

namespace trace_detail {
extern std::atomic<bool> on;
}

inline bool tracing() { return trace_detail::on.load(std::memory_order_relaxed); }

// Microseconds on the trace's clock.
int64_t trace_now_us();

// Tracks: host spans go on their thread's track; device spans on the device's own.
inline constexpr int kHostTrack = 0;  // the calling thread's track
int device_track(const std::string& device);

// One complete span; `args_json` is "" or the members of a JSON object ("\"tiles\": 4").
void trace_event(const std::string& name, const char* category, int64_t start_us, int64_t dur_us, int track = kHostTrack,
                 const std::string& args_json = "");

// A host span from construction to destruction (nothing when no profile is on).
class TraceSpan {
 public:
  explicit TraceSpan(const char* name, const char* category = "host")
      : name_(name), category_(category), start_(tracing() ? trace_now_us() : -1) {}
  ~TraceSpan() {
    if (start_ >= 0) trace_event(name_, category_, start_, trace_now_us() - start_);
  }
  TraceSpan(const TraceSpan&) = delete;
  TraceSpan& operator=(const TraceSpan&) = delete;

 private:
  const char* name_;
  const char* category_;
  int64_t start_;
};

// Starts collecting (dropping anything collected before); false when a profile is already on.
bool trace_start();
// Stops collecting and returns the trace as JSON.
std::string trace_stop();

}  // namespace kiln::support

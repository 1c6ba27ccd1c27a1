// The in-memory trace of trace.h.
#include "support/trace.h"

#include <chrono>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"

namespace kiln::support {

namespace trace_detail {
std::atomic<bool> on{false};
}

namespace {

struct Event {
  std::string name, args;
  const char* category;
  int64_t start, dur;
  int tid;
};

struct Collector {
  std::mutex mu;
  std::vector<Event> events;
  std::map<std::string, int> device_tracks;       // device name -> tid
  std::map<std::thread::id, int> host_tracks;     // thread -> tid
};

Collector& collector() {
  static Collector* c = new Collector();  // never destroyed: spans may end during exit
  return *c;
}

std::string escape(const std::string& s) {
  std::string r;
  for (char ch : s) {
    if (ch == '"' || ch == '\\') r += '\\';
    if (static_cast<unsigned char>(ch) < 0x20) {
      r += ' ';
      continue;
    }
    r += ch;
  }
  return r;
}

}  // namespace

int64_t trace_now_us() {
  using namespace std::chrono;
  return duration_cast<microseconds>(steady_clock::now().time_since_epoch()).count();
}

int device_track(const std::string& device) {
  Collector& c = collector();
  std::lock_guard<std::mutex> lock(c.mu);
  auto it = c.device_tracks.find(device);
  if (it != c.device_tracks.end()) return it->second;
  int tid = 1000 + int(c.device_tracks.size());
  c.device_tracks.emplace(device, tid);
  return tid;
}

void trace_event(const std::string& name, const char* category, int64_t start_us, int64_t dur_us, int track,
                 const std::string& args_json) {
  if (!tracing()) return;
  Collector& c = collector();
  std::lock_guard<std::mutex> lock(c.mu);
  int tid = track;
  if (track == kHostTrack) {
    auto [it, fresh] = c.host_tracks.emplace(std::this_thread::get_id(), int(c.host_tracks.size()) + 1);
    (void)fresh;
    tid = it->second;
  }
  c.events.push_back(Event{name, args_json, category, start_us, dur_us, tid});
}

bool trace_start() {
  Collector& c = collector();
  std::lock_guard<std::mutex> lock(c.mu);
  if (trace_detail::on.load()) return false;
  c.events.clear();
  c.host_tracks.clear();
  c.device_tracks.clear();
  trace_detail::on.store(true);
  return true;
}

std::string trace_stop() {
  Collector& c = collector();
  std::lock_guard<std::mutex> lock(c.mu);
  trace_detail::on.store(false);
  std::string out = "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
  bool first = true;
  auto add = [&](const std::string& e) {
    absl::StrAppend(&out, first ? "" : ",\n", e);
    first = false;
  };
  for (const auto& [thread, tid] : c.host_tracks)
    add(absl::StrCat("{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 1, \"tid\": ", tid,
                     ", \"args\": {\"name\": \"host thread ", tid, "\"}}"));
  for (const auto& [device, tid] : c.device_tracks)
    add(absl::StrCat("{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 1, \"tid\": ", tid,
                     ", \"args\": {\"name\": \"device ", escape(device), "\"}}"));
  for (const Event& e : c.events)
    add(absl::StrCat("{\"ph\": \"X\", \"name\": \"", escape(e.name), "\", \"cat\": \"", e.category, "\", \"pid\": 1, \"tid\": ",
                     e.tid, ", \"ts\": ", e.start, ", \"dur\": ", e.dur, ", \"args\": {", e.args, "}}"));
  out += "\n]}\n";
  c.events.clear();
  return out;
}

}  // namespace kiln::support

// The in-memory trace of trace.h.
#include "support/trace.h"

#include <chrono>
#include <map>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "support/options.h"
#include "support/profile_report.h"

namespace kiln::support {

namespace trace_detail {
std::atomic<bool> on{false};
}

namespace {

struct Event {
  std::string name, args;
  const char* category;
  double start, dur;
  int tid;
};

struct Executable {
  ExecutableRecord record;
  GraphPicture picture;
};

struct Collector {
  std::mutex mu;
  std::vector<Event> events;
  std::map<std::string, int> device_tracks;       // device name -> tid
  std::map<std::thread::id, int> host_tracks;     // thread -> tid
  std::vector<RunRecord> runs;
  std::vector<Executable> executables;
  double started_us = 0;
  std::vector<std::function<void()>> start_hooks;
};

Collector& collector() {
  static Collector* c = new Collector();  // never destroyed: spans may end during exit
  return *c;
}

thread_local TraceRun* current_run = nullptr;

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

std::string number(double v) { return absl::StrFormat("%.3f", v); }

}  // namespace

int64_t trace_now_us() {
  using namespace std::chrono;
  return duration_cast<microseconds>(steady_clock::now().time_since_epoch()).count();
}

double trace_now_us_precise() {
  using namespace std::chrono;
  return duration<double, std::micro>(steady_clock::now().time_since_epoch()).count();
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

void trace_event(const std::string& name, const char* category, double start_us, double dur_us, int track,
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

Peaks with_peak_overrides(Peaks p) {
  const Options o = options();
  if (o.peak_gbps <= 0 && o.peak_gflops <= 0 && o.peak_matrix_gflops <= 0) return p;
  if (o.peak_gbps > 0) p.bytes_per_s = o.peak_gbps * 1e9;
  if (o.peak_gflops > 0) p.flops_per_s = o.peak_gflops * 1e9;
  if (o.peak_matrix_gflops > 0) p.matrix_flops_per_s = o.peak_matrix_gflops * 1e9;
  p.source = p.source.empty() ? "KILN_PEAK_*" : p.source + "; KILN_PEAK_* override";
  return p;
}

void trace_kernel(const std::string& device, const KernelRun& k, const Peaks& peaks, const std::string& extra_args) {
  if (!tracing()) return;
  const Roofline r = roofline(k.bytes, k.flops, k.tensor_math, k.dur_us, peaks);
  std::string args = absl::StrCat("\"bytes\": ", k.bytes, ", \"flops\": ", k.flops, ", \"GB/s\": ", number(r.gbps),
                                  ", \"GFLOP/s\": ", number(r.gflops), ", \"flops per byte\": ", number(r.intensity),
                                  ", \"roofline\": \"", r.bound, "\"");
  if (r.roof_fraction >= 0) absl::StrAppend(&args, ", \"fraction of roofline\": ", number(r.roof_fraction));
  absl::StrAppend(&args, ", \"peak GB/s\": ", number(peaks.bytes_per_s / 1e9), ", \"peak GFLOP/s\": ",
                  number((k.tensor_math && peaks.matrix_flops_per_s > 0 ? peaks.matrix_flops_per_s : peaks.flops_per_s) / 1e9),
                  ", \"peaks from\": \"", escape(peaks.source), "\", \"computes\": \"", escape(k.computes), "\"");
  if (!extra_args.empty()) absl::StrAppend(&args, ", ", extra_args);
  trace_event(k.name, "kernel", k.start_us, k.dur_us, device_track(device), args);
  if (!current_run || current_run->index_ < 0) return;
  Collector& c = collector();
  std::lock_guard<std::mutex> lock(c.mu);
  if (size_t(current_run->index_) < c.runs.size())
    c.runs[size_t(current_run->index_)].kernels.push_back(ReportKernel{k, r.bound, device});
}

TraceRun::TraceRun(uint64_t executable, const std::string& device, int kernels_per_run) {
  if (!tracing()) return;
  Collector& c = collector();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    index_ = int(c.runs.size());
    RunRecord r;
    r.executable = executable;
    r.device = device;
    r.kernels_per_run = kernels_per_run;
    r.host_start_us = trace_now_us_precise();
    c.runs.push_back(std::move(r));
  }
  outer_ = current_run;
  current_run = this;
}

TraceRun::~TraceRun() {
  if (index_ < 0) return;
  current_run = outer_;
  const double now = trace_now_us_precise();
  Collector& c = collector();
  std::lock_guard<std::mutex> lock(c.mu);
  if (size_t(index_) < c.runs.size()) c.runs[size_t(index_)].host_us = now - c.runs[size_t(index_)].host_start_us;
}

void trace_executable(uint64_t executable, const std::vector<std::string>& kernels, double compile_us,
                      size_t graph_nodes, GraphPicture picture) {
  if (!tracing()) return;
  Collector& c = collector();
  std::lock_guard<std::mutex> lock(c.mu);
  Executable e;
  e.record.executable = executable;
  e.record.kernels = kernels;
  e.record.compile_us = compile_us;
  e.record.graph_nodes = graph_nodes;
  e.picture = std::move(picture);
  c.executables.push_back(std::move(e));
}

void add_trace_start_hook(std::function<void()> hook) {
  Collector& c = collector();
  std::lock_guard<std::mutex> lock(c.mu);
  c.start_hooks.push_back(std::move(hook));
}

bool trace_start() {
  Collector& c = collector();
  std::vector<std::function<void()>> hooks;
  {
    std::lock_guard<std::mutex> lock(c.mu);
    if (trace_detail::on.load()) return false;
    hooks = c.start_hooks;
  }
  for (const auto& h : hooks) h();
  std::lock_guard<std::mutex> lock(c.mu);
  if (trace_detail::on.load()) return false;
  c.events.clear();
  c.host_tracks.clear();
  c.device_tracks.clear();
  c.runs.clear();
  c.executables.clear();
  c.started_us = trace_now_us_precise();
  trace_detail::on.store(true);
  return true;
}

TraceResult trace_stop() {
  Collector& c = collector();
  std::vector<Executable> executables;
  std::vector<RunRecord> runs;
  TraceResult out;
  double wall_us = 0;
  {
    std::lock_guard<std::mutex> lock(c.mu);
    trace_detail::on.store(false);
    wall_us = trace_now_us_precise() - c.started_us;
    std::string& json = out.json;
    json = "{\"displayTimeUnit\": \"ms\", \"traceEvents\": [\n";
    bool first = true;
    auto add = [&](const std::string& e) {
      absl::StrAppend(&json, first ? "" : ",\n", e);
      first = false;
    };
    for (const auto& [thread, tid] : c.host_tracks)
      add(absl::StrCat("{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 1, \"tid\": ", tid,
                       ", \"args\": {\"name\": \"host thread ", tid, "\"}}"));
    for (const auto& [device, tid] : c.device_tracks)
      add(absl::StrCat("{\"ph\": \"M\", \"name\": \"thread_name\", \"pid\": 1, \"tid\": ", tid,
                       ", \"args\": {\"name\": \"device ", escape(device), "\"}}"));
    for (const Event& e : c.events)
      add(absl::StrCat("{\"ph\": \"X\", \"name\": \"", escape(e.name), "\", \"cat\": \"", e.category,
                       "\", \"pid\": 1, \"tid\": ", e.tid, ", \"ts\": ", number(e.start), ", \"dur\": ", number(e.dur),
                       ", \"args\": {", e.args, "}}"));
    json += "\n]}\n";
    c.events.clear();
    executables.swap(c.executables);
    runs.swap(c.runs);
  }
  std::vector<ExecutableRecord> records;
  for (const Executable& e : executables) records.push_back(e.record);
  out.report = profile_report(records, runs, wall_us);
  for (const Executable& e : executables) {
    std::vector<double> us(e.record.kernels.size(), 0.0);
    bool ran = false;
    for (const RunRecord& r : runs) {
      if (r.executable != e.record.executable) continue;
      ran = true;
      for (const ReportKernel& k : r.kernels)
        if (k.run.kernel >= 0 && size_t(k.run.kernel) < us.size()) us[size_t(k.run.kernel)] += k.run.dur_us;
    }
    if (ran && e.picture) out.pictures.push_back(TraceResult::Picture{e.record.executable, e.picture(us), e.record.graph_nodes});
  }
  return out;
}

}  // namespace kiln::support

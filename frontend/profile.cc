// kiln::profile and KILN_PROFILE over support/trace.h.
#include "kiln/profile.h"

#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "frontend/lazy.h"
#include "kiln/error.h"
#include "support/dump.h"
#include "support/options.h"
#include "support/trace.h"

namespace kiln {
namespace {

absl::Status write_file(const std::string& path, const std::string& text) {
  std::ofstream f(path, std::ios::trunc);
  if (!f || !(f << text) || !f.flush()) return absl::PermissionDeniedError(absl::StrCat("profile: cannot write ", path));
  return absl::OkStatus();
}

// "<dir>/trace.json" -> "<dir>/trace": the stem the report and pictures are named after.
std::string stem_of(const std::string& path) {
  const size_t slash = path.find_last_of('/');
  const size_t dot = path.find_last_of('.');
  return dot != std::string::npos && (slash == std::string::npos || dot > slash) ? path.substr(0, dot) : path;
}

// Writes the trace, then beside it the report (<stem>.report.txt) and one picture per
// executable compiled while profiling (<stem>.graph<N>.dot for the report's "graph #N",
// rendered to .svg when Graphviz is installed). The report goes to stderr too at KILN_DEBUG=1.
absl::Status write_profile(const std::string& path, const support::TraceResult& r) {
  if (absl::Status s = write_file(path, r.json); !s.ok()) return s;
  const std::string stem = stem_of(path);
  if (absl::Status s = write_file(stem + ".report.txt", r.report); !s.ok()) return s;
  for (const support::TraceResult::Picture& p : r.pictures)
    support::write_graph(absl::StrCat(stem, ".graph", p.executable, ".dot"), p.dot, p.nodes, support::debug_level() >= 1);
  if (support::debug_level() >= 1) std::fprintf(stderr, "kiln: %s", r.report.c_str());
  return absl::OkStatus();
}

}  // namespace

void profile(const std::string& path, const std::function<void()>& fn) {
  if (!support::trace_start())
    throw Error(absl::FailedPreconditionError("profile: a profile is already being taken (one at a time; KILN_PROFILE?)"));
  try {
    fn();
  } catch (...) {
    (void)write_profile(path, support::trace_stop());
    throw;
  }
  if (absl::Status s = write_profile(path, support::trace_stop()); !s.ok()) throw Error(s);
}

namespace detail {

void start_env_profile() {
  static std::once_flag once;
  std::call_once(once, [] {
    const std::string path = support::options().profile;
    if (path.empty() || !support::trace_start()) return;
    static std::string* where = new std::string(path);
    std::atexit([] {
      absl::Status s = write_profile(*where, support::trace_stop());
      std::fprintf(stderr, "kiln: %s\n", s.ok() ? ("profile written to " + *where).c_str() : std::string(s.message()).c_str());
    });
  });
}

}  // namespace detail
}  // namespace kiln

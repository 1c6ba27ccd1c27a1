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
#include "support/options.h"
#include "support/trace.h"

namespace kiln {
namespace {

absl::Status write_trace(const std::string& path, const std::string& json) {
  std::ofstream f(path, std::ios::trunc);
  if (!f || !(f << json) || !f.flush()) return absl::PermissionDeniedError(absl::StrCat("profile: cannot write ", path));
  return absl::OkStatus();
}

}  // namespace

void profile(const std::string& path, const std::function<void()>& fn) {
  if (!support::trace_start())
    throw Error(absl::FailedPreconditionError("profile: a profile is already being taken (one at a time; KILN_PROFILE?)"));
  try {
    fn();
  } catch (...) {
    (void)write_trace(path, support::trace_stop());
    throw;
  }
  if (absl::Status s = write_trace(path, support::trace_stop()); !s.ok()) throw Error(s);
}

namespace detail {

void start_env_profile() {
  static std::once_flag once;
  std::call_once(once, [] {
    const std::string path = support::options().profile;
    if (path.empty() || !support::trace_start()) return;
    static std::string* where = new std::string(path);
    std::atexit([] {
      absl::Status s = write_trace(*where, support::trace_stop());
      std::fprintf(stderr, "kiln: %s\n", s.ok() ? ("profile written to " + *where).c_str() : std::string(s.message()).c_str());
    });
  });
}

}  // namespace detail
}  // namespace kiln

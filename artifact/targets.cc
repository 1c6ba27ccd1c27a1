// Parsing and resolving kilnc's --target list (targets.h).
#include "artifact/targets.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "runtime/registry.h"

namespace kiln::artifact {
namespace {

// Backends users may name that this build cannot compile for, and why.
const char* planned(const std::string& backend) {
  if (backend == "hip" && runtime::target_profile("hip", "gfx90a").status().code() == absl::StatusCode::kUnavailable)
    return "hip targets need the HIP compiler, which this kiln build lacks (comgr: install libamd-comgr-dev and rebuild)";
  return nullptr;
}

}  // namespace

absl::StatusOr<std::vector<TargetSpec>> parse_targets(const std::string& list) {
  std::vector<TargetSpec> out;
  std::vector<std::string> known = runtime::known_device_names();
  for (absl::string_view item : absl::StrSplit(list, ',')) {
    std::vector<std::string> parts = absl::StrSplit(item, absl::MaxSplits(':', 1));
    const std::string& backend = parts[0];
    if (backend.empty()) return absl::InvalidArgumentError(absl::StrCat("--target '", list, "': an empty target"));
    if (const char* why = planned(backend)) return absl::UnimplementedError(why);
    if (std::find(known.begin(), known.end(), backend) == known.end())
      return absl::InvalidArgumentError(absl::StrCat("unknown target backend '", backend, "'; known: ", absl::StrJoin(known, ", ")));
    if (parts.size() == 1) {
      out.push_back({backend, ""});
      continue;
    }
    for (absl::string_view p : absl::StrSplit(parts[1], '|')) {
      if (p.empty()) return absl::InvalidArgumentError(absl::StrCat("--target '", std::string(item), "': an empty profile"));
      out.push_back({backend, std::string(p)});
    }
  }
  for (size_t i = 0; i < out.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (out[i].label() == out[j].label()) return absl::InvalidArgumentError(absl::StrCat("target ", out[i].label(), " is listed twice"));
  return out;
}

absl::StatusOr<ir::TargetInfo> resolve(const TargetSpec& t) {
  if (!t.profile.empty()) return runtime::target_profile(t.backend, t.profile);
  auto d = runtime::get_device(t.backend);
  if (!d.ok()) {
    // A NotFound for an unknown profile lists the known ones after "known: ".
    std::string listed(runtime::target_profile(t.backend, "").status().message());
    size_t known = listed.find("known: ");
    return absl::Status(d.status().code(),
                        absl::StrCat("target ", t.backend, " without a profile means this machine's ", t.backend, " device, which is not available (",
                                     d.status().message(), ")", known == std::string::npos ? "" : absl::StrCat("; name a profile instead, ", listed.substr(known))));
  }
  return (*d)->target();
}

}  // namespace kiln::artifact

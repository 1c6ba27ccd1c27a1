// The Metal profiles of profiles.h.
#include "backends/metal/profiles.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/metal/target.h"

namespace kiln::runtime::metal {
namespace {

struct Gpu {
  const char* chip;
  int cores;
};

// The base and largest GPU of each M-series generation (Apple7 to Apple9 GPU families).
constexpr Gpu kGpus[] = {{"m1", 8},  {"m1-max", 32}, {"m2", 10}, {"m2-max", 38},
                         {"m3", 10}, {"m3-max", 40}, {"m4", 10}, {"m4-max", 40}};

}  // namespace

std::vector<std::string> profile_names() {
  std::vector<std::string> r;
  for (const Gpu& g : kGpus) r.push_back(g.chip);
  return r;
}

absl::StatusOr<ir::TargetInfo> target_profile(const std::string& name) {
  for (const Gpu& g : kGpus)
    if (name == g.chip) return metal_target_info(g.chip, g.cores);
  return absl::NotFoundError(absl::StrCat("no metal profile '", name, "'; known: ", absl::StrJoin(profile_names(), ", ")));
}

}  // namespace kiln::runtime::metal

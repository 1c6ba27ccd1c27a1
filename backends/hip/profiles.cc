// The HIP profiles of profiles.h.
#include "backends/hip/profiles.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/hip/target.h"

namespace kiln::runtime::hip {
namespace {

struct Gpu {
  const char* gfx;
  int compute_units;
};

// MI100, MI210 / MI250X (one die), MI300X, Radeon RX 7900 XTX.
constexpr Gpu kGpus[] = {{"gfx908", 120}, {"gfx90a", 104}, {"gfx942", 304}, {"gfx1100", 96}};

}  // namespace

std::vector<std::string> profile_names() {
  std::vector<std::string> r;
  for (const Gpu& g : kGpus) r.push_back(g.gfx);
  return r;
}

absl::StatusOr<ir::TargetInfo> target_profile(const std::string& name) {
  for (const Gpu& g : kGpus)
    if (name == g.gfx) return hip_target_info(g.gfx, g.compute_units);
  return absl::NotFoundError(absl::StrCat("no hip profile '", name, "'; known: ", absl::StrJoin(profile_names(), ", ")));
}

}  // namespace kiln::runtime::hip

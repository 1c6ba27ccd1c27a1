// The CUDA profiles of profiles.h.
#include "backends/cuda/profiles.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/cuda/target.h"

namespace kiln::runtime::cuda {
namespace {

struct Gpu {
  int cc;
  int sm_count;
  int64_t shared_optin;
};

// T4, A100, RTX A6000, L4, H100 SXM, B200, RTX PRO 6000 Blackwell.
constexpr Gpu kGpus[] = {{75, 40, 65536},   {80, 108, 166912}, {86, 84, 101376}, {89, 58, 101376},
                         {90, 132, 232448}, {100, 148, 232448}, {120, 188, 101376}};

}  // namespace

std::vector<std::string> profile_names() {
  std::vector<std::string> r;
  for (const Gpu& g : kGpus) r.push_back(absl::StrCat("sm_", g.cc));
  return r;
}

absl::StatusOr<ir::TargetInfo> target_profile(const std::string& name) {
  for (const Gpu& g : kGpus)
    if (name == absl::StrCat("sm_", g.cc) || name == absl::StrCat("sm", g.cc)) return cuda_target_info(g.sm_count, g.shared_optin, g.cc);
  return absl::NotFoundError(absl::StrCat("no cuda profile '", name, "'; known: ", absl::StrJoin(profile_names(), ", ")));
}

}  // namespace kiln::runtime::cuda

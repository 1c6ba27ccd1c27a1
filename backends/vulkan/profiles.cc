// The Vulkan profiles of profiles.h, with the fields read_target (target.cc) fills in.
#include "backends/vulkan/profiles.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kiln::runtime::vk {
namespace {

// What differs between the known devices; the rest is what every Vulkan 1.3 device kiln uses has
// in common (read_target's fixed choices).
struct Profile {
  const char* name;
  bool is_gpu;
  int parallelism, subgroup_size, max_workgroup;
  int64_t shared_memory, max_buffer_range;
  bool f32_denormals;
  int coop_n;  // f16 cooperative matrices 16 x coop_n x 16 (0: none)
};
constexpr Profile kProfiles[] = {
    {"lavapipe", false, 8, 8, 1024, 32768, int64_t(1) << 31, false, 0},
    {"nvidia-sm90", true, 132, 32, 1024, 49152, 4292870144, false, 16},
};

ir::TargetInfo target_of(const Profile& p) {
  ir::TargetInfo t;
  t.name = "vulkan";
  t.vector_width = 4;
  t.max_fused_row = 8192;
  t.has_f16 = t.has_i8 = t.has_f64 = t.has_i64 = true;
  t.spirv_1_6 = true;
  t.scalar_layout = true;
  t.preserve_inf_nan16 = t.preserve_inf_nan32 = t.preserve_inf_nan64 = true;
  t.is_gpu = p.is_gpu;
  t.parallelism = p.parallelism;
  t.subgroup_size = p.subgroup_size;
  t.max_workgroup = p.max_workgroup;
  t.shared_memory = p.shared_memory;
  t.max_buffer_range = p.max_buffer_range;
  t.f32_denormals = p.f32_denormals;
  if (p.coop_n) {
    t.coop_m = t.coop_k = 16;
    t.coop_n = p.coop_n;
  }
  return t;
}

}  // namespace

std::vector<std::string> profile_names() {
  std::vector<std::string> r;
  for (const Profile& p : kProfiles) r.push_back(p.name);
  return r;
}

absl::StatusOr<ir::TargetInfo> target_profile(const std::string& name) {
  for (const Profile& p : kProfiles)
    if (name == p.name) return target_of(p);
  return absl::NotFoundError(absl::StrCat("no vulkan profile '", name, "'; known: ", absl::StrJoin(profile_names(), ", ")));
}

}  // namespace kiln::runtime::vk

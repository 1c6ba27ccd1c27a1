// The Vulkan profiles of profiles.h, with the fields read_target (target.cc) fills in.
#include "backends/vulkan/profiles.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kiln::runtime::vk {
namespace {

// What every Vulkan 1.3 device kiln uses has in common (read_target's fixed choices).
ir::TargetInfo vulkan13() {
  ir::TargetInfo t;
  t.name = "vulkan";
  t.vector_width = 4;
  t.max_fused_row = 8192;
  t.has_f16 = t.has_i8 = t.has_f64 = t.has_i64 = true;
  t.spirv_1_6 = true;
  t.scalar_layout = true;
  t.preserve_inf_nan16 = t.preserve_inf_nan32 = t.preserve_inf_nan64 = true;
  return t;
}

ir::TargetInfo lavapipe() {
  ir::TargetInfo t = vulkan13();
  t.is_gpu = false;
  t.parallelism = 8;
  t.subgroup_size = 8;
  t.max_workgroup = 1024;
  t.shared_memory = 32768;
  t.max_buffer_range = int64_t(1) << 31;
  t.f32_denormals = false;
  return t;
}

ir::TargetInfo nvidia_sm90() {
  ir::TargetInfo t = vulkan13();
  t.is_gpu = true;
  t.parallelism = 132;
  t.subgroup_size = 32;
  t.max_workgroup = 1024;
  t.shared_memory = 49152;
  t.max_buffer_range = 4292870144;
  t.f32_denormals = true;
  return t;
}

struct Profile {
  const char* name;
  ir::TargetInfo (*make)();
};
constexpr Profile kProfiles[] = {{"lavapipe", lavapipe}, {"nvidia-sm90", nvidia_sm90}};

}  // namespace

std::vector<std::string> profile_names() {
  std::vector<std::string> r;
  for (const Profile& p : kProfiles) r.push_back(p.name);
  return r;
}

absl::StatusOr<ir::TargetInfo> target_profile(const std::string& name) {
  for (const Profile& p : kProfiles)
    if (name == p.name) return p.make();
  return absl::NotFoundError(absl::StrCat("no vulkan profile '", name, "'; known: ", absl::StrJoin(profile_names(), ", ")));
}

}  // namespace kiln::runtime::vk

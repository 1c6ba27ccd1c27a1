// The CPU profiles of profiles.h: x86-64 micro-architecture levels as LLVM names them.
#include "backends/cpu/profiles.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace kiln::runtime::cpu {
namespace {

struct Level {
  const char* name;
  const char* features;  // what the level needs beyond x86-64 (SSE2)
};

constexpr const char* kV2 = "+cx16,+popcnt,+sahf,+sse3,+sse4.1,+sse4.2,+ssse3";
constexpr const char* kV3 = "+avx,+avx2,+bmi,+bmi2,+f16c,+fma,+lzcnt,+movbe,+xsave";
constexpr const char* kV4 = "+avx512bw,+avx512cd,+avx512dq,+avx512f,+avx512vl";

std::vector<Level> levels() {
  static const std::string v3 = absl::StrCat(kV2, ",", kV3), v4 = absl::StrCat(v3, ",", kV4);
  return {{"x86-64", ""}, {"x86-64-v2", kV2}, {"x86-64-v3", v3.c_str()}, {"x86-64-v4", v4.c_str()}};
}

}  // namespace

std::vector<std::string> profile_names() {
  std::vector<std::string> r;
  for (const Level& l : levels()) r.push_back(l.name);
  return r;
}

absl::StatusOr<ir::TargetInfo> target_profile(const std::string& name) {
  for (const Level& l : levels()) {
    if (name != l.name) continue;
    ir::TargetInfo t;
    t.name = "cpu";
    t.parallelism = kProfileThreads;
    t.vector_width = 8;
    t.max_fused_row = int64_t(1) << 40;  // as host_target (target.cc)
    t.cpu_name = l.name;
    t.cpu_features = l.features;
    return t;
  }
  return absl::NotFoundError(absl::StrCat("no cpu profile '", name, "'; known: ", absl::StrJoin(profile_names(), ", ")));
}

}  // namespace kiln::runtime::cpu

// The CPU TargetInfo, target key and key comparison of target.h (LLVM's host detection is in
// codegen/llvm/compile.cc, shared with the compiler's "host when empty").
#include "backends/cpu/target.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "codegen/llvm/compile.h"

namespace kiln::runtime::cpu {

absl::StatusOr<ir::TargetInfo> host_target(int threads) {
  auto host = codegen::cpu::resolve_cpu(ir::TargetInfo{});
  if (!host.ok()) return host.status();
  ir::TargetInfo t;
  t.name = "cpu";
  t.parallelism = threads;
  t.is_gpu = false;
  t.vector_width = 8;
  t.max_fused_row = int64_t(1) << 40;
  t.cpu_name = host->cpu;
  t.cpu_features = host->features;
  return t;
}

absl::StatusOr<std::string> target_key(const ir::TargetInfo& t) {
  auto c = codegen::cpu::resolve_cpu(t);
  if (!c.ok()) return c.status();
  return c->key();
}

namespace {

// Features of a key ("<triple> <cpu> <features>") that `other` lacks, at most a few.
std::string features_missing(const std::vector<std::string>& key, const std::vector<std::string>& other) {
  std::vector<std::string> mine, theirs, missing;
  if (key.size() > 2) mine = absl::StrSplit(key[2], ',', absl::SkipEmpty());
  if (other.size() > 2) theirs = absl::StrSplit(other[2], ',', absl::SkipEmpty());
  std::sort(theirs.begin(), theirs.end());
  for (const std::string& f : mine)
    if (!std::binary_search(theirs.begin(), theirs.end(), f)) missing.push_back(f);
  constexpr size_t kShown = 8;
  std::string more = missing.size() > kShown ? absl::StrCat(" and ", missing.size() - kShown, " more") : "";
  if (missing.size() > kShown) missing.resize(kShown);
  return missing.empty() ? "none" : absl::StrCat(absl::StrJoin(missing, ", "), more);
}

}  // namespace

bool key_compatible(const std::string& compiled, const std::string& here) {
  if (compiled == here) return true;
  std::vector<std::string> a = absl::StrSplit(compiled, absl::MaxSplits(' ', 2));
  std::vector<std::string> b = absl::StrSplit(here, absl::MaxSplits(' ', 2));
  if (a.size() < 2 || b.size() < 2 || a[0] != b[0]) return false;
  // A CPU name without a feature list stands for features only LLVM knows: exact keys only.
  if (a.size() < 3 || a[2].empty()) return false;
  std::vector<std::string> have;
  if (b.size() > 2) have = absl::StrSplit(b[2], ',', absl::SkipEmpty());
  std::sort(have.begin(), have.end());
  if (a.size() > 2)
    for (absl::string_view f : absl::StrSplit(a[2], ',', absl::SkipEmpty()))
      if (f[0] == '+' && !std::binary_search(have.begin(), have.end(), std::string(f))) return false;
  return true;
}

std::string describe_difference(const std::string& compiled, const std::string& here) {
  std::vector<std::string> a = absl::StrSplit(compiled, absl::MaxSplits(' ', 2));
  std::vector<std::string> b = absl::StrSplit(here, absl::MaxSplits(' ', 2));
  auto head = [](const std::vector<std::string>& k) { return absl::StrJoin(k.begin(), k.begin() + std::min<size_t>(k.size(), 2), " "); };
  return absl::StrCat("compiled for ", head(a), ", this CPU is ", head(b), "; features only in the program: ",
                      features_missing(a, b), "; only here: ", features_missing(b, a));
}

}  // namespace kiln::runtime::cpu

#include "backends/vulkan/spirv_access.h"

#include <cstdint>
#include <cstring>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace kiln::runtime::vk {
namespace {

constexpr uint32_t kMagic = 0x07230203u;
constexpr size_t kHeaderWords = 5;
constexpr uint32_t kOpSourceExtension = 4;
constexpr std::string_view kPrefix = "kiln.access ";

// Opcodes of the sections before the debug instructions (capabilities, extensions, imports,
// memory model, entry points, execution modes): the record goes right after them.
bool before_debug_section(uint32_t op) {
  return op == 10 || op == 11 || op == 14 || op == 15 || op == 16 || op == 17 || op == 331;
}

// The module's words, or an error when it is not a sequence of whole instructions.
absl::StatusOr<std::vector<uint32_t>> words_of(std::string_view spirv) {
  if (spirv.size() % 4 != 0 || spirv.size() < kHeaderWords * 4)
    return absl::InvalidArgumentError(absl::StrCat("a SPIR-V module of ", spirv.size(), " bytes"));
  std::vector<uint32_t> w(spirv.size() / 4);
  std::memcpy(w.data(), spirv.data(), spirv.size());
  if (w[0] != kMagic) return absl::InvalidArgumentError("not a SPIR-V module (bad magic number)");
  for (size_t i = kHeaderWords; i < w.size();) {
    const uint32_t n = w[i] >> 16;
    if (n == 0 || n > w.size() - i) return absl::InvalidArgumentError(absl::StrCat("a truncated SPIR-V instruction at word ", i));
    i += n;
  }
  return w;
}

// The literal string of the OpSourceExtension at `i`.
std::string_view literal(const std::vector<uint32_t>& w, size_t i) {
  const size_t n = w[i] >> 16;
  if (n < 2) return "";
  std::string_view bytes(reinterpret_cast<const char*>(&w[i + 1]), (n - 1) * 4);
  return bytes.substr(0, bytes.find('\0'));
}

absl::Status parse(std::string_view text, int num_buffers, KernelAccess* a) {
  std::vector<int>* list = nullptr;
  for (absl::string_view tok : absl::StrSplit(absl::string_view(text.data(), text.size()), ' ', absl::SkipEmpty())) {
    int id = 0;
    if (tok == "reads") list = &a->reads;
    else if (tok == "writes") list = &a->writes;
    else if (!list || !absl::SimpleAtoi(tok, &id) || id < 0 || id >= num_buffers)
      return absl::InvalidArgumentError(absl::StrCat("a bad access record '", std::string(text), "' (", num_buffers, " buffers)"));
    else list->push_back(id);
  }
  return absl::OkStatus();
}

}  // namespace

std::string record_access(std::string_view spirv, const KernelAccess& a) {
  std::vector<uint32_t> w(spirv.size() / 4);
  std::memcpy(w.data(), spirv.data(), w.size() * 4);
  size_t at = kHeaderWords;
  while (at < w.size() && before_debug_section(w[at] & 0xffff) && (w[at] >> 16) > 0) at += w[at] >> 16;
  const std::string text =
      absl::StrCat(std::string(kPrefix), "reads ", absl::StrJoin(a.reads, " "), a.reads.empty() ? "" : " ", "writes ", absl::StrJoin(a.writes, " "));
  std::vector<uint32_t> inst(1 + (text.size() + 4) / 4, 0);  // the string, NUL-terminated, zero-padded
  inst[0] = (uint32_t(inst.size()) << 16) | kOpSourceExtension;
  std::memcpy(&inst[1], text.data(), text.size());
  w.insert(w.begin() + std::ptrdiff_t(std::min(at, w.size())), inst.begin(), inst.end());
  return std::string(reinterpret_cast<const char*>(w.data()), w.size() * 4);
}

absl::StatusOr<KernelAccess> read_access(std::string_view spirv, int num_buffers) {
  auto w = words_of(spirv);
  if (!w.ok()) return w.status();
  for (size_t i = kHeaderWords; i < w->size(); i += (*w)[i] >> 16) {
    if (((*w)[i] & 0xffff) != kOpSourceExtension) continue;
    std::string_view text = literal(*w, i);
    if (text.substr(0, kPrefix.size()) != kPrefix) continue;
    KernelAccess a;
    if (absl::Status s = parse(text.substr(kPrefix.size()), num_buffers, &a); !s.ok()) return s;
    return a;
  }
  return absl::InvalidArgumentError("no kiln.access record (not made by kiln's Vulkan compiler)");
}

}  // namespace kiln::runtime::vk

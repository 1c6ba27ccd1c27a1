#include "backends/vulkan/spirv_module.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace kiln::runtime::vk {
namespace {

constexpr uint32_t kMagic = 0x07230203u;
constexpr size_t kHeaderWords = 5;

}  // namespace

absl::StatusOr<std::vector<uint32_t>> spirv_words(std::string_view spirv) {
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

}  // namespace kiln::runtime::vk

#include "backends/vulkan/spirv_float_controls.h"

#include <cstddef>
#include <utility>

namespace kiln::runtime::vk {
namespace {

constexpr uint32_t kOpExecutionMode = 16, kOpEntryPoint = 15, kOpCapability = 17;
constexpr uint32_t kCapFloat16 = 9, kCapFloat64 = 10, kCapDenormPreserve = 4464, kCapSignedZeroInfNanPreserve = 4466;
constexpr uint32_t kModeDenormPreserve = 4459, kModeSignedZeroInfNanPreserve = 4461;
constexpr size_t kHeaderWords = 5;

uint32_t word0(uint32_t op, uint32_t words) { return (words << 16) | op; }

}  // namespace

std::vector<uint32_t> add_float_controls(const std::vector<uint32_t>& spirv, const FloatControls& fc) {
  if (!fc.any() || spirv.size() <= kHeaderWords) return spirv;
  // Walk the instructions: which capabilities exist, where the capability section and the
  // entry point / execution mode section end, and the entry point's id.
  bool has16 = false, has64 = false, has_cap = false;  // has_cap: already has float controls
  size_t after_caps = kHeaderWords, after_modes = 0;
  uint32_t entry = 0;
  for (size_t i = kHeaderWords; i < spirv.size();) {
    uint32_t op = spirv[i] & 0xffff, n = spirv[i] >> 16;
    if (n == 0 || i + n > spirv.size()) return spirv;  // malformed: leave it to the validator
    if (op == kOpCapability) {
      after_caps = i + n;
      has16 |= spirv[i + 1] == kCapFloat16;
      has64 |= spirv[i + 1] == kCapFloat64;
      has_cap |= spirv[i + 1] == kCapSignedZeroInfNanPreserve || spirv[i + 1] == kCapDenormPreserve;
    }
    if (op == kOpEntryPoint) {
      if (entry) return spirv;  // several entry points: not a kiln kernel
      entry = spirv[i + 2];
      after_modes = i + n;
    }
    if (op == kOpExecutionMode) after_modes = i + n;
    i += n;
  }
  if (!entry || has_cap) return spirv;
  std::vector<std::pair<uint32_t, uint32_t>> modes;  // (execution mode, width)
  if (fc.preserve_inf_nan32) modes.push_back({kModeSignedZeroInfNanPreserve, 32});
  if (fc.preserve_inf_nan16 && has16) modes.push_back({kModeSignedZeroInfNanPreserve, 16});
  if (fc.preserve_inf_nan64 && has64) modes.push_back({kModeSignedZeroInfNanPreserve, 64});
  if (fc.preserve_denorm32) modes.push_back({kModeDenormPreserve, 32});
  if (modes.empty()) return spirv;

  std::vector<uint32_t> out(spirv.begin(), spirv.begin() + after_caps);
  for (uint32_t cap : {kCapSignedZeroInfNanPreserve, kCapDenormPreserve}) {
    uint32_t mode = cap == kCapDenormPreserve ? kModeDenormPreserve : kModeSignedZeroInfNanPreserve;
    bool used = false;
    for (const auto& m : modes) used |= m.first == mode;
    if (!used) continue;
    out.push_back(word0(kOpCapability, 2));
    out.push_back(cap);
  }
  out.insert(out.end(), spirv.begin() + after_caps, spirv.begin() + after_modes);
  for (const auto& [mode, width] : modes) {
    out.push_back(word0(kOpExecutionMode, 4));
    out.push_back(entry);
    out.push_back(mode);
    out.push_back(width);
  }
  out.insert(out.end(), spirv.begin() + after_modes, spirv.end());
  return out;
}

}  // namespace kiln::runtime::vk

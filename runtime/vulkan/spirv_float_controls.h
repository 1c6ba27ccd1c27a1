// Adds SPIR-V float-controls execution modes to a compiled kernel: SignedZeroInfNanPreserve keeps
// IEEE inf/NaN/-0 semantics (without it, drivers may fold x * 0.0 to 0 and similar), for each
// float width the module uses and the device supports (VkPhysicalDeviceFloatControlsProperties).
#pragma once

#include <cstdint>
#include <vector>

namespace kiln::runtime::vk {

struct FloatControls {
  bool preserve_inf_nan16 = false, preserve_inf_nan32 = false, preserve_inf_nan64 = false;
  bool any() const { return preserve_inf_nan16 || preserve_inf_nan32 || preserve_inf_nan64; }
};

// `spirv` must be a valid module (SPIR-V 1.4+, where float controls are core). Returns it with
// the capability and one execution mode per width added to its single entry point.
std::vector<uint32_t> add_float_controls(const std::vector<uint32_t>& spirv, const FloatControls& fc);

}  // namespace kiln::runtime::vk

// Adds SPIR-V float-controls execution modes to a compiled kernel, for each float width the
// module uses and the device supports (VkPhysicalDeviceFloatControlsProperties):
// SignedZeroInfNanPreserve keeps IEEE inf/NaN/-0 semantics (drivers may otherwise fold x * 0.0
// to 0), DenormPreserve keeps f32 denormals (GPUs otherwise flush them: log(1e-40) = -inf).
#pragma once

#include <cstdint>
#include <vector>

namespace kiln::runtime::vk {

struct FloatControls {
  bool preserve_inf_nan16 = false, preserve_inf_nan32 = false, preserve_inf_nan64 = false;
  bool preserve_denorm32 = false;
  bool any() const { return preserve_inf_nan16 || preserve_inf_nan32 || preserve_inf_nan64 || preserve_denorm32; }
};

// `spirv` must be a valid module (SPIR-V 1.4+, where float controls are core). Returns it with
// the capabilities and one execution mode per width and behaviour added to its entry point.
std::vector<uint32_t> add_float_controls(const std::vector<uint32_t>& spirv, const FloatControls& fc);

}  // namespace kiln::runtime::vk

// A Vulkan device's peaks for profiles' rooflines (support/trace.h: Peaks). Vulkan reports
// neither memory bandwidth nor arithmetic throughput, so both are measured on the device, once,
// when the first profile starts (before its clock, so that the probe is not in the trace):
//   bandwidth  a grid-stride vec4 copy between two device buffers, bytes read + written over its
//              GPU time, growing from 16 MiB until a run takes 2 ms (at most 256 MiB);
//   f32 FLOP/s a kernel of 8 independent FMA chains per thread in registers (2 flops each),
//              iterations growing until a run takes 2 ms;
// each timed with timestamp queries, best of 3 runs. What is measured is what a well-written
// kernel reaches, a little under the data sheet; KILN_PEAK_* override it. Devices without
// timestamps on the compute queue (or a probe that fails) keep the peaks unknown and say why.
#pragma once

#include "backends/vulkan/context.h"
#include "support/trace.h"

namespace kiln::runtime::vk {

// Measures (first call) or returns the measured peaks of `c`'s device, KILN_PEAK_* applied.
support::Peaks device_peaks(Context& c);

}  // namespace kiln::runtime::vk

// place_attention: decides where attention runs as ONE fused kernel.
//
// `attention` is a graph op (graph.h) that only a flash-attention kernel computes well: scores,
// online softmax and the weighted sum of v never leave the multiprocessor. Targets that have
// such a kernel (TargetInfo::fused_attention) keep the op when its shape is one the kernel
// takes (16-bit floats, head dims 64 or 128); the written-out form of the same computation,
// `softmax(q @ k^T * scale + bias) @ v` with optional casts around the scores, is recognized and
// replaced by the op. Everywhere else (the CPU, Vulkan, other shapes) the op is expanded into
// primitives in f32 (dot, reductions, elementwise), which every backend runs and fuses. So a
// program gets the fused kernel when one exists and the same values (within rounding) when not.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"
#include "ir/target_info.h"

namespace kiln::passes {

// Whether target `t` runs attention over q, k, v of dtype `dt` with head dims `d` (q, k) and
// `dv` (v) as one kernel; `why` says why not.
bool attention_fast_path(const ir::TargetInfo& t, DType dt, int64_t d, int64_t dv, std::string* why);

// Returns `g` with every attention op kept or expanded, and (on targets with the fused kernel)
// written-out attentions recognized. `decisions` gets one line per decision (KILN_DEBUG=2).
ir::Graph place_attention(const ir::Graph& g, const ir::TargetInfo& t, std::vector<std::string>* decisions);

}  // namespace kiln::passes

// Well-formedness of the kernel IR (ir/program.h): what every backend relies on, checked once
// (passes::compile_graph verifies its result) instead of by each backend.
#pragma once

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "ir/program.h"

namespace kiln::ir {

// The memory plan and schedule alone (shared with runtime::CompiledProgram, which keeps these
// without the kernel bodies): input/output positions in range and each position bound once,
// intermediates inside the arena, steps naming one of `num_kernels` kernels and depending only
// on earlier steps, graph outputs naming buffers. InvalidArgument naming the first problem.
absl::Status verify_plan(const std::vector<BufferDesc>& buffers, const std::vector<Step>& steps, int num_kernels,
                         int64_t arena_bytes, int num_inputs, int num_outputs, const std::vector<int>& outputs);

// verify_plan, plus every kernel: well formed (Kernel::finalize's rules), loads and stores
// naming existing buffers, stores never into an input, a contraction's nodes in range.
absl::Status verify(const Program& p);

}  // namespace kiln::ir

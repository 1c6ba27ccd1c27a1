// The binding rules of Executable::run (runtime/device.h), checked in one place for every
// backend: as many inputs and outputs as the program has, each a buffer of the executable's
// device, each at least as large as the program's buffer at that position. InvalidArgument
// naming the position otherwise.
#pragma once

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "runtime/compiled_program.h"
#include "runtime/device.h"

namespace kiln::runtime {

absl::Status check_bindings(const std::string& backend, const Device* device, const std::vector<ir::BufferDesc>& buffers,
                            int num_inputs, int num_outputs, const std::vector<Buffer*>& inputs,
                            const std::vector<Buffer*>& outputs, size_t num_params, const ParamValues& params);

}  // namespace kiln::runtime

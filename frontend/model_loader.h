// For tools: a kiln::Model from an artifact already in memory (kilnc run compiles an .ir file
// into one and runs it through the same path as a .kiln file). `origin` names it in errors.
#pragma once

#include <string>

#include "artifact/artifact.h"
#include "kiln/model.h"
#include "runtime/device.h"

namespace kiln::detail {

Model load_model(const artifact::Artifact& a, runtime::Device* device, const std::string& origin);

}  // namespace kiln::detail

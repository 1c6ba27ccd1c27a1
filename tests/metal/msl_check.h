// The strongest check of generated MSL available off Apple platforms: clang parses and
// type-checks it as C++17 against tests/metal/shim/metal_stdlib (a stand-in for Apple's standard
// library, with MSL's address spaces as clang address spaces and no double), with float
// conversions that MSL would not make implicitly as errors; and every [[attribute]] the source
// uses must be one of MSL's that kiln's kernels need. Apple's own compiler is not available here.
#pragma once

#include <string>

namespace kiln::testing_msl {

// Whether the clang the build found (KILN_CLANGXX) exists.
bool available();
// Checks one MSL translation unit; false with clang's diagnostics (or the unknown attribute) in
// *log.
bool check(const std::string& source, std::string* log);

}  // namespace kiln::testing_msl

// Test helper: assembles PTX with the CUDA toolkit's ptxas, as the driver would on the GPU.
#pragma once

#include <string>

namespace kiln::testing_ptxas {

// Whether the toolkit found at build time has ptxas.
bool available();
// Runs `ptxas -arch=<arch>` on `ptx`; false with ptxas's output in *log when it fails.
bool assemble(const std::string& ptx, const std::string& arch, std::string* log);

}  // namespace kiln::testing_ptxas

// Registers the CPU backend. Rank 0: the default device only where no GPU backend opens.
#include "backends/cpu/compiler.h"
#include "backends/cpu/device.h"
#include "backends/cpu/profiles.h"
#include "runtime/registry.h"

namespace kiln::runtime::cpu {
namespace {

KILN_REGISTER_BACKEND(Backend{"cpu", 0, &CpuDevice::create, &CpuCompiler::create, &target_profile});

}  // namespace
}  // namespace kiln::runtime::cpu

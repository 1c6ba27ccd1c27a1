// Registers the CUDA backend (runtime/registry.h): the device-free Compiler (compiler.h) and the
// Device (device.h). Rank 30: a CUDA GPU is the default device wherever one is present.
#include "backends/cuda/compiler.h"
#include "backends/cuda/device.h"
#include "backends/cuda/profiles.h"
#include "runtime/registry.h"

namespace kiln::runtime::cuda {
namespace {

KILN_REGISTER_BACKEND(Backend{"cuda", 30, &CudaDevice::create, &CudaCompiler::create, &target_profile, &CudaDevice::create_at,
                              &CudaDevice::default_ordinal});

}  // namespace
}  // namespace kiln::runtime::cuda

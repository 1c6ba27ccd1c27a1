// Loading the HIP runtime (libamdhip64) by dlopen, as the CUDA backend loads libcuda: one build
// runs everywhere and says why "hip" is unavailable ("no HIP runtime", "no AMD GPU") instead of
// failing to start. Types and enums come from the ROCm headers (libamdhip64-dev); each entry
// point below is looked up by name in whichever libamdhip64 the machine has (.so, .so.6, .so.5).
#pragma once

#include <hip/hip_runtime_api.h>

#include <string>

#include "absl/status/statusor.h"

namespace kiln::runtime::hip {

struct HipApi {
  int runtime_version = 0;  // hipRuntimeGetVersion
  std::string library;      // the file that was loaded
  hipError_t (*hipInit)(unsigned) = nullptr;
  hipError_t (*hipGetDeviceCount)(int*) = nullptr;
  hipError_t (*hipSetDevice)(int) = nullptr;
  // ROCm 6 keeps ROCm 5's hipDeviceProp_t layout (the one in kiln's headers) under
  // hipGetDevicePropertiesR0000; ROCm 5 under hipGetDeviceProperties.
  hipError_t (*hipGetDeviceProperties)(hipDeviceProp_t*, int) = nullptr;
  const char* (*hipGetErrorName)(hipError_t) = nullptr;
  hipError_t (*hipStreamCreateWithFlags)(hipStream_t*, unsigned) = nullptr;
  hipError_t (*hipStreamSynchronize)(hipStream_t) = nullptr;
  hipError_t (*hipMalloc)(void**, size_t) = nullptr;
  hipError_t (*hipFree)(void*) = nullptr;
  hipError_t (*hipMemcpy)(void*, const void*, size_t, hipMemcpyKind) = nullptr;
  hipError_t (*hipMemset)(void*, int, size_t) = nullptr;
  hipError_t (*hipEventCreateWithFlags)(hipEvent_t*, unsigned) = nullptr;
  hipError_t (*hipEventRecord)(hipEvent_t, hipStream_t) = nullptr;
  hipError_t (*hipEventSynchronize)(hipEvent_t) = nullptr;
  hipError_t (*hipEventDestroy)(hipEvent_t) = nullptr;
  hipError_t (*hipModuleLoadData)(hipModule_t*, const void*) = nullptr;
  hipError_t (*hipModuleUnload)(hipModule_t) = nullptr;
  hipError_t (*hipModuleGetFunction)(hipFunction_t*, hipModule_t, const char*) = nullptr;
  hipError_t (*hipModuleLaunchKernel)(hipFunction_t, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
                                      hipStream_t, void**, void**) = nullptr;
  hipError_t (*hipGraphCreate)(hipGraph_t*, unsigned) = nullptr;
  hipError_t (*hipGraphDestroy)(hipGraph_t) = nullptr;
  hipError_t (*hipGraphAddKernelNode)(hipGraphNode_t*, hipGraph_t, const hipGraphNode_t*, size_t,
                                      const hipKernelNodeParams*) = nullptr;
  hipError_t (*hipGraphInstantiate)(hipGraphExec_t*, hipGraph_t, hipGraphNode_t*, char*, size_t) = nullptr;
  hipError_t (*hipGraphExecDestroy)(hipGraphExec_t) = nullptr;
  hipError_t (*hipGraphExecKernelNodeSetParams)(hipGraphExec_t, hipGraphNode_t, const hipKernelNodeParams*) = nullptr;
  hipError_t (*hipGraphLaunch)(hipGraphExec_t, hipStream_t) = nullptr;
};

// The HIP runtime, loaded once; Unavailable ("no HIP runtime ...") when no libamdhip64 loads or
// one lacks an entry point kiln needs.
absl::StatusOr<const HipApi*> load_api();

// OK, or an error naming `what` and HIP's name for `e` (hipErrorOutOfMemory is
// ResourceExhausted, hipErrorNoDevice Unavailable, the rest Internal).
absl::Status hip_check(const HipApi& api, hipError_t e, const std::string& what);

}  // namespace kiln::runtime::hip

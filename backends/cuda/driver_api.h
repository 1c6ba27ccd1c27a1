// The CUDA driver API, loaded from libcuda.so.1 at run time.
//
// kiln never links libcuda: a binary linked to it (even to the toolkit's stub) does not start on
// a machine without a driver. cuda.h gives the types; each entry point is fetched with
// cuGetProcAddress for the CUDA_VERSION of that header, so its ABI is the one the header
// declares (cuMemAlloc -> cuMemAlloc_v2, cuGraphAddKernelNode -> _v2, ...). cuda.h maps the
// plain names to the versioned ones, so `api.cuMemAlloc(...)` calls the right one.
#pragma once

#include <cuda.h>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kiln::runtime::cuda {

#define KILN_CUDA_DRIVER_FUNCTIONS(X)                                                                     \
  X(cuGetErrorName) X(cuGetErrorString) X(cuDeviceGetCount) X(cuDeviceGet) X(cuDeviceGetName)             \
  X(cuDeviceGetAttribute) X(cuDeviceTotalMem) X(cuDevicePrimaryCtxRetain) X(cuDevicePrimaryCtxRelease)    \
  X(cuCtxSetCurrent) X(cuCtxSynchronize) X(cuMemGetInfo) X(cuMemAlloc) X(cuMemFree) X(cuMemcpyHtoDAsync)  \
  X(cuMemcpyDtoH) X(cuMemsetD8Async) X(cuModuleLoadData) X(cuModuleUnload) X(cuModuleGetFunction)         \
  X(cuFuncSetAttribute) X(cuStreamCreate) X(cuStreamDestroy) X(cuStreamSynchronize) X(cuEventCreate)      \
  X(cuEventDestroy) X(cuEventRecord) X(cuEventSynchronize) X(cuEventQuery) X(cuEventElapsedTime)          \
  X(cuGraphCreate) X(cuGraphDestroy) X(cuGraphAddKernelNode) X(cuGraphInstantiateWithFlags)               \
  X(cuGraphExecDestroy) X(cuGraphExecKernelNodeSetParams) X(cuGraphLaunch) X(cuTensorMapEncodeTiled)            \
  X(cuFuncGetAttribute) X(cuOccupancyMaxActiveClusters) X(cuLaunchKernel) X(cuMemHostAlloc) X(cuMemFreeHost) X(cuMemcpyDtoHAsync)        \
  X(cuStreamWaitEvent) X(cuGraphConditionalHandleCreate) X(cuGraphAddNode) X(cuGraphKernelNodeSetParams)                  \
  X(cuStreamBeginCapture) X(cuStreamEndCapture) X(cuGraphAddChildGraphNode) X(cuGraphExecChildGraphNodeSetParams)   \
  X(cuStreamCreateWithPriority) X(cuCtxGetStreamPriorityRange) X(cuGraphGetNodes) X(cuGraphNodeGetType)     \
  X(cuGraphKernelNodeGetParams)

struct DriverApi {
  int driver_version = 0;  // cuDriverGetVersion: 1000 * major + 10 * minor
#define KILN_CUDA_DECLARE(name) decltype(&::name) name = nullptr;
  KILN_CUDA_DRIVER_FUNCTIONS(KILN_CUDA_DECLARE)
#undef KILN_CUDA_DECLARE
};

// Loads libcuda.so.1 and calls cuInit(0) once per process. Errors (Unavailable) say why:
// "cuda: no driver (libcuda.so.1 not found)", "cuda: no CUDA device", a driver too old, ...
absl::StatusOr<const DriverApi*> driver();

// The driver API after a successful driver(); only for code that runs once driver() succeeded.
const DriverApi& api();

// True once exit() has begun: destructors that run then (static tensors, jit traces) leave
// CUDA objects to the process teardown instead of calling a driver that may be shutting down.
bool process_exiting();

// "cuda: <what> failed: CUDA_ERROR_X (description)" with a status code matching the error:
// out of memory -> ResourceExhausted, no device -> Unavailable, bad arguments -> InvalidArgument,
// anything else -> Internal.
absl::Status cu_error(CUresult r, absl::string_view what);

// OkStatus for CUDA_SUCCESS, else cu_error.
inline absl::Status cu_check(CUresult r, absl::string_view what) {
  return r == CUDA_SUCCESS ? absl::OkStatus() : cu_error(r, what);
}

}  // namespace kiln::runtime::cuda

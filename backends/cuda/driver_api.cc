// Loading libcuda.so.1 (dlopen, cuGetProcAddress for every entry point) and the error mapping of driver_api.h.
#include "backends/cuda/driver_api.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>

#include "absl/strings/str_cat.h"

namespace kiln::runtime::cuda {
namespace {

DriverApi g_api;
std::atomic<bool> g_exiting{false};

absl::Status load(DriverApi* a) {
  // RTLD_LOCAL: the driver's symbols stay out of the global namespace.
  void* lib = ::dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
  if (!lib) return absl::UnavailableError("cuda: no driver (libcuda.so.1 not found)");
  // These two have kept their ABI since CUDA 2; everything else comes through cuGetProcAddress.
  auto init = reinterpret_cast<decltype(&::cuInit)>(::dlsym(lib, "cuInit"));
  auto get_version = reinterpret_cast<decltype(&::cuDriverGetVersion)>(::dlsym(lib, "cuDriverGetVersion"));
  auto get_proc = reinterpret_cast<decltype(&::cuGetProcAddress)>(::dlsym(lib, "cuGetProcAddress_v2"));
  if (!init || !get_version) return absl::UnavailableError("cuda: libcuda.so.1 lacks cuInit (not a CUDA driver?)");
  int version = 0;
  if (get_version(&version) != CUDA_SUCCESS) version = 0;
  a->driver_version = version;
  if (version < CUDA_VERSION || !get_proc) {
    return absl::UnavailableError(absl::StrCat("cuda: the driver supports CUDA ", version / 1000, ".", version % 1000 / 10,
                                               "; this kiln build needs a driver for CUDA ", CUDA_VERSION / 1000, ".",
                                               CUDA_VERSION % 1000 / 10, " or newer"));
  }
  CUresult r = init(0);
  if (r == CUDA_ERROR_NO_DEVICE) return absl::UnavailableError("cuda: no CUDA device");
  if (r != CUDA_SUCCESS) {
    return absl::UnavailableError(absl::StrCat("cuda: cuInit failed with error ", int(r)));
  }
  std::string missing;
  auto fetch = [&](const char* name, void** slot) {
    CUdriverProcAddressQueryResult found = CU_GET_PROC_ADDRESS_SYMBOL_NOT_FOUND;
    if (get_proc(name, slot, CUDA_VERSION, CU_GET_PROC_ADDRESS_DEFAULT, &found) != CUDA_SUCCESS ||
        found != CU_GET_PROC_ADDRESS_SUCCESS || !*slot) {
      *slot = nullptr;
      absl::StrAppend(&missing, missing.empty() ? "" : ", ", name);
    }
  };
  // #name is the plain name (cuMemAlloc); a->name is the member of the versioned prototype.
#define KILN_CUDA_FETCH(name) fetch(#name, reinterpret_cast<void**>(&a->name));
  KILN_CUDA_DRIVER_FUNCTIONS(KILN_CUDA_FETCH)
#undef KILN_CUDA_FETCH
  if (!missing.empty()) return absl::UnavailableError(absl::StrCat("cuda: the driver lacks ", missing));
  int count = 0;
  if (a->cuDeviceGetCount(&count) != CUDA_SUCCESS || count == 0) return absl::UnavailableError("cuda: no CUDA device");
  // Registered after cuInit: runs before the driver's own exit handlers, and before the
  // destructors of statics that were built before this point.
  std::atexit([] { g_exiting = true; });
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<const DriverApi*> driver() {
  static std::once_flag once;
  static absl::Status status;
  std::call_once(once, [] { status = load(&g_api); });
  if (!status.ok()) return status;
  return &g_api;
}

const DriverApi& api() { return g_api; }

bool process_exiting() { return g_exiting; }

absl::Status cu_error(CUresult r, absl::string_view what) {
  const char* name = nullptr;
  const char* text = nullptr;
  if (g_api.cuGetErrorName) g_api.cuGetErrorName(r, &name);
  if (g_api.cuGetErrorString) g_api.cuGetErrorString(r, &text);
  std::string msg = absl::StrCat("cuda: ", what, " failed: ", name ? std::string(name) : absl::StrCat("error ", int(r)),
                                 text ? absl::StrCat(" (", text, ")") : std::string());
  switch (r) {
    case CUDA_ERROR_OUT_OF_MEMORY: return absl::ResourceExhaustedError(msg);
    case CUDA_ERROR_NO_DEVICE:
    case CUDA_ERROR_NOT_INITIALIZED:
    case CUDA_ERROR_DEINITIALIZED: return absl::UnavailableError(msg);
    case CUDA_ERROR_INVALID_VALUE:
    case CUDA_ERROR_INVALID_IMAGE:
    case CUDA_ERROR_NOT_FOUND:
    case CUDA_ERROR_INVALID_HANDLE: return absl::InvalidArgumentError(msg);
    default: return absl::InternalError(msg);
  }
}

}  // namespace kiln::runtime::cuda

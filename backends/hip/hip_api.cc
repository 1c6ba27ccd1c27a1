// Loading libamdhip64 (hip_api.h).
#include "backends/hip/hip_api.h"

#include <dlfcn.h>

#include <mutex>

#include "absl/strings/str_cat.h"

namespace kiln::runtime::hip {
namespace {

absl::StatusOr<HipApi> load() {
  HipApi a;
  void* lib = nullptr;
  std::string tried;
  for (const char* name : {"libamdhip64.so", "libamdhip64.so.6", "libamdhip64.so.5"}) {
    lib = ::dlopen(name, RTLD_NOW | RTLD_LOCAL);
    if (lib) {
      a.library = name;
      break;
    }
    absl::StrAppend(&tried, tried.empty() ? "" : "; ", dlerror());
  }
  if (!lib) return absl::UnavailableError(absl::StrCat("no HIP runtime (", tried, ")"));
  std::string missing;
  auto sym = [&](auto* fn, const char* name, const char* alternative = nullptr) {
    void* p = ::dlsym(lib, name);
    if (!p && alternative) p = ::dlsym(lib, alternative);
    if (!p) absl::StrAppend(&missing, missing.empty() ? "" : ", ", name);
    *fn = reinterpret_cast<std::remove_pointer_t<decltype(fn)>>(p);
  };
  sym(&a.hipInit, "hipInit");
  sym(&a.hipGetDeviceCount, "hipGetDeviceCount");
  sym(&a.hipSetDevice, "hipSetDevice");
  sym(&a.hipGetDeviceProperties, "hipGetDevicePropertiesR0000", "hipGetDeviceProperties");
  sym(&a.hipGetErrorName, "hipGetErrorName");
  sym(&a.hipStreamCreateWithFlags, "hipStreamCreateWithFlags");
  sym(&a.hipStreamSynchronize, "hipStreamSynchronize");
  sym(&a.hipMalloc, "hipMalloc");
  sym(&a.hipMemset, "hipMemset");
  sym(&a.hipFree, "hipFree");
  sym(&a.hipMemcpy, "hipMemcpy");
  sym(&a.hipEventCreateWithFlags, "hipEventCreateWithFlags");
  sym(&a.hipEventRecord, "hipEventRecord");
  sym(&a.hipEventSynchronize, "hipEventSynchronize");
  sym(&a.hipEventDestroy, "hipEventDestroy");
  sym(&a.hipModuleLoadData, "hipModuleLoadData");
  sym(&a.hipModuleUnload, "hipModuleUnload");
  sym(&a.hipModuleGetFunction, "hipModuleGetFunction");
  sym(&a.hipModuleLaunchKernel, "hipModuleLaunchKernel");
  sym(&a.hipGraphCreate, "hipGraphCreate");
  sym(&a.hipGraphDestroy, "hipGraphDestroy");
  sym(&a.hipGraphAddKernelNode, "hipGraphAddKernelNode");
  sym(&a.hipGraphInstantiate, "hipGraphInstantiate");
  sym(&a.hipGraphExecDestroy, "hipGraphExecDestroy");
  sym(&a.hipGraphExecKernelNodeSetParams, "hipGraphExecKernelNodeSetParams");
  sym(&a.hipGraphLaunch, "hipGraphLaunch");
  hipError_t (*version)(int*) = nullptr;
  sym(&version, "hipRuntimeGetVersion");
  if (!missing.empty())
    return absl::UnavailableError(absl::StrCat("no usable HIP runtime (", a.library, " lacks ", missing, ")"));
  if (version(&a.runtime_version) != hipSuccess) a.runtime_version = 0;
  return a;
}

}  // namespace

absl::StatusOr<const HipApi*> load_api() {
  static std::once_flag once;
  static absl::StatusOr<HipApi>* api = nullptr;
  std::call_once(once, [] { api = new absl::StatusOr<HipApi>(load()); });  // never unloaded
  if (!api->ok()) return api->status();
  return &**api;
}

absl::Status hip_check(const HipApi& api, hipError_t e, const std::string& what) {
  if (e == hipSuccess) return absl::OkStatus();
  const char* name = api.hipGetErrorName ? api.hipGetErrorName(e) : nullptr;
  std::string msg = absl::StrCat("hip: ", what, " failed: ", name ? name : "error ", name ? "" : absl::StrCat(int(e)));
  if (e == hipErrorOutOfMemory) return absl::ResourceExhaustedError(msg);
  if (e == hipErrorNoDevice) return absl::UnavailableError(msg);
  return absl::InternalError(msg);
}

}  // namespace kiln::runtime::hip

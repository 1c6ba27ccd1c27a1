// The table of backends and their device singletons.
#include <memory>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/device.h"
#include "runtime/stats.h"

namespace kiln::runtime {

// Each backend's factory; defined in runtime/<backend>/ when that backend is built.
absl::StatusOr<std::unique_ptr<Device>> create_cpu_device();
#ifdef KILN_HAVE_VULKAN
absl::StatusOr<std::unique_ptr<Device>> create_vulkan_device();
bool vulkan_device_is_cpu(Device* d);
#endif
#ifdef KILN_HAVE_CUDA
absl::StatusOr<std::unique_ptr<Device>> create_cuda_device();
#endif
#ifdef KILN_HAVE_HIP
absl::StatusOr<std::unique_ptr<Device>> create_hip_device();
#endif

Counters& counters() {
  static Counters c;
  return c;
}

namespace {

struct Entry {
  const char* name;
  absl::StatusOr<std::unique_ptr<Device>> (*create)();
  std::once_flag once;
  absl::StatusOr<std::unique_ptr<Device>> device = absl::UnknownError("not created");
};

#ifndef KILN_HAVE_LLVM
absl::StatusOr<std::unique_ptr<Device>> cpu_missing() {
  return absl::UnavailableError("cpu: this kiln build has no CPU backend (built with KILN_WITH_LLVM=OFF)");
}
#endif
absl::StatusOr<std::unique_ptr<Device>> not_built_metal() {
  return absl::UnavailableError("metal: the Metal backend runs only on macOS; this build has no Metal runtime");
}
#ifndef KILN_HAVE_VULKAN
absl::StatusOr<std::unique_ptr<Device>> not_built_vulkan() {
  return absl::UnavailableError("vulkan: this kiln build has no Vulkan backend (KILN_WITH_VULKAN=OFF or no Vulkan SDK)");
}
#endif
#ifndef KILN_HAVE_CUDA
absl::StatusOr<std::unique_ptr<Device>> not_built_cuda() {
  return absl::UnavailableError("cuda: this kiln build has no CUDA backend (no CUDA toolkit with NVRTC at build time)");
}
#endif
#ifndef KILN_HAVE_HIP
absl::StatusOr<std::unique_ptr<Device>> not_built_hip() {
  return absl::UnavailableError("hip: this kiln build has no HIP backend (no hiprtc at build time)");
}
#endif

Entry* table() {
  static Entry entries[] = {
#ifdef KILN_HAVE_LLVM
      {"cpu", create_cpu_device, {}, absl::UnknownError("")},
#else
      {"cpu", cpu_missing, {}, absl::UnknownError("")},
#endif
#ifdef KILN_HAVE_VULKAN
      {"vulkan", create_vulkan_device, {}, absl::UnknownError("")},
#else
      {"vulkan", not_built_vulkan, {}, absl::UnknownError("")},
#endif
#ifdef KILN_HAVE_CUDA
      {"cuda", create_cuda_device, {}, absl::UnknownError("")},
#else
      {"cuda", not_built_cuda, {}, absl::UnknownError("")},
#endif
#ifdef KILN_HAVE_HIP
      {"hip", create_hip_device, {}, absl::UnknownError("")},
#else
      {"hip", not_built_hip, {}, absl::UnknownError("")},
#endif
      {"metal", not_built_metal, {}, absl::UnknownError("")},
  };
  return entries;
}
constexpr int kNumEntries = 5;

}  // namespace

std::vector<std::string> known_device_names() {
  std::vector<std::string> r;
  for (int i = 0; i < kNumEntries; ++i) r.push_back(table()[i].name);
  return r;
}

absl::StatusOr<Device*> get_device(const std::string& name) {
  for (int i = 0; i < kNumEntries; ++i) {
    Entry& e = table()[i];
    if (name != e.name) continue;
    std::call_once(e.once, [&e] { e.device = e.create(); });
    if (!e.device.ok()) return e.device.status();
    return e.device->get();
  }
  return absl::NotFoundError(absl::StrCat("unknown device '", name, "'; known devices: ",
                                          absl::StrJoin(known_device_names(), ", ")));
}

Device* best_device() {
  if (auto d = get_device("cuda"); d.ok()) return *d;
#ifdef KILN_HAVE_VULKAN
  if (auto d = get_device("vulkan"); d.ok() && !vulkan_device_is_cpu(*d)) return *d;
#endif
  if (auto d = get_device("cpu"); d.ok()) return *d;
  return nullptr;
}

}  // namespace kiln::runtime

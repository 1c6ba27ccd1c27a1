#include "backends/vulkan/vk_api.h"

#include <dlfcn.h>

#include <atomic>
#include <cstdlib>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "support/options.h"

namespace kiln::runtime::vk {

PFN_vkGetInstanceProcAddr vkGetInstanceProcAddr = nullptr;
#define KILN_VK_DEFINE(name) PFN_##name name = nullptr;
KILN_VK_GLOBAL_FUNCTIONS(KILN_VK_DEFINE)
KILN_VK_INSTANCE_FUNCTIONS(KILN_VK_DEFINE)
#undef KILN_VK_DEFINE
PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV vkGetPhysicalDeviceCooperativeMatrixPropertiesNV = nullptr;
PFN_vkCmdBeginConditionalRenderingEXT vkCmdBeginConditionalRenderingEXT = nullptr;
PFN_vkCmdEndConditionalRenderingEXT vkCmdEndConditionalRenderingEXT = nullptr;

absl::Status load_loader() {
  static std::once_flag once;
  static absl::Status status;
  std::call_once(once, [] {
    // The loader stays open for the life of the process: function pointers escape into objects.
    const std::string loader = support::options().vulkan_loader;
    const std::string name = loader.empty() ? "libvulkan.so.1" : loader;
    void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
      const char* why = dlerror();
      status = absl::UnavailableError(absl::StrCat("vulkan: no Vulkan loader (", name, "): ", why ? why : "dlopen failed"));
      return;
    }
    vkGetInstanceProcAddr = reinterpret_cast<PFN_vkGetInstanceProcAddr>(dlsym(lib, "vkGetInstanceProcAddr"));
    if (!vkGetInstanceProcAddr) {
      status = absl::UnavailableError(absl::StrCat("vulkan: ", name, " has no vkGetInstanceProcAddr"));
      return;
    }
#define KILN_VK_LOAD_GLOBAL(name)                                                                     \
  name = reinterpret_cast<PFN_##name>(vkGetInstanceProcAddr(nullptr, #name));                       \
  if (!name) {                                                                                        \
    status = absl::UnavailableError("vulkan: the Vulkan loader lacks " #name " (a Vulkan 1.1+ loader is needed)"); \
    return;                                                                                           \
  }
    KILN_VK_GLOBAL_FUNCTIONS(KILN_VK_LOAD_GLOBAL)
#undef KILN_VK_LOAD_GLOBAL
  });
  return status;
}

namespace {
std::atomic<bool> exiting{false};

struct Tracked {
  std::mutex mu;
  struct Entry {
    VkDevice device;
    std::mutex *queue_mu, *copy_mu;
    std::function<void()> before;
  };
  std::vector<Entry> devices;
};
Tracked& tracked() {
  static Tracked* t = new Tracked();  // never destroyed: the exit hook uses it
  return *t;
}

void drain_devices_at_exit() {
  // Armed several times (see rearm_exit_hook); only the last registration, which runs first, drains.
  if (exiting.exchange(true)) return;
  Tracked& t = tracked();
  std::lock_guard<std::mutex> lock(t.mu);
  for (Tracked::Entry& e : t.devices) {
    if (e.before) e.before();
    std::lock_guard<std::mutex> q(*e.queue_mu);
    std::unique_lock<std::mutex> c = e.copy_mu ? std::unique_lock<std::mutex>(*e.copy_mu) : std::unique_lock<std::mutex>();
    vkDeviceWaitIdle(e.device);
  }
}
}  // namespace

void track_device(VkDevice device, std::mutex* queue_mu, std::mutex* copy_mu, std::function<void()> before) {
  Tracked& t = tracked();
  std::lock_guard<std::mutex> lock(t.mu);
  t.devices.push_back({device, queue_mu, copy_mu, std::move(before)});
}

void untrack_device(VkDevice device) {
  Tracked& t = tracked();
  std::lock_guard<std::mutex> lock(t.mu);
  std::erase_if(t.devices, [&](const Tracked::Entry& d) { return d.device == device; });
}

bool process_exiting() { return exiting.load(); }

void watch_process_exit() {
  // Registered after the driver and layers registered their own finalizers, so it runs before
  // the destructors of anything kiln built earlier (the device registry) and after theirs.
  static std::once_flag once;
  std::call_once(once, [] { std::atexit(drain_devices_at_exit); });
}

void rearm_exit_hook() { std::atexit(drain_devices_at_exit); }

absl::Status load_instance_functions(VkInstance instance) {
  static std::mutex mu;
  static bool loaded = false;
  std::lock_guard<std::mutex> lock(mu);
  if (loaded) return absl::OkStatus();
#define KILN_VK_LOAD_INSTANCE(name)                                                                  \
  name = reinterpret_cast<PFN_##name>(vkGetInstanceProcAddr(instance, #name));                       \
  if (!name) return absl::UnavailableError("vulkan: the Vulkan loader lacks " #name " (Vulkan 1.2 is needed)");
  KILN_VK_INSTANCE_FUNCTIONS(KILN_VK_LOAD_INSTANCE)
#undef KILN_VK_LOAD_INSTANCE
  vkGetPhysicalDeviceCooperativeMatrixPropertiesNV = reinterpret_cast<PFN_vkGetPhysicalDeviceCooperativeMatrixPropertiesNV>(
      vkGetInstanceProcAddr(instance, "vkGetPhysicalDeviceCooperativeMatrixPropertiesNV"));
  vkCmdBeginConditionalRenderingEXT = reinterpret_cast<PFN_vkCmdBeginConditionalRenderingEXT>(
      vkGetInstanceProcAddr(instance, "vkCmdBeginConditionalRenderingEXT"));
  vkCmdEndConditionalRenderingEXT = reinterpret_cast<PFN_vkCmdEndConditionalRenderingEXT>(
      vkGetInstanceProcAddr(instance, "vkCmdEndConditionalRenderingEXT"));
  loaded = true;
  return absl::OkStatus();
}

}  // namespace kiln::runtime::vk

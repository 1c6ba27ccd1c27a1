#include "backends/vulkan/context.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "backends/vulkan/pipeline_cache.h"
#include "backends/vulkan/select_device.h"
#include "backends/vulkan/vk_status.h"
#include "codegen/c_family/gpu_program.h"

namespace kiln::runtime::vk {
namespace {

constexpr const char* kValidationLayer = "VK_LAYER_KHRONOS_validation";

bool instance_has_extension(const char* layer, const char* name) {
  uint32_t n = 0;
  if (vkEnumerateInstanceExtensionProperties(layer, &n, nullptr) != VK_SUCCESS) return false;
  std::vector<VkExtensionProperties> ext(n);
  vkEnumerateInstanceExtensionProperties(layer, &n, ext.data());
  for (const auto& e : ext)
    if (std::strcmp(e.extensionName, name) == 0) return true;
  return false;
}

bool has_layer(const char* name) {
  uint32_t n = 0;
  if (vkEnumerateInstanceLayerProperties(&n, nullptr) != VK_SUCCESS) return false;
  std::vector<VkLayerProperties> layers(n);
  vkEnumerateInstanceLayerProperties(&n, layers.data());
  for (const auto& l : layers)
    if (std::strcmp(l.layerName, name) == 0) return true;
  return false;
}

VKAPI_ATTR VkBool32 VKAPI_CALL on_debug_message(VkDebugUtilsMessageSeverityFlagBitsEXT severity,
                                                 VkDebugUtilsMessageTypeFlagsEXT, const VkDebugUtilsMessengerCallbackDataEXT* data,
                                                 void* user) {
  std::string msg = absl::StrCat(data->pMessageIdName ? data->pMessageIdName : "", ": ", data->pMessage ? data->pMessage : "");
  std::fprintf(stderr, "kiln: vulkan validation %s: %s\n",
               severity >= VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT ? "error" : "warning", msg.c_str());
  static_cast<ValidationLog*>(user)->add(std::move(msg));
  return VK_FALSE;
}

}  // namespace

void ValidationLog::add(std::string m) {
  std::lock_guard<std::mutex> lock(mu_);
  messages_.push_back(std::move(m));
}
std::vector<std::string> ValidationLog::snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return messages_;
}
void ValidationLog::clear() {
  std::lock_guard<std::mutex> lock(mu_);
  messages_.clear();
  reported_ = 0;
}
std::vector<std::string> ValidationLog::take_unreported() {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<std::string> r(messages_.begin() + std::min(reported_, messages_.size()), messages_.end());
  reported_ = messages_.size();
  return r;
}

absl::StatusOr<std::shared_ptr<Context>> Context::create(const ContextOptions& o) {
  if (absl::Status s = load_loader(); !s.ok()) return s;
  std::shared_ptr<Context> c(new Context());
  c->cache_dir = o.cache_dir;
  if (absl::Status s = c->create_instance(o); !s.ok()) return s;
  if (absl::Status s = c->create_device(o); !s.ok()) return s;
  c->spin_us_ = o.spin_us >= 0 ? o.spin_us : c->caps.type == VK_PHYSICAL_DEVICE_TYPE_CPU ? 0 : 50;
  c->skip_done_waits_ = o.skip_done_waits;
  c->batch_max_ = std::max(o.batch, 1);
  c->batch_hold_ = o.batch_hold;
  c->batch_in_flight_ = std::max(o.batch_in_flight, 1);
  c->reuse_limit_ = VkDeviceSize(std::max<int64_t>(o.reuse_bytes, 0));
  Context* raw = c.get();
  track_device(c->device, &c->queue_mu_, c->dedicated_copy_queue() ? &c->copy_mu_ : nullptr, [raw] { raw->stop_flusher(); });
  watch_process_exit();
  return c;
}

absl::Status Context::create_instance(const ContextOptions& o) {
  uint32_t version = 0;
  vkEnumerateInstanceVersion(&version);
  if (version < VK_API_VERSION_1_2)
    return absl::UnavailableError(absl::StrCat("vulkan: the Vulkan loader supports only ", VK_API_VERSION_MAJOR(version), ".",
                                               VK_API_VERSION_MINOR(version), "; kiln needs 1.2"));
  VkApplicationInfo app = vk_struct<VkApplicationInfo>(VK_STRUCTURE_TYPE_APPLICATION_INFO);
  app.pApplicationName = "kiln";
  app.pEngineName = "kiln";
  app.apiVersion = version >= VK_API_VERSION_1_3 ? VK_API_VERSION_1_3 : VK_API_VERSION_1_2;
  VkInstanceCreateInfo ci = vk_struct<VkInstanceCreateInfo>(VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO);
  ci.pApplicationInfo = &app;
  std::vector<const char*> extensions, layers;
  if (instance_has_extension(nullptr, VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME)) {
    extensions.push_back(VK_KHR_PORTABILITY_ENUMERATION_EXTENSION_NAME);
    ci.flags |= VK_INSTANCE_CREATE_ENUMERATE_PORTABILITY_BIT_KHR;
  }
  VkValidationFeatureEnableEXT sync = VK_VALIDATION_FEATURE_ENABLE_SYNCHRONIZATION_VALIDATION_EXT;
  VkValidationFeaturesEXT features = vk_struct<VkValidationFeaturesEXT>(VK_STRUCTURE_TYPE_VALIDATION_FEATURES_EXT);
  VkDebugUtilsMessengerCreateInfoEXT mi = vk_struct<VkDebugUtilsMessengerCreateInfoEXT>(VK_STRUCTURE_TYPE_DEBUG_UTILS_MESSENGER_CREATE_INFO_EXT);
  mi.messageSeverity = VK_DEBUG_UTILS_MESSAGE_SEVERITY_WARNING_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_SEVERITY_ERROR_BIT_EXT;
  mi.messageType = VK_DEBUG_UTILS_MESSAGE_TYPE_VALIDATION_BIT_EXT | VK_DEBUG_UTILS_MESSAGE_TYPE_PERFORMANCE_BIT_EXT |
                   VK_DEBUG_UTILS_MESSAGE_TYPE_GENERAL_BIT_EXT;
  mi.pfnUserCallback = on_debug_message;
  mi.pUserData = &log;
  if (o.validation) {
    if (!has_layer(kValidationLayer))
      return absl::FailedPreconditionError(
          "vulkan: KILN_VULKAN_VALIDATION=1 but VK_LAYER_KHRONOS_validation is not installed (Debian: vulkan-validationlayers)");
    if (!instance_has_extension(kValidationLayer, VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME) ||
        !instance_has_extension(kValidationLayer, VK_EXT_DEBUG_UTILS_EXTENSION_NAME))
      return absl::FailedPreconditionError("vulkan: the validation layer lacks VK_EXT_validation_features or VK_EXT_debug_utils");
    layers.push_back(kValidationLayer);
    extensions.push_back(VK_EXT_VALIDATION_FEATURES_EXTENSION_NAME);
    extensions.push_back(VK_EXT_DEBUG_UTILS_EXTENSION_NAME);
    features.enabledValidationFeatureCount = 1;
    features.pEnabledValidationFeatures = &sync;
    features.pNext = &mi;  // also reports messages from instance creation itself
    ci.pNext = &features;
  }
  ci.enabledExtensionCount = uint32_t(extensions.size());
  ci.ppEnabledExtensionNames = extensions.data();
  ci.enabledLayerCount = uint32_t(layers.size());
  ci.ppEnabledLayerNames = layers.data();
  VkResult r = vkCreateInstance(&ci, nullptr, &instance);
  if (r == VK_ERROR_INCOMPATIBLE_DRIVER)
    return absl::UnavailableError("vulkan: no physical device (no Vulkan driver found: vkCreateInstance returned VK_ERROR_INCOMPATIBLE_DRIVER)");
  if (r != VK_SUCCESS) {
    instance = VK_NULL_HANDLE;
    absl::Status s = check(r, "vkCreateInstance");
    return absl::UnavailableError(s.message());
  }
  if (absl::Status s = load_instance_functions(instance); !s.ok()) return s;
  if (o.validation) {
    auto create = reinterpret_cast<PFN_vkCreateDebugUtilsMessengerEXT>(vkGetInstanceProcAddr(instance, "vkCreateDebugUtilsMessengerEXT"));
    destroy_messenger_ = reinterpret_cast<PFN_vkDestroyDebugUtilsMessengerEXT>(vkGetInstanceProcAddr(instance, "vkDestroyDebugUtilsMessengerEXT"));
    if (!create || !destroy_messenger_) return absl::FailedPreconditionError("vulkan: vkCreateDebugUtilsMessengerEXT is missing");
    KILN_VK_RETURN_IF_ERROR(create(instance, &mi, nullptr, &messenger_), "vkCreateDebugUtilsMessengerEXT");
  }
  return absl::OkStatus();
}

absl::Status Context::create_device(const ContextOptions& o) {
  auto choice = choose_physical_device(instance, o.device_index);
  if (!choice.ok()) return choice.status();
  physical = choice->physical;
  caps = choice->caps;
  caps.validation = o.validation;
  target = choice->target;
  const OptionalFeatures& f = choice->features;
  vkGetPhysicalDeviceMemoryProperties(physical, &memory_properties);

  VkPhysicalDeviceFeatures2 f2 = vk_struct<VkPhysicalDeviceFeatures2>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_FEATURES_2);
  VkPhysicalDeviceVulkan11Features f11 = vk_struct<VkPhysicalDeviceVulkan11Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_1_FEATURES);
  VkPhysicalDeviceVulkan12Features f12 = vk_struct<VkPhysicalDeviceVulkan12Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES);
  VkPhysicalDeviceVulkan13Features f13 = vk_struct<VkPhysicalDeviceVulkan13Features>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES);
  f2.pNext = &f11;
  f11.pNext = &f12;
  if (caps.vulkan13) f12.pNext = &f13;
  f2.features.shaderInt64 = VK_TRUE;
  f2.features.shaderInt16 = f.int16;
  f2.features.shaderFloat64 = f.float64;
  f11.storageBuffer16BitAccess = f.storage16;
  f12.bufferDeviceAddress = VK_TRUE;
  f12.timelineSemaphore = VK_TRUE;
  f12.shaderFloat16 = f.float16;
  f12.shaderInt8 = f.int8;
  f12.storageBuffer8BitAccess = f.storage8;
  f12.scalarBlockLayout = f.scalar_layout;
  f12.vulkanMemoryModel = f.memory_model;
  f12.vulkanMemoryModelDeviceScope = f.memory_model_device_scope;
  f13.subgroupSizeControl = f.subgroup_size_control;
  f13.computeFullSubgroups = f.compute_full_subgroups;
  f13.synchronization2 = f.synchronization2;
  f13.maintenance4 = f.maintenance4;
  VkPhysicalDeviceCooperativeMatrixFeaturesNV coop =
      vk_struct<VkPhysicalDeviceCooperativeMatrixFeaturesNV>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_COOPERATIVE_MATRIX_FEATURES_NV);
  VkPhysicalDeviceConditionalRenderingFeaturesEXT cond =
      vk_struct<VkPhysicalDeviceConditionalRenderingFeaturesEXT>(VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_CONDITIONAL_RENDERING_FEATURES_EXT);
  std::vector<const char*> extensions;
  void** fnext = caps.vulkan13 ? &f13.pNext : &f12.pNext;
  if (f.coop_matrix) {
    coop.cooperativeMatrix = VK_TRUE;
    *fnext = &coop, fnext = &coop.pNext;
    extensions.push_back(VK_NV_COOPERATIVE_MATRIX_EXTENSION_NAME);
  }
  if (f.conditional_rendering && vkCmdBeginConditionalRenderingEXT && vkCmdEndConditionalRenderingEXT) {
    cond.conditionalRendering = VK_TRUE;
    *fnext = &cond, fnext = &cond.pNext;
    extensions.push_back(VK_EXT_CONDITIONAL_RENDERING_EXTENSION_NAME);
    caps.conditional_rendering = true;
  }

  // Uploads on the copy engines' queue where the device has one, or, in the test mode, on the
  // compute queue with a timeline of their own.
  const bool dedicated = caps.copy_family != UINT32_MAX && o.transfer_queue != 0 && o.transfer_queue != 2;
  if (!dedicated) caps.copy_family = UINT32_MAX;
  float priority = 1.0f;
  VkDeviceQueueCreateInfo qi[2];
  for (int i = 0; i < 2; ++i) {
    qi[i] = vk_struct<VkDeviceQueueCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO);
    qi[i].queueFamilyIndex = i == 0 ? caps.queue_family : caps.copy_family;
    qi[i].queueCount = 1;
    qi[i].pQueuePriorities = &priority;
  }
  VkDeviceCreateInfo di = vk_struct<VkDeviceCreateInfo>(VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO);
  di.pNext = &f2;
  di.queueCreateInfoCount = dedicated ? 2 : 1;
  di.pQueueCreateInfos = qi;
  di.enabledExtensionCount = uint32_t(extensions.size());
  di.ppEnabledExtensionNames = extensions.data();
  VkResult r = vkCreateDevice(physical, &di, nullptr, &device);
  if (r != VK_SUCCESS) {
    device = VK_NULL_HANDLE;
    return absl::UnavailableError(check(r, absl::StrCat("vkCreateDevice on ", caps.name)).message());
  }
  vkGetDeviceQueue(device, caps.queue_family, 0, &queue);
  if (dedicated) vkGetDeviceQueue(device, caps.copy_family, 0, &copy_queue);
  else if (o.transfer_queue == 2) copy_queue = queue;
  if (absl::Status s = make_timeline(&timeline, "timeline"); !s.ok()) return s;
  if (copy_queue)
    if (absl::Status s = make_timeline(&copy_timeline, "copy timeline"); !s.ok()) return s;

  // The table's address and the kernel's table indices (codegen/c_family/gpu_program.h).
  VkPushConstantRange range{VK_SHADER_STAGE_COMPUTE_BIT, 0, uint32_t(sizeof(uint64_t) + codegen::gpu::kGlslPushedIds * sizeof(uint32_t))};
  VkPipelineLayoutCreateInfo li = vk_struct<VkPipelineLayoutCreateInfo>(VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO);
  li.pushConstantRangeCount = 1;
  li.pPushConstantRanges = &range;
  KILN_VK_RETURN_IF_ERROR(vkCreatePipelineLayout(device, &li, nullptr, &pipeline_layout), "vkCreatePipelineLayout");
  return open_pipeline_cache(this);
}

absl::Status Context::make_timeline(VkSemaphore* s, const char* what) {
  VkSemaphoreTypeCreateInfo ti = vk_struct<VkSemaphoreTypeCreateInfo>(VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO);
  ti.semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE;
  VkSemaphoreCreateInfo si = vk_struct<VkSemaphoreCreateInfo>(VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO);
  si.pNext = &ti;
  return check(vkCreateSemaphore(device, &si, nullptr, s), absl::StrCat("vkCreateSemaphore (", what, ")"));
}

Context::~Context() {
  if (process_exiting()) return;  // the OS reclaims it all (see vk_api.h); the exit hook stopped the flusher
  stop_flusher();
  if (device) untrack_device(device);
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    flush_locked().IgnoreError();  // runs nobody waited for still run (their buffers may be shared)
  }
  if (device) vkDeviceWaitIdle(device);
  {
    std::lock_guard<std::mutex> lock(memory_mu_);
    for (Allocation& a : retired_) destroy(a);
    retired_.clear();
    drop_reuse_pool();
  }
  blocks_.free_all(device);  // what a leaked buffer still holds
  if (pipeline_cache) vkDestroyPipelineCache(device, pipeline_cache, nullptr);
  if (pipeline_layout) vkDestroyPipelineLayout(device, pipeline_layout, nullptr);
  if (timeline) vkDestroySemaphore(device, timeline, nullptr);
  if (copy_timeline) vkDestroySemaphore(device, copy_timeline, nullptr);
  if (gate_) vkDestroySemaphore(device, gate_, nullptr);
  if (device) vkDestroyDevice(device, nullptr);
  if (messenger_) destroy_messenger_(instance, messenger_, nullptr);
  if (instance) vkDestroyInstance(instance, nullptr);
}

absl::StatusOr<uint64_t> Context::submit(Queue q, VkCommandBuffer cb, Stamp wait, VkPipelineStageFlags wait_stage,
                                         Submit how) {
  const bool copy = q == Queue::kCopy && copy_timeline;
  // A copy that waits for compute values still in the batch needs them handed over first (its
  // queue never waits for a value nothing was submitted to signal); on the compute queue itself
  // (the test mode) everything in the batch goes first, keeping the queue's order.
  if (copy && dedicated_copy_queue() && wait.compute > 0)
    if (absl::Status s = flush_for(wait.compute); !s.ok()) return s;
  std::unique_lock<std::mutex> lock(copy && dedicated_copy_queue() ? copy_mu_ : queue_mu_);
  if (copy && !dedicated_copy_queue())
    if (absl::Status s = flush_locked(); !s.ok()) return s;
  // A compute wait on a value in the batch would wait for its own submission's signal: hand the
  // batch over first, so the wait is on an earlier submission.
  if (!copy && wait.compute > handed_over_)
    if (absl::Status s = flush_locked(); !s.ok()) return s;
  Group g;
  auto add = [&](VkSemaphore s, uint64_t v) {
    g.waits.push_back(s);
    g.values.push_back(v);
    g.stages.push_back(wait_stage);
  };
  if (wait.compute > 0 && !reached(0, wait.compute)) add(timeline, wait.compute);
  if (wait.copy > 0 && copy_timeline && !reached(1, wait.copy)) add(copy_timeline, wait.copy);
  if (copy && gated_) add(gate_, gate_value_);
  last_waits_[copy ? 1 : 0] = wait;
  if (copy) {
    const uint64_t value = next_copy_value_ + 1;
    g.cbs.push_back(cb);
    if (absl::Status s = submit_groups(copy_queue, {std::move(g)}, copy_timeline, value); !s.ok()) return s;
    next_copy_value_ = value;
    return value;
  }
  // Runs without waits join the batch's last group; one with waits starts a group (its waits
  // hold back only the command buffers after them).
  if (batch_.empty() || !g.waits.empty()) batch_.push_back(std::move(g));
  batch_.back().cbs.push_back(cb);
  const uint64_t value = ++next_value_;
  ++batch_runs_;
  // Once the flusher has been stopped (the device is going away) nothing may wait for it.
  const bool now = how == Submit::kNow || batch_runs_ >= batch_max_ || (batch_hold_ == 0 && (flusher_stop_ || gpu_has_room_locked()));
  if (now) {
    if (absl::Status s = flush_locked(); !s.ok()) {
      // Nothing of this submission reached the driver: take it back, as if never made.
      batch_.back().cbs.pop_back();
      if (batch_.back().cbs.empty()) batch_.pop_back();
      --batch_runs_;
      --next_value_;
      return s;
    }
    return value;
  }
  if (batch_hold_ != 1) {
    if (!flusher_.joinable()) flusher_ = std::thread([this] { flusher_loop(); });
    flusher_cv_.notify_one();
  }
  return value;
}

absl::Status Context::flush_locked() {
  if (batch_.empty()) return absl::OkStatus();
  if (absl::Status s = submit_groups(queue, batch_, timeline, next_value_); !s.ok()) return s;
  handed_over_ = next_value_;
  gpu_has_room_locked();  // keeps the list to what the GPU may still be executing
  executing_.push_back(next_value_);
  ++queue_submits_;
  batch_.clear();
  batch_runs_ = 0;
  return absl::OkStatus();
}

absl::Status Context::submit_groups(VkQueue q, const std::vector<Group>& groups, VkSemaphore signal, uint64_t value) {
  std::vector<VkTimelineSemaphoreSubmitInfo> ts(groups.size());
  std::vector<VkSubmitInfo> si(groups.size());
  for (size_t i = 0; i < groups.size(); ++i) {
    const Group& g = groups[i];
    const bool last = i + 1 == groups.size();
    ts[i] = vk_struct<VkTimelineSemaphoreSubmitInfo>(VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO);
    ts[i].waitSemaphoreValueCount = uint32_t(g.values.size());
    ts[i].pWaitSemaphoreValues = g.values.data();
    ts[i].signalSemaphoreValueCount = last ? 1 : 0;
    ts[i].pSignalSemaphoreValues = last ? &value : nullptr;
    si[i] = vk_struct<VkSubmitInfo>(VK_STRUCTURE_TYPE_SUBMIT_INFO);
    si[i].pNext = &ts[i];
    si[i].commandBufferCount = uint32_t(g.cbs.size());
    si[i].pCommandBuffers = g.cbs.data();
    si[i].waitSemaphoreCount = uint32_t(g.waits.size());
    si[i].pWaitSemaphores = g.waits.data();
    si[i].pWaitDstStageMask = g.stages.data();
    si[i].signalSemaphoreCount = last ? 1 : 0;
    si[i].pSignalSemaphores = last ? &signal : nullptr;
  }
  return check(vkQueueSubmit(q, uint32_t(si.size()), si.data(), VK_NULL_HANDLE), "vkQueueSubmit");
}

absl::Status Context::flush_for(uint64_t value) {
  std::lock_guard<std::mutex> lock(queue_mu_);
  return value > handed_over_ ? flush_locked() : absl::OkStatus();
}

bool Context::gpu_has_room_locked() {
  if (executing_.size() < size_t(batch_in_flight_)) return true;
  uint64_t done = 0;
  if (vkGetSemaphoreCounterValue(device, timeline, &done) != VK_SUCCESS) return true;  // the submit reports it
  while (!executing_.empty() && executing_.front() <= done) executing_.pop_front();
  return executing_.size() < size_t(batch_in_flight_);
}

void Context::flusher_loop() {
  std::unique_lock<std::mutex> lock(queue_mu_);
  while (!flusher_stop_) {
    if (batch_.empty()) {
      flusher_cv_.wait(lock);
      continue;
    }
    if (gpu_has_room_locked()) {
      // A failure stays with the batch: the next submit or wait that hands it over reports it.
      if (!flush_locked().ok()) flusher_cv_.wait_for(lock, std::chrono::milliseconds(1));
      continue;
    }
    // Block (briefly, to notice a stop) until the oldest executing submission completes.
    uint64_t oldest = executing_.front();
    lock.unlock();
    VkSemaphoreWaitInfo wi = vk_struct<VkSemaphoreWaitInfo>(VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO);
    wi.semaphoreCount = 1;
    wi.pSemaphores = &timeline;
    wi.pValues = &oldest;
    vkWaitSemaphores(device, &wi, 2'000'000);
    lock.lock();
  }
}

void Context::stop_flusher() {
  {
    std::lock_guard<std::mutex> lock(queue_mu_);
    flusher_stop_ = true;
  }
  flusher_cv_.notify_all();
  if (flusher_.joinable()) flusher_.join();
}

bool Context::reached(int t, uint64_t value) {
  if (!skip_done_waits_) return false;
  if (value <= seen_[t].load(std::memory_order_relaxed)) return true;
  uint64_t v = 0;
  if (vkGetSemaphoreCounterValue(device, t == 0 ? timeline : copy_timeline, &v) != VK_SUCCESS) return false;
  uint64_t old = seen_[t].load(std::memory_order_relaxed);
  while (v > old && !seen_[t].compare_exchange_weak(old, v, std::memory_order_relaxed)) {
  }
  return value <= v;
}

absl::Status Context::wait_one(VkSemaphore s, uint64_t value) {
  if (value == 0) return absl::OkStatus();
  // A short run finishes in a few microseconds, and a blocking wait costs more than that to wake
  // up (about 10 us on NVIDIA's driver): poll the counter first, as CUDA's default sync does.
  if (spin_us_ > 0) {
    const auto until = std::chrono::steady_clock::now() + std::chrono::microseconds(spin_us_);
    for (int polls = 0;; ++polls) {
      uint64_t v = 0;
      if (vkGetSemaphoreCounterValue(device, s, &v) != VK_SUCCESS) break;  // the blocking wait reports it
      if (v >= value) return absl::OkStatus();
      if ((polls & 15) == 15 && std::chrono::steady_clock::now() >= until) break;
    }
  }
  VkSemaphoreWaitInfo wi = vk_struct<VkSemaphoreWaitInfo>(VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO);
  wi.semaphoreCount = 1;
  wi.pSemaphores = &s;
  wi.pValues = &value;
  return check(vkWaitSemaphores(device, &wi, UINT64_MAX), "vkWaitSemaphores");
}

absl::Status Context::wait(uint64_t value) {
  if (absl::Status st = flush_for(value); !st.ok()) return st;
  return wait_one(timeline, value);
}

absl::Status Context::wait(Stamp s) {
  if (absl::Status st = wait(s.compute); !st.ok()) return st;
  return copy_timeline ? wait_one(copy_timeline, s.copy) : absl::OkStatus();
}

uint64_t Context::completed() {
  uint64_t v = 0;
  if (vkGetSemaphoreCounterValue(device, timeline, &v) != VK_SUCCESS) return 0;
  return v;
}

uint64_t Context::copy_completed() {
  uint64_t v = 0;
  if (!copy_timeline || vkGetSemaphoreCounterValue(device, copy_timeline, &v) != VK_SUCCESS) return 0;
  return v;
}

uint64_t Context::last_submitted() {
  std::lock_guard<std::mutex> lock(queue_mu_);
  return next_value_;
}

uint64_t Context::compute_queue_submits() {
  std::lock_guard<std::mutex> lock(queue_mu_);
  return queue_submits_;
}

int Context::batched_runs() {
  std::lock_guard<std::mutex> lock(queue_mu_);
  return batch_runs_;
}

uint64_t Context::copy_last_submitted() {
  std::lock_guard<std::mutex> lock(dedicated_copy_queue() ? copy_mu_ : queue_mu_);
  return next_copy_value_;
}

Stamp Context::last_waits(Queue q) {
  const bool copy = q == Queue::kCopy && copy_timeline;
  std::lock_guard<std::mutex> lock(copy && dedicated_copy_queue() ? copy_mu_ : queue_mu_);
  return last_waits_[copy ? 1 : 0];
}

absl::Status Context::hold_copies() {
  if (!dedicated_copy_queue())
    return absl::FailedPreconditionError("vulkan: holding copies back needs a copy queue of its own (it would stall the compute queue)");
  std::lock_guard<std::mutex> lock(copy_mu_);
  if (!gate_)
    if (absl::Status s = make_timeline(&gate_, "copy gate"); !s.ok()) return s;
  gate_value_ += 1;
  gated_ = true;
  return absl::OkStatus();
}

absl::Status Context::open_copies() {
  std::lock_guard<std::mutex> lock(copy_mu_);
  if (!gated_) return absl::OkStatus();
  gated_ = false;
  VkSemaphoreSignalInfo si = vk_struct<VkSemaphoreSignalInfo>(VK_STRUCTURE_TYPE_SEMAPHORE_SIGNAL_INFO);
  si.semaphore = gate_;
  si.value = gate_value_;
  return check(vkSignalSemaphore(device, &si), "vkSignalSemaphore (copy gate)");
}

}  // namespace kiln::runtime::vk

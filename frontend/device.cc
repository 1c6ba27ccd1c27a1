// kiln::Device and the default device.
#include <cstdlib>
#include <cstdio>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "kiln/device.h"
#include "kiln/error.h"
#include "kiln/stats.h"
#include "frontend/lazy.h"
#include "runtime/device.h"
#include "replay/executable_cache.h"
#include "runtime/registry.h"
#include "runtime/stats.h"
#include "support/options.h"

namespace kiln {
namespace {

std::mutex& default_mutex() {
  static std::mutex m;
  return m;
}
runtime::Device*& default_slot() {
  static runtime::Device* d = nullptr;
  return d;
}

bool debug_enabled() { return support::debug_level() >= 1; }

runtime::Device* initial_default() {
  if (const std::string env = support::options().device; !env.empty()) {
    auto d = runtime::get_device(env);
    if (d.ok()) {
      if (debug_enabled()) std::fprintf(stderr, "kiln: default device %s (KILN_DEVICE)\n", (*d)->description().c_str());
      return *d;
    }
    std::fprintf(stderr, "kiln: KILN_DEVICE=%s is not available (%s); using the best available device\n", env.c_str(),
                 std::string(d.status().message()).c_str());
  }
  runtime::Device* best = runtime::best_device();
  if (debug_enabled() && best) std::fprintf(stderr, "kiln: default device %s\n", best->description().c_str());
  // Running on the CPU (or a CPU emulation of a GPU API) although kiln knows GPU backends: say
  // once why none of them is usable, so that a slow run is not a mystery.
  if (best && !debug_enabled() && (!best->target().is_gpu || best->is_emulated())) {
    std::string why;
    for (const std::string& n : runtime::known_device_names()) {
      if (n == best->name() || n == "cpu") continue;
      auto d = runtime::get_device(n);
      if (!d.ok()) absl::StrAppend(&why, why.empty() ? "" : "; ", std::string(d.status().message()));
      else if ((*d)->is_emulated()) absl::StrAppend(&why, why.empty() ? "" : "; ", n, " runs on the CPU only (", (*d)->description(), ")");
    }
    if (!why.empty())
      std::fprintf(stderr, "kiln: no GPU is usable, running on %s (%s). KILN_DEVICE picks a device.\n",
                   best->name().c_str(), why.c_str());
  }
  return best;
}

}  // namespace

Device::Device() : impl_(default_device().impl_) {}

Device::Device(const std::string& name) {
  auto d = runtime::get_device(name);
  if (!d.ok()) throw Error(d.status());
  impl_ = *d;
}

absl::StatusOr<Device> Device::get(const std::string& name) {
  auto d = runtime::get_device(name);
  if (!d.ok()) return d.status();
  return Device(*d);
}

void Device::synchronize() const {
  if (impl_) throw_if_error(impl_->synchronize());
}

std::string Device::name() const { return impl_ ? impl_->name() : "none"; }
std::string Device::description() const { return impl_ ? impl_->description() : "none"; }

std::vector<std::string> known_devices() { return runtime::known_device_names(); }

std::vector<std::string> available_devices() {
  std::vector<std::string> r;
  for (const std::string& n : runtime::known_device_names())
    if (runtime::get_device(n).ok()) r.push_back(n);
  return r;
}

Device default_device() {
  std::lock_guard<std::mutex> lock(default_mutex());
  runtime::Device*& d = default_slot();
  if (!d) d = initial_default();
  if (!d) throw Error(absl::UnavailableError("no kiln device is available (was the CPU backend built?)"));
  return detail::Access::device(d);
}

absl::Status set_default_device(const std::string& name) {
  auto d = runtime::get_device(name);
  if (!d.ok()) return d.status();
  std::lock_guard<std::mutex> lock(default_mutex());
  default_slot() = *d;
  return absl::OkStatus();
}

Stats stats() {
  runtime::Counters& c = runtime::counters();
  Stats s;
  s.graphs_realized = c.graphs_realized.load();
  s.executables_built = c.executables_built.load();
  s.executable_cache_hits = c.executable_cache_hits.load();
  s.kernels_compiled = c.kernels_compiled.load();
  s.kernel_disk_cache_hits = c.kernel_disk_cache_hits.load();
  s.kernels_reused = c.kernels_reused.load();
  s.kernels_launched = c.kernels_launched.load();
  s.bytes_allocated = c.bytes_allocated.load();
  s.executables_evicted = c.executables_evicted.load();
  s.executable_cache_bytes = replay::cache_bytes();
  s.kernels_autotuned = c.kernels_autotuned.load();
  s.autotune_cache_hits = c.autotune_cache_hits.load();
  s.executables_resized = c.executables_resized.load();
  s.memory_blocks = c.memory_blocks.load();
  s.memory_block_bytes = c.memory_block_bytes.load();
  s.memory_block_used_bytes = c.memory_block_used_bytes.load();
  s.device_communicators = c.device_communicators.load();
  return s;
}

void reset_stats() {
  runtime::Counters& c = runtime::counters();
  c.graphs_realized = 0;
  c.executables_built = 0;
  c.executable_cache_hits = 0;
  c.kernels_compiled = 0;
  c.kernel_disk_cache_hits = 0;
  c.kernels_reused = 0;
  c.kernels_launched = 0;
  c.bytes_allocated = 0;
  c.executables_evicted = 0;
  c.kernels_autotuned = 0;
  c.autotune_cache_hits = 0;
  c.executables_resized = 0;
}

void set_executable_cache_budget(int64_t bytes) {
  if (bytes < 0) throw Error(absl::InvalidArgumentError(absl::StrCat("set_executable_cache_budget: ", bytes, " bytes")));
  replay::cache_set_budget(bytes);
}

int64_t executable_cache_budget() { return replay::cache_budget(); }

std::string Stats::to_string() const {
  return absl::StrCat("graphs_realized=", graphs_realized, " executables_built=", executables_built,
                      " executable_cache_hits=", executable_cache_hits, " kernels_compiled=", kernels_compiled,
                      " kernel_disk_cache_hits=", kernel_disk_cache_hits, " kernels_reused=", kernels_reused,
                      " kernels_launched=", kernels_launched,
                      " bytes_allocated=", bytes_allocated, " executables_evicted=", executables_evicted,
                      " executable_cache_bytes=", executable_cache_bytes, " kernels_autotuned=", kernels_autotuned,
                      " autotune_cache_hits=", autotune_cache_hits, " memory_blocks=", memory_blocks,
                      " memory_block_bytes=", memory_block_bytes, " memory_block_used_bytes=", memory_block_used_bytes,
                      " device_communicators=", device_communicators, " executables_resized=", executables_resized);
}

}  // namespace kiln

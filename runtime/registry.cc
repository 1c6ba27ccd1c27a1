#include "runtime/registry.h"

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <mutex>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/stats.h"

namespace kiln::runtime {

Counters& counters() {
  static Counters c;
  return c;
}

namespace {

struct Slot {
  std::once_flag once;
  absl::StatusOr<std::unique_ptr<Device>> device = absl::UnknownError("not created");
};

struct Entry {
  Backend backend;
  std::once_flag once;
  absl::StatusOr<std::unique_ptr<Device>> device = absl::UnknownError("not created");
  std::mutex numbered_mu;
  std::map<int, std::unique_ptr<Slot>> numbered;  // "name:N", other than the default number
  std::mutex compilers_mu;
  std::map<const Device*, std::shared_ptr<const Compiler>> numbered_compilers;
  std::once_flag compiler_once;
  absl::StatusOr<std::shared_ptr<const Compiler>> compiler = absl::UnknownError("not created");
};

struct Table {
  std::mutex mu;  // guards the map's shape (registration happens before main; lookups after)
  std::map<std::string, std::unique_ptr<Entry>> entries;
};

Table& table() {
  static Table* t = new Table();  // never destroyed: devices outlive static teardown
  return *t;
}

// Backends kiln knows of, and why a build may lack each: asked for by name, an absent one is
// reported as unavailable with this reason rather than as unknown.
struct Absent {
  const char* name;
  const char* why;
};
constexpr Absent kAbsent[] = {
    {"cpu", "this kiln build has no CPU backend (built with KILN_WITH_LLVM=OFF)"},
    {"vulkan", "this kiln build has no Vulkan backend (KILN_WITH_VULKAN=OFF or no Vulkan headers and shaderc at build time)"},
    {"cuda", "this kiln build has no CUDA backend (no CUDA toolkit with NVRTC at build time)"},
    {"hip", "this kiln build has no HIP backend (no comgr at build time: libamd-comgr-dev)"},
    {"metal", "this kiln build has no Metal backend (backends/metal was left out of the build)"},
};

Entry* find(const std::string& name) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  auto it = t.entries.find(name);
  return it == t.entries.end() ? nullptr : it->second.get();
}

absl::Status unknown_or_absent(const std::string& name) {
  for (const Absent& a : kAbsent)
    if (name == a.name) return absl::UnavailableError(absl::StrCat(name, ": ", a.why));
  return absl::NotFoundError(
      absl::StrCat("unknown device '", name, "'; known devices: ", absl::StrJoin(known_device_names(), ", ")));
}

}  // namespace

bool register_backend(const Backend& b) {
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  auto e = std::make_unique<Entry>();
  e->backend = b;
  if (!t.entries.emplace(b.name, std::move(e)).second) {
    std::fprintf(stderr, "kiln: two backends register the name '%s'\n", b.name.c_str());
    std::abort();
  }
  return true;
}

std::vector<std::string> known_device_names() {
  // The names kiln knows of, in a fixed order, then any other registered backend.
  std::vector<std::string> r;
  for (const Absent& a : kAbsent) r.push_back(a.name);
  Table& t = table();
  std::lock_guard<std::mutex> lock(t.mu);
  for (const auto& [name, e] : t.entries)
    if (std::find(r.begin(), r.end(), name) == r.end()) r.push_back(name);
  return r;
}

absl::StatusOr<Device*> get_device(const std::string& name) {
  if (const size_t colon = name.find(':'); colon != std::string::npos) {
    const std::string backend = name.substr(0, colon);
    int n = -1;
    if (!absl::SimpleAtoi(name.substr(colon + 1), &n) || n < 0)
      return absl::InvalidArgumentError(absl::StrCat("device '", name, "': the part after ':' must be a device number"));
    Entry* e = find(backend);
    if (!e) return unknown_or_absent(backend);
    if (!e->backend.create_device_at)
      return absl::InvalidArgumentError(absl::StrCat("device '", name, "': ", backend, " has no numbered devices"));
    if (e->backend.default_ordinal && e->backend.default_ordinal() == n) return get_device(backend);
    Slot* slot;
    {
      std::lock_guard<std::mutex> lock(e->numbered_mu);
      std::unique_ptr<Slot>& s = e->numbered[n];
      if (!s) s = std::make_unique<Slot>();
      slot = s.get();
    }
    std::call_once(slot->once, [e, slot, n] { slot->device = e->backend.create_device_at(n); });
    if (!slot->device.ok()) return slot->device.status();
    return slot->device->get();
  }
  Entry* e = find(name);
  if (!e) return unknown_or_absent(name);
  std::call_once(e->once, [e] { e->device = e->backend.create_device(); });
  if (!e->device.ok()) return e->device.status();
  return e->device->get();
}

Device* best_device() {
  std::vector<Entry*> by_rank;
  {
    Table& t = table();
    std::lock_guard<std::mutex> lock(t.mu);
    for (const auto& [name, e] : t.entries) by_rank.push_back(e.get());
  }
  std::sort(by_rank.begin(), by_rank.end(),
            [](const Entry* a, const Entry* b) { return a->backend.default_rank > b->backend.default_rank; });
  for (Entry* e : by_rank) {
    auto d = get_device(e->backend.name);
    if (d.ok() && !(*d)->is_emulated()) return *d;
    // A missing driver or GPU is normal; anything else (a malformed KILN_CUDA_DEVICE, ...) is a
    // mistake the user should hear about even though another device is picked.
    if (!d.ok() && !absl::IsUnavailable(d.status())) {
      static std::once_flag said;
      std::call_once(said, [&] {
        std::fprintf(stderr, "kiln: %s: %s; choosing another device\n", e->backend.name.c_str(),
                     std::string(d.status().message()).c_str());
      });
    }
  }
  for (Entry* e : by_rank)
    if (auto d = get_device(e->backend.name); d.ok()) return *d;
  return nullptr;
}

absl::StatusOr<std::unique_ptr<Compiler>> make_compiler(const std::string& backend, const ir::TargetInfo& target) {
  Entry* e = find(backend);
  if (!e) return unknown_or_absent(backend);
  return e->backend.create_compiler(target);
}

absl::StatusOr<ir::TargetInfo> target_profile(const std::string& backend, const std::string& profile) {
  Entry* e = find(backend);
  if (!e) return unknown_or_absent(backend);
  if (!e->backend.target_profile) return absl::NotFoundError(absl::StrCat(backend, " has no named target profiles"));
  return e->backend.target_profile(profile);
}

absl::StatusOr<std::shared_ptr<const Compiler>> compiler_for(Device* device) {
  if (!device) return absl::FailedPreconditionError("no device");
  Entry* e = find(device->name());
  if (!e) return unknown_or_absent(device->name());
  auto make = [e, device]() -> absl::StatusOr<std::shared_ptr<const Compiler>> {
    auto c = e->backend.create_compiler(device->target());
    if (!c.ok()) return c.status();
    return std::shared_ptr<const Compiler>(*std::move(c));
  };
  auto d = get_device(device->name());
  if (!d.ok() || *d != device) {
    // A numbered device of the registry keeps its own; one a test opened itself does not.
    bool numbered = false;
    {
      std::lock_guard<std::mutex> lock(e->numbered_mu);
      for (const auto& [n, slot] : e->numbered) numbered = numbered || (slot->device.ok() && slot->device->get() == device);
    }
    if (!numbered) return make();
    std::lock_guard<std::mutex> lock(e->compilers_mu);
    std::shared_ptr<const Compiler>& kept = e->numbered_compilers[device];
    if (!kept) {
      auto c = make();
      if (!c.ok()) return c.status();
      kept = *c;
    }
    return kept;
  }
  std::call_once(e->compiler_once, [&] { e->compiler = make(); });
  return e->compiler;
}

}  // namespace kiln::runtime

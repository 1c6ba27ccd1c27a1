// Backends register themselves here (each in its own backends/<name>/backend.cc, with
// KILN_REGISTER_BACKEND); nothing in this layer names a backend it was built with. A name a
// user may ask for but that this build lacks ("hip" without comgr, "metal" off macOS) is
// reported as Unavailable with the reason.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/target_info.h"
#include "runtime/device.h"

namespace kiln::runtime {

struct Backend {
  std::string name;  // "cpu", "cuda", ...
  // Rank as the default device: the highest-ranked available, non-emulated device wins.
  int default_rank = 0;
  // Opens the device (called once, on first use; the result is kept for the process).
  absl::StatusOr<std::unique_ptr<Device>> (*create_device)() = nullptr;
  // A compiler for `target` (a device's target(), or a profile written by hand for kilnc).
  absl::StatusOr<std::unique_ptr<Compiler>> (*create_compiler)(const ir::TargetInfo& target) = nullptr;
  // Named targets a build machine can compile for without the device (kilnc --target
  // cpu:x86-64-v3, cuda:sm_90): the TargetInfo preset of `profile`, NotFound listing the known
  // names otherwise. nullptr: the backend has none.
  absl::StatusOr<ir::TargetInfo> (*target_profile)(const std::string& profile) = nullptr;
  // Numbered devices ("cuda:1"): opens device `ordinal` (called once per number); nullptr: the
  // backend has one device. `default_ordinal` is the number the plain name opens ("cuda" is
  // "cuda:<it>", the same Device).
  absl::StatusOr<std::unique_ptr<Device>> (*create_device_at)(int ordinal) = nullptr;
  int (*default_ordinal)() = nullptr;
};

// Adds a backend; returns true (for static registration). A second backend of one name aborts.
bool register_backend(const Backend& b);

#define KILN_REGISTER_BACKEND(...) \
  [[maybe_unused]] static const bool kiln_backend_registered_ = ::kiln::runtime::register_backend(__VA_ARGS__)

// Backend names a user may ask for, built in or not: cpu, vulkan, cuda, hip, metal, then any
// other registered backend.
std::vector<std::string> known_device_names();
// The device singleton of a backend ("cuda") or of one of its numbered devices ("cuda:1"),
// created on first use; an error names why it is unavailable. A numbered device's name() is
// still its backend's.
absl::StatusOr<Device*> get_device(const std::string& name);
// The best available device: the highest default_rank that opens and is not emulated; the CPU
// when nothing else is there; nullptr when no backend opens at all.
Device* best_device();
// A compiler for `backend` (by name) and `target`.
absl::StatusOr<std::unique_ptr<Compiler>> make_compiler(const std::string& backend, const ir::TargetInfo& target);
// The TargetInfo preset `profile` of `backend` (Backend::target_profile).
absl::StatusOr<ir::TargetInfo> target_profile(const std::string& backend, const std::string& profile);
// The compiler for a device's own target (made once for each registered device and kept).
absl::StatusOr<std::shared_ptr<const Compiler>> compiler_for(Device* device);

}  // namespace kiln::runtime

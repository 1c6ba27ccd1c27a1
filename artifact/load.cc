// load.h: the first section the device accepts.
#include "artifact/load.h"

#include "absl/strings/str_cat.h"
#include "runtime/registry.h"

namespace kiln::artifact {

absl::StatusOr<Loaded> load(const Artifact& a, runtime::Device* device) {
  std::string refusals;
  for (const TargetSection& s : a.targets) {
    if (s.backend != device->name()) continue;
    auto exe = device->load(s.program);
    if (exe.ok()) return Loaded{&s, *std::move(exe)};
    if (!absl::IsFailedPrecondition(exe.status()))
      return absl::Status(exe.status().code(), absl::StrCat("loading section ", s.label(), ": ", exe.status().message()));
    absl::StrAppend(&refusals, "; ", s.label(), " refused: ", exe.status().message());
  }
  std::string has;
  for (const TargetSection& s : a.targets) absl::StrAppend(&has, has.empty() ? "" : ", ", s.label(), " [", s.target_key, "]");
  auto compiler = runtime::compiler_for(device);
  std::string needs = compiler.ok() ? (*compiler)->target_key() : std::string(compiler.status().message());
  return absl::FailedPreconditionError(absl::StrCat("no section of the artifact fits the ", device->name(), " device (",
                                                    device->description(), "): the artifact has ", has.empty() ? "no targets" : has,
                                                    "; the device needs ", device->name(), " [", needs, "]", refusals,
                                                    ". Compile for it with kilnc compile --target ", device->name()));
}

}  // namespace kiln::artifact

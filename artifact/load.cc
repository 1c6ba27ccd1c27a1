// load.h: the first section the device accepts.
#include "artifact/load.h"

#include "absl/strings/str_cat.h"
#include "runtime/registry.h"

namespace kiln::artifact {

absl::StatusOr<Loaded> load(const Artifact& a, runtime::Device* device) {
  std::string refusals;
  // Sections made for exactly this device's target first (a cubin before another
  // architecture's PTX that the driver would have to compile), then the others in file order.
  auto compiler = runtime::compiler_for(device);
  const std::string own = compiler.ok() ? (*compiler)->target_key() : "";
  std::vector<const TargetSection*> order;
  for (int pass = 0; pass < 2; ++pass)
    for (const TargetSection& s : a.targets) {
      const bool exact = !own.empty() && s.target_key.compare(0, own.size(), own) == 0;
      if (s.backend == device->name() && exact == (pass == 0)) order.push_back(&s);
    }
  for (const TargetSection* sp : order) {
    const TargetSection& s = *sp;
    auto exe = device->load(s.program);
    if (exe.ok()) return Loaded{&s, *std::move(exe)};
    if (!absl::IsFailedPrecondition(exe.status()))
      return absl::Status(exe.status().code(), absl::StrCat("loading section ", s.label(), ": ", exe.status().message()));
    absl::StrAppend(&refusals, "; ", s.label(), " refused: ", exe.status().message());
  }
  std::string has;
  for (const TargetSection& s : a.targets) absl::StrAppend(&has, has.empty() ? "" : ", ", s.label(), " [", s.target_key, "]");
  std::string needs = compiler.ok() ? (*compiler)->target_key() : std::string(compiler.status().message());
  return absl::FailedPreconditionError(absl::StrCat("no section of the artifact fits the ", device->name(), " device (",
                                                    device->description(), "): the artifact has ", has.empty() ? "no targets" : has,
                                                    "; the device needs ", device->name(), " [", needs, "]", refusals,
                                                    ". Compile for it with kilnc compile --target ", device->name()));
}

}  // namespace kiln::artifact

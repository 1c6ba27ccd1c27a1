// The HIP Device (runtime/device.h): memory, transfers and load(CompiledProgram), with no
// compiler in it (compiler.h is the other half). It opens the first AMD GPU the HIP runtime
// reports; the runtime is loaded by dlopen (hip_api.h), so a machine without it, or without an
// AMD GPU, gets Unavailable naming which. load() accepts only code objects for this GPU's gfx
// processor (target.h) and builds the executable (executable.h). Every run, upload and download
// goes through one stream, so runs see the uploads and earlier runs before them; a download waits
// only for the run that wrote its buffer.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "backends/hip/hip_api.h"
#include "runtime/device.h"

namespace kiln::runtime::hip {

class HipDevice : public Device {
 public:
  static absl::StatusOr<std::unique_ptr<Device>> create();

  std::string name() const override { return "hip"; }
  std::string description() const override { return description_; }
  const ir::TargetInfo& target() const override { return target_; }
  absl::StatusOr<std::shared_ptr<Buffer>> alloc(int64_t bytes) override;
  absl::Status upload(Buffer* dst, const void* src, int64_t bytes) override;
  absl::Status download(Buffer* src, void* dst, int64_t bytes) override;
  absl::StatusOr<std::unique_ptr<Executable>> load(const CompiledProgram& c) override;
  absl::Status synchronize() override;

 private:
  HipDevice(const HipApi& api, hipStream_t stream, ir::TargetInfo target, std::string description)
      : api_(api), stream_(stream), target_(std::move(target)), description_(std::move(description)) {}
  const HipApi& api_;
  hipStream_t stream_;
  ir::TargetInfo target_;
  std::string description_;
};

}  // namespace kiln::runtime::hip

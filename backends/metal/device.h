// The Metal Device (runtime/device.h): memory, transfers and load(CompiledProgram), with no
// compiler in it (compiler.h is the other half). It opens the system's default GPU through the
// Objective-C runtime loaded by dlopen (metal_api.h), so the library builds and loads on any
// system; where there is no Metal framework (every system but macOS), no GPU, or a GPU without
// Metal 3 (whose GPU addresses the argument blocks hold) it is Unavailable, saying which.
// Buffers are shared-storage MTLBuffers (memory.h): an upload or download is a memcpy once the
// runs that use the buffer are done, a download waiting only for the run that wrote it. load()
// accepts only programs compiled for its target key (target.h) without loops, branches or
// collectives, and builds the executable (executable.h); runs go through one queue (queue.h).
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "backends/metal/metal_api.h"
#include "backends/metal/queue.h"
#include "runtime/device.h"

namespace kiln::runtime::metal {

class MetalDevice : public Device {
 public:
  // The default GPU through the system's Metal.
  static absl::StatusOr<std::unique_ptr<Device>> create();
  // The default GPU of `api`, which outlives the device: for tests, with an in-process fake of
  // Metal (tests/metal/fake_metal.h).
  static absl::StatusOr<std::unique_ptr<Device>> create_with(const MetalApi* api);
  ~MetalDevice() override;

  std::string name() const override { return "metal"; }
  std::string description() const override { return description_; }
  const ir::TargetInfo& target() const override { return target_; }
  absl::StatusOr<std::shared_ptr<Buffer>> alloc(int64_t bytes) override;
  absl::Status upload(Buffer* dst, const void* src, int64_t bytes) override;
  absl::Status download(Buffer* src, void* dst, int64_t bytes) override;
  absl::StatusOr<std::unique_ptr<Executable>> load(const CompiledProgram& c) override;
  absl::Status synchronize() override;

 private:
  MetalDevice(const MetalApi& api, Id device, std::shared_ptr<Queue> queue, ir::TargetInfo target, std::string description)
      : api_(api), device_(device), queue_(std::move(queue)), target_(std::move(target)), description_(std::move(description)) {}
  const MetalApi& api_;
  Id device_;
  std::shared_ptr<Queue> queue_;
  ir::TargetInfo target_;
  std::string description_;
};

}  // namespace kiln::runtime::metal

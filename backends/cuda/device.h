// The CUDA Device (runtime/device.h): a GPU opened through the driver API (driver_api.h, loaded
// at run time), its memory (memory.h), transfers on its one stream, and load(), which turns a
// CompiledProgram made for its architecture ("sm_<cc>", target.h) into a CUDA graph
// (executable.h). It compiles nothing: the Compiler (compiler.h) is a separate, device-free half.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "backends/cuda/context.h"
#include "backends/cuda/executable.h"
#include "runtime/device.h"
#include "support/shared_by_key.h"

namespace kiln::runtime::cuda {

class CudaDevice : public Device {
 public:
  // The GPU support::options().cuda_device names ($KILN_CUDA_DEVICE, default 0). Unavailable
  // without a driver or device (the message says which); InvalidArgument for a malformed
  // $KILN_CUDA_DEVICE.
  static absl::StatusOr<std::unique_ptr<Device>> create();  // KILN_CUDA_DEVICE's GPU (0 by default)
  static absl::StatusOr<std::unique_ptr<Device>> create_at(int index);  // "cuda:<index>"
  static int default_ordinal();

  std::string name() const override { return "cuda"; }
  std::string description() const override { return description_; }
  const ir::TargetInfo& target() const override { return target_; }
  absl::Status collectives_status() const override;  // NCCL loads (nccl.h)
  absl::StatusOr<std::shared_ptr<Buffer>> alloc(int64_t bytes) override;
  absl::Status upload(Buffer* dst, const void* src, int64_t bytes) override;
  absl::Status download(Buffer* src, void* dst, int64_t bytes) override;
  absl::Status download_many(const std::vector<Download>& all) override;
  absl::StatusOr<std::unique_ptr<Executable>> load(const CompiledProgram& c) override;
  absl::Status synchronize() override;

  Context* context() const { return ctx_; }

 private:
  CudaDevice(Context* ctx, std::string description, ir::TargetInfo target)
      : ctx_(ctx), description_(std::move(description)), target_(std::move(target)) {}

  // The module of `image` (a cubin or PTX): one already loaded from the same bytes and still held
  // by an executable, or loaded now. The sizes of a symbolic dimension load one program's module
  // many times over; they share one CUmodule.
  absl::StatusOr<std::shared_ptr<Module>> module_for(const std::string& image) {
    return modules_.get(image, [&] { return Module::load(image); });
  }

  Context* ctx_;  // never freed (context.h)
  std::string description_;
  ir::TargetInfo target_;
  support::SharedByKey<Module> modules_;  // by image bytes
};

// The Context of `d` when it is a CUDA device, else nullptr (tests and the GPU timer reach the
// stream and the limits through it).
Context* context_of(Device* d);

}  // namespace kiln::runtime::cuda

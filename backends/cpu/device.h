// The CPU Device (runtime/device.h): host memory (memory.h), a thread pool, and load(), which
// checks that a CompiledProgram was made for this CPU (its target_key) and links its object file
// into the process (jit_linker.h). It compiles nothing: compiler.h does, without a device.
#pragma once

#include <memory>
#include <string>

#include "backends/cpu/memory.h"
#include "backends/cpu/thread_pool.h"
#include "runtime/device.h"

namespace kiln::runtime::cpu {

class CpuDevice : public Device {
 public:
  // One thread per hardware thread. Unavailable when LLVM has no code generator for this CPU.
  static absl::StatusOr<std::unique_ptr<Device>> create();

  std::string name() const override { return "cpu"; }
  std::string description() const override;
  const ir::TargetInfo& target() const override { return target_; }
  absl::Status collectives_status() const override { return absl::OkStatus(); }
  absl::StatusOr<std::shared_ptr<Buffer>> alloc(int64_t bytes) override;
  absl::Status upload(Buffer* dst, const void* src, int64_t bytes) override;
  absl::Status download(Buffer* src, void* dst, int64_t bytes) override;
  absl::StatusOr<std::unique_ptr<Executable>> load(const CompiledProgram& c) override;

 private:
  CpuDevice(int threads, ir::TargetInfo target, std::string key);

  BlockPool blocks_;  // before pool_ and every buffer user: destroyed last
  ThreadPool pool_;
  ir::TargetInfo target_;
  std::string key_;  // target_key(target_)
};

}  // namespace kiln::runtime::cpu

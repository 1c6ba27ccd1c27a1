// The device layer's specification: what a backend author implements and what every caller may
// rely on. Backends (backends/<name>/) reference this file instead of restating it.
//
// A target is served by two independent halves:
//   Compiler  ir::Program -> CompiledProgram (compiled_program.h): plain bytes, launch shapes,
//             bindings and the memory plan. Needs no device: it runs on a build machine, in
//             kilnc, in a test without a GPU. It is made from an ir::TargetInfo alone.
//   Device    memory, transfers, and load(CompiledProgram) -> Executable. Needs no compiler: it
//             only checks that the CompiledProgram was made for its target (target_key) and
//             turns the binaries into something it can launch.
// The JIT (replay/) is compile-then-load through these same two verbs; ahead-of-time use is
// compile here, load there.
//
// Contracts (every backend keeps them; tests/ check them on every device):
//   Buffers    never change once written: kiln writes a buffer once (an upload or the run that
//              produces it), before any tensor holds it, so tensors share buffers freely. A
//              Buffer keeps the memory alive; destroying one whose writer is still in flight is
//              allowed (the backend defers the release).
//   run()      may return before the work finishes. It may be called concurrently from several
//              threads on one Executable, and with new bindings each time; runs of one
//              Executable are ordered with each other (they share its intermediate arena).
//              `outputs` are always fresh storage the caller allocated for this run, never a
//              buffer a tensor already holds; `inputs` are only read.
//   download() waits only for the work that wrote its buffer (an upload or a run), not for the
//              whole device, then copies to the host. download_many() does the same for several
//              buffers with every copy queued before the host waits (they overlap each other).
//   upload()   copies before it returns (the host memory may be reused at once); work queued
//              afterwards sees the data.
//   synchronize() waits for everything submitted to the device (for timing, never needed for
//              correctness).
//
// Error codes a caller can act on:
//   InvalidArgument    a wrong binding (a buffer of another device, too small, wrong count), a
//                      malformed environment variable, a CompiledProgram that does not parse
//   FailedPrecondition a CompiledProgram for another target (its target_key is not the device's)
//   Unavailable        no driver, no device, a backend not built in: the message says which
//   ResourceExhausted  out of device or host memory
//   Unimplemented      the program needs something the target lacks (e.g. f64 on a GPU without it)
//   Internal           a bug in kiln (a compiler rejecting generated code, an inconsistent
//                      program): the message carries what is needed to report it
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/program.h"
#include "ir/target_info.h"
#include "runtime/compiled_program.h"

namespace kiln::runtime {

class Device;

// Device memory: `bytes` long, owned by one device.
class Buffer {
 public:
  Buffer(Device* device, int64_t bytes) : device_(device), bytes_(bytes) {}
  virtual ~Buffer() = default;
  Device* device() const { return device_; }
  int64_t bytes() const { return bytes_; }

 private:
  Device* device_;
  int64_t bytes_;
};

// The values of a run's params (CompiledProgram::params), by slot: each the 64-bit pattern
// ir::encode_param makes of it.
using ParamValues = std::vector<uint64_t>;

// A loaded CompiledProgram, replayable with new bindings and new param values.
class Executable {
 public:
  virtual ~Executable() = default;
  // inputs[i] binds input position i, outputs[i] output position i (CompiledProgram::buffers),
  // params[s] is param slot s (CompiledProgram::params).
  virtual absl::Status run(const std::vector<Buffer*>& inputs, const std::vector<Buffer*>& outputs,
                           const ParamValues& params) = 0;
  // Kernels launched by one run().
  virtual int kernels_per_run() const = 0;
  // One run as run() would do it, with each kernel's device time measured: element k is kernel
  // k's microseconds (CompiledProgram::kernels order; 0 for a kernel that launches nothing). For
  // autotuning (replay/autotune.h); the run is synchronous. Unimplemented where the backend
  // cannot time its kernels one by one.
  virtual absl::StatusOr<std::vector<double>> kernel_times(const std::vector<Buffer*>& inputs,
                                                           const std::vector<Buffer*>& outputs,
                                                           const ParamValues& params) {
    (void)inputs, (void)outputs, (void)params;
    return absl::UnimplementedError("this backend does not time kernels one by one");
  }
  // Symbolic dimensions (passes/symbolic.h): whether resize() can work at all here.
  virtual bool resizable() const { return false; }
  // Makes this executable run `c` from now on: another size of the program it was loaded from,
  // with the same module and kernels, steps and buffers in the same order, and other launch
  // shapes, params, tensor maps and memory plan. Runs already issued are not affected. CUDA
  // updates the instantiated graph's kernel nodes in place (no new instantiation), growing the
  // arena when the size needs more. An empty `c.module` stands for the module the executable
  // runs (a caller that checked it once, replay::SharedSizes, need not pass megabytes of it to be
  // hashed on every switch). FailedPrecondition (saying what differs) when `c` is not such a
  // program, or the executable holds what cannot be resized (loops, branches, collectives); the
  // executable is unchanged then.
  virtual absl::Status resize(const CompiledProgram& c) {
    (void)c;
    return absl::UnimplementedError("this backend does not resize executables");
  }
};

// Turns kernel IR into a CompiledProgram for one target, without a device.
class Compiler {
 public:
  virtual ~Compiler() = default;
  // The target this compiler makes code for (what the passes planned the Program with).
  virtual const ir::TargetInfo& target() const = 0;
  // What a CompiledProgram of this compiler is checked against at load (CompiledProgram::target_key).
  virtual std::string target_key() const = 0;
  // `p` must pass ir::verify(p). Source and assembly are kept in the result (for dumps) when
  // support::options().keep_sources(). Compiled binaries go through the kernel cache on disk
  // (compile_cache.h), counted in stats.
  virtual absl::StatusOr<CompiledProgram> compile(const ir::Program& p) const = 0;
  // Autotuning (replay/autotune.h): the code variants of kernel `k` of `p` worth timing, as
  // values of ir::Kernel::config, the first being what compile() chooses for "" by itself;
  // `shape_class` names what the fastest one depends on (kernels of one class share a result).
  // Empty (the default) when there is nothing to choose.
  virtual std::vector<std::string> tuning_candidates(const ir::Program& p, int k, std::string* shape_class) const {
    (void)p, (void)k, (void)shape_class;
    return {};
  }
};

class Device {
 public:
  virtual ~Device() = default;
  virtual std::string name() const = 0;  // the backend's name: "cpu", "cuda", "vulkan", ...
  virtual std::string description() const = 0;
  // What a Compiler for this device is made from.
  virtual const ir::TargetInfo& target() const = 0;
  // A GPU API implemented on the CPU (Mesa's lavapipe): usable, never picked as the default.
  virtual bool is_emulated() const { return false; }
  // OK when load() takes programs with collective steps (ir/program.h): the CPU runs them through
  // their groups' host communicators, CUDA through NCCL. Otherwise why not (Unimplemented: the
  // backend has none; Unavailable: a library is missing), and load() refuses such programs
  // (refuse_collectives in compiled_program.h).
  virtual absl::Status collectives_status() const {
    return absl::UnimplementedError(name() + " has no collectives in this build (they run on cpu and cuda)");
  }
  virtual absl::StatusOr<std::shared_ptr<Buffer>> alloc(int64_t bytes) = 0;
  virtual absl::Status upload(Buffer* dst, const void* src, int64_t bytes) = 0;
  virtual absl::Status download(Buffer* src, void* dst, int64_t bytes) = 0;
  struct Download {
    Buffer* src;
    void* dst;
    int64_t bytes;
  };
  // Default: one download after another (right for a device whose downloads are memcpys).
  virtual absl::Status download_many(const std::vector<Download>& all) {
    for (const Download& d : all)
      if (absl::Status s = download(d.src, d.dst, d.bytes); !s.ok()) return s;
    return absl::OkStatus();
  }
  // FailedPrecondition when `c` was compiled for another target.
  virtual absl::StatusOr<std::unique_ptr<Executable>> load(const CompiledProgram& c) = 0;
  virtual absl::Status synchronize() { return absl::OkStatus(); }
};

}  // namespace kiln::runtime

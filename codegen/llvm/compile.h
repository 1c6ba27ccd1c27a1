// The CPU compiler's LLVM half: every kernel of a Program as LLVM IR, optimized at O3 for the CPU
// an ir::TargetInfo names, emitted as relocatable object files in memory. The functions are split
// over up to kMaxParts modules, compiled side by side on KILN_COMPILE_THREADS threads.
//
// Device-free and JIT-free: nothing here runs code. The objects are loaded by the CPU backend
// (backends/cpu/jit_linker.h), in this process or in another one, later. Symbol names depend
// only on the Program ("kiln_" + the kernel's name), never on a per-process counter, so an object
// can be cached on disk and loaded anywhere its target_key matches. Emitting the IR is cheap;
// optimization and code generation are what the kernel cache on disk saves, so the printed
// unoptimized module is the cache key's main part (backends/cpu/compiler.cc).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/program.h"
#include "ir/target_info.h"

namespace kiln::codegen::cpu {

// The machine code is made for: LLVM's triple, CPU name and feature string.
struct CpuTarget {
  std::string triple, cpu, features;
  // "<triple> <cpu> <features>": an object made for one key must not run on another.
  std::string key() const;
};

// The CPU `t` names (cpu_name, cpu_features), or the host's as LLVM detects it (features sorted:
// the same string in every process) when t.cpu_name is empty. Unavailable when LLVM has no code
// generator for the host; InvalidArgument for a CPU name LLVM does not know.
absl::StatusOr<CpuTarget> resolve_cpu(const ir::TargetInfo& t);

// What else decides an object besides its IR and its target: LLVM's version and the optimization
// and code generation settings (part of the cache key).
std::string compiler_identity();

struct KernelEntry {
  // void symbol(char** args, const int32_t* index, int64_t tile_begin, int64_t tile_end)
  // (emit_kernel.h); a twin's entry is its family's first kernel's symbol.
  std::string symbol;
  int twin = -1;       // the kernel whose function this one calls (ir::kernel_twins); its own index if none
  int64_t tiles = 0;   // parallel work units
  int64_t work = 0;    // approximate element visits, to decide whether threading pays
};

// A program's functions are split over at most this many parts (modules of their own), which are
// optimized and compiled on threads of their own; the split depends only on the Program.
constexpr int kMaxParts = 8;

// The module of a program of several parts: "KILNOBJS", the count and each object's size (u64
// little-endian), then the ELF objects. A program of one part is its ELF object alone.
constexpr char kObjectsMagic[8] = {'K', 'I', 'L', 'N', 'O', 'B', 'J', 'S'};
std::string pack_objects(const std::vector<std::string>& objects);
// The objects of a module (one for a plain ELF object); InvalidArgument on a malformed list.
absl::StatusOr<std::vector<std::string_view>> unpack_objects(std::string_view blob);

// One Program's kernels in LLVM modules (its parts) for one CPU. Not thread-safe; separate
// instances are independent (each part has its own LLVMContext and TargetMachine), so compiles
// run concurrently, and one compile's parts are optimized and compiled side by side.
class ProgramModule {
 public:
  // Emits (and verifies) the IR of every kernel of `p`: cheap, no optimization yet.
  static absl::StatusOr<ProgramModule> emit(const ir::Program& p, const CpuTarget& target);
  ProgramModule(ProgramModule&&) noexcept;
  ProgramModule& operator=(ProgramModule&&) noexcept;
  ~ProgramModule();

  const std::vector<KernelEntry>& kernels() const;
  // The module as emitted: with the target, everything that decides the object.
  const std::string& unoptimized_ir() const { return unoptimized_ir_; }
  // Each kernel's optimized IR (for dumps); optimizes first if needed. Call it before
  // emit_object, whose code generation passes rewrite the IR further.
  std::vector<std::string> optimized_ir();
  // The module holding every kernel: one relocatable object per part (pack_objects), each part
  // optimized first if needed, the parts on up to KILN_COMPILE_THREADS threads.
  absl::StatusOr<std::string> emit_object();

 private:
  struct State;
  explicit ProgramModule(std::unique_ptr<State> s);
  void optimize();

  std::unique_ptr<State> s_;
  std::string unoptimized_ir_;
};

}  // namespace kiln::codegen::cpu

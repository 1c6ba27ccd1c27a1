// The CPU Compiler (compiler.h): emit the Program's IR, build the cache key from it, and compile the
// object through the kernel cache on disk; fill in the CompiledProgram.
#include "backends/cpu/compiler.h"

#include "absl/strings/str_cat.h"
#include "ir/kernel_twins.h"
#include "runtime/compile_cache.h"
#include "support/options.h"

namespace kiln::runtime::cpu {
namespace {

// What the cache accepts from disk: an ELF object (anything else was written by something else).
// A cached module: one ELF object, or the objects of several parts (codegen::cpu::pack_objects).
bool is_object(std::string_view blob) {
  auto objects = codegen::cpu::unpack_objects(blob);
  if (!objects.ok()) return false;
  for (std::string_view o : *objects)
    if (o.size() <= 4 || o.substr(0, 4) != "\x7f" "ELF") return false;
  return true;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Compiler>> CpuCompiler::create(const ir::TargetInfo& target) {
  if (target.is_gpu)
    return absl::InvalidArgumentError(absl::StrCat("cpu: cannot compile for the GPU target '", target.name, "'"));
  auto machine = codegen::cpu::resolve_cpu(target);
  if (!machine.ok()) return machine.status();
  return std::unique_ptr<Compiler>(new CpuCompiler(target, *std::move(machine)));
}

absl::StatusOr<CompiledProgram> CpuCompiler::compile(const ir::Program& p) const {
  CompiledProgram c = plan_of(p);
  c.backend = "cpu";
  c.target_key = machine_.key();
  if (p.kernels.empty()) return c;
  auto mod = codegen::cpu::ProgramModule::emit(p, machine_);
  if (!mod.ok()) return mod.status();
  std::vector<std::string> sources;
  if (support::options().keep_sources()) sources = mod->optimized_ir();  // before emit_object
  const std::string key = absl::StrCat("kiln cpu object\n", codegen::cpu::compiler_identity(), "\n", c.target_key, "\n",
                                       mod->unoptimized_ir());
  auto object = CompileCache::for_backend("cpu").get_or_compile(
      key, int(p.kernels.size()), [&] { return mod->emit_object(); }, is_object,
      absl::StrCat("kiln cpu object\n", c.target_key, "\n", mod->unoptimized_ir()));
  if (!object.ok()) return object.status();
  c.module = *std::move(object);
  const std::vector<codegen::cpu::KernelEntry>& entries = mod->kernels();
  if (entries.size() != c.kernels.size())
    return absl::InternalError(absl::StrCat("cpu: ", entries.size(), " emitted kernels for a program of ", c.kernels.size()));
  for (size_t i = 0; i < entries.size(); ++i) {
    CompiledKernel& k = c.kernels[i];
    // A twin keeps a name of its own (profiles, dumps) and calls its family's function.
    k.twin = entries[i].twin == int(i) ? -1 : entries[i].twin;
    k.name = k.twin < 0 ? entries[i].symbol : "kiln_" + p.kernels[i].name;
    k.buffers = ir::kernel_buffers(p.kernels[i]);
    k.params = ir::kernel_param_slots(p.kernels[i]);
    k.tiles = entries[i].tiles;
    k.work = entries[i].work;
    if (i < sources.size()) k.source = sources[i];
  }
  return c;
}

}  // namespace kiln::runtime::cpu

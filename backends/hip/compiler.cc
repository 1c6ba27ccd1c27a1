// The HIP Compiler (compiler.h): render, compile the module through the disk cache, and fill in
// the CompiledProgram's launch information.
#include "backends/hip/compiler.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "backends/hip/comgr.h"
#include "backends/hip/target.h"
#include "codegen/c_family/gpu_program.h"
#include "runtime/compile_cache.h"
#include "support/options.h"

namespace kiln::runtime::hip {

std::string HipCompiler::target_key() const { return hip::target_key(target_); }

absl::StatusOr<CompiledProgram> HipCompiler::compile(const ir::Program& p) const {
  if (p.has_control()) return absl::UnimplementedError(kHipNoControl);
  auto rendered = codegen::gpu::render(p, codegen::gpu::Dialect::kHip, target_);
  if (!rendered.ok()) return rendered.status();
  CompiledProgram c = plan_of(p);
  c.backend = "hip";
  c.target_key = target_key();
  if (!rendered->kernels.empty()) {
    const std::string& gfx = target_.cpu_name;
    const std::string key = absl::StrCat("kiln hip module v1\ncomgr ", comgr_version(), "\n", gfx, "\n",
                                         absl::StrJoin(comgr_options(), " "), "\n", rendered->module_source);
    auto bin = CompileCache::for_backend("hip").get_or_compile(
        key, int(rendered->kernels.size()),
        [&]() -> absl::StatusOr<std::string> { return comgr_compile(rendered->module_source, gfx); },
        // A code object is an ELF file.
        [](std::string_view b) { return b.size() > 4 && b.substr(0, 4) == "\x7f" "ELF"; },
        absl::StrCat("kiln hip module v1\n", gfx, "\n", rendered->module_source));
    if (!bin.ok()) return bin.status();
    c.module = *std::move(bin);
    if (support::options().keep_sources()) c.module_source = rendered->module_source;
  }
  if (absl::Status s = codegen::gpu::take_kernels("hip", &*rendered, &c.kernels); !s.ok()) return s;
  return c;
}

absl::StatusOr<std::unique_ptr<Compiler>> HipCompiler::create(const ir::TargetInfo& target) {
  if (target.name != "hip" || target.cpu_name.rfind("gfx", 0) != 0)
    return absl::InvalidArgumentError(absl::StrCat("hip: a compiler needs an AMD GPU target (target '", target.name,
                                                   "' has no gfx processor)"));
  return std::make_unique<HipCompiler>(target);
}

}  // namespace kiln::runtime::hip

// The Metal Compiler (compiler.h): refuse what Metal cannot run, render the MSL module, and fill
// in the CompiledProgram's launch information.
#include "backends/metal/compiler.h"

#include "absl/strings/str_cat.h"
#include "backends/metal/target.h"
#include "codegen/c_family/gpu_program.h"
#include "support/options.h"

namespace kiln::runtime::metal {
namespace {

// Why `p` needs float64 (a buffer or a value computed in a kernel), or "" when it does not.
std::string float64_use(const ir::Program& p) {
  for (size_t b = 0; b < p.buffers.size(); ++b)
    if (p.buffers[b].dtype == DType::kFloat64)
      return absl::StrCat("buffer ", b, " (", shape_str(p.buffers[b].shape), ") holds float64");
  for (const ir::Kernel& k : p.kernels)
    for (const ir::Kernel* part : {&k, k.chained() ? &k.finish[0] : nullptr})
      if (part)
        for (const ir::KNode& n : part->nodes)
          if (n.dtype == DType::kFloat64) return absl::StrCat("kernel ", k.name, " computes in float64");
  return "";
}

}  // namespace

std::string MetalCompiler::target_key() const { return metal::target_key(target_); }

absl::StatusOr<CompiledProgram> MetalCompiler::compile(const ir::Program& p) const {
  if (p.has_control()) return absl::UnimplementedError(kMetalNoControl);
  if (const std::string why = float64_use(p); !why.empty())
    return absl::UnimplementedError(absl::StrCat("metal: ", why, ", and Metal GPUs have no float64; cast to float32 first"));
  auto rendered = codegen::gpu::render(p, codegen::gpu::Dialect::kMsl, target_);
  if (!rendered.ok()) return rendered.status();
  CompiledProgram c = plan_of(p);
  c.backend = "metal";
  c.target_key = target_key();
  c.module = rendered->module_source;
  if (support::options().keep_sources()) c.module_source = rendered->module_source;
  if (absl::Status s = codegen::gpu::take_kernels("metal", &*rendered, &c.kernels); !s.ok()) return s;
  return c;
}

absl::StatusOr<std::unique_ptr<Compiler>> MetalCompiler::create(const ir::TargetInfo& target) {
  if (target.name != "metal" || target.subgroup_size < 1)
    return absl::InvalidArgumentError(absl::StrCat("metal: a compiler needs a Metal target (got target '", target.name, "')"));
  return std::make_unique<MetalCompiler>(target);
}

}  // namespace kiln::runtime::metal

#include "backends/vulkan/compiler.h"

#include <cstring>

#include "absl/strings/str_cat.h"
#include "backends/vulkan/target.h"
#include "runtime/compile_cache.h"
#include "support/parallel.h"
#include "support/options.h"

namespace kiln::runtime::vk {
namespace {

constexpr uint32_t kSpirvMagic = 0x07230203u;

// A cached blob is used only if it looks like a SPIR-V module (a blob of another kiln version
// is recompiled and overwritten).
bool is_spirv(std::string_view b) {
  uint32_t magic = 0;
  if (b.size() < 20 || b.size() % 4 != 0) return false;
  std::memcpy(&magic, b.data(), 4);
  return magic == kSpirvMagic;
}


}  // namespace

SpirvOptions spirv_options(const ir::TargetInfo& t) {
  SpirvOptions o;
  o.vulkan13 = t.spirv_1_6;
  o.scalar_layout = t.scalar_layout;
  o.optimize = support::options().vulkan_spirv_opt;
  o.float_controls.preserve_inf_nan16 = t.preserve_inf_nan16;
  o.float_controls.preserve_inf_nan32 = t.preserve_inf_nan32;
  o.float_controls.preserve_inf_nan64 = t.preserve_inf_nan64;
  o.float_controls.preserve_denorm32 = t.f32_denormals;
  return o;
}

absl::StatusOr<std::unique_ptr<VulkanCompiler>> VulkanCompiler::create(const ir::TargetInfo& t) {
  if (t.name != "vulkan")
    return absl::InvalidArgumentError(absl::StrCat("vulkan: cannot compile for a '", t.name, "' target"));
  if (t.subgroup_size < 1 || t.max_workgroup < 1)
    return absl::InvalidArgumentError(absl::StrCat("vulkan: a target with subgroup size ", t.subgroup_size, " and workgroups of ",
                                                   t.max_workgroup));
  return std::unique_ptr<VulkanCompiler>(new VulkanCompiler(t));
}

VulkanCompiler::VulkanCompiler(const ir::TargetInfo& t) : target_(t), key_(vk::target_key(t)), spirv_(spirv_options(t)) {}

std::string VulkanCompiler::cache_key(const std::string& glsl) const {
  return absl::StrCat("kiln vulkan spirv v2\n", spirv_compiler_id(spirv_), "\n", key_, "\n", glsl);
}

std::string VulkanCompiler::cache_path(const std::string& glsl) const {
  return CompileCache::for_backend("vulkan").path_for(cache_key(glsl));
}

absl::StatusOr<CompiledProgram> VulkanCompiler::compile(const ir::Program& p) const {
  // GLSL indexes buffers with 32-bit unsigned integers (see dialect_glsl.cc).
  for (const ir::BufferDesc& b : p.buffers)
    if (shape_numel(b.shape) > (int64_t(1) << 32))
      return absl::UnimplementedError(absl::StrCat("vulkan: a tensor of ", shape_numel(b.shape), " elements (", shape_str(b.shape),
                                                   ") is over the Vulkan backend's limit of 2^32 elements per tensor"));
  auto rendered = codegen::gpu::render(p, codegen::gpu::Dialect::kGlsl, target_);
  if (!rendered.ok()) return rendered.status();
  return compile_rendered(p, *rendered);
}

absl::StatusOr<CompiledProgram> VulkanCompiler::compile_rendered(const ir::Program& p,
                                                                 const codegen::gpu::RenderedProgram& r) const {
  if (r.kernels.size() != p.kernels.size())
    return absl::InvalidArgumentError(
        absl::StrCat("vulkan: ", r.kernels.size(), " rendered kernels for a program of ", p.kernels.size()));
  const bool keep_sources = support::options().keep_sources();
  const CompileCache cache = CompileCache::for_backend("vulkan");
  CompiledProgram c = plan_of(p);
  c.backend = "vulkan";
  c.target_key = key_;
  for (size_t i = 0; i < r.kernels.size(); ++i)
    c.kernels[i].name = r.kernels[i].name.empty() ? absl::StrCat("kernel", i) : r.kernels[i].name;
  // Each kernel is its own SPIR-V module: they compile side by side (KILN_COMPILE_THREADS). A
  // twin (codegen/c_family/gpu_program.h) has none: it dispatches its family's first shader.
  std::vector<absl::StatusOr<std::string>> spirv(r.kernels.size(), absl::UnknownError("not compiled"));
  support::parallel_for(r.kernels.size(), support::options().compile_threads, [&](size_t i) {
    if (r.kernels[i].twin >= 0) {
      spirv[i] = std::string();
      return;
    }
    const std::string& name = c.kernels[i].name;
    const std::string& glsl = r.kernels[i].source;
    spirv[i] = cache.get_or_compile(
        cache_key(glsl), 1,
        [&]() -> absl::StatusOr<std::string> {
          auto words = compile_glsl(name, glsl, spirv_);
          if (!words.ok()) return words.status();
          return std::string(reinterpret_cast<const char*>(words->data()), words->size() * sizeof(uint32_t));
        },
        is_spirv, absl::StrCat("kiln vulkan spirv v2\n", key_, "\n", glsl));
  });
  for (size_t i = 0; i < r.kernels.size(); ++i) {
    const codegen::gpu::KernelSource& k = r.kernels[i];
    CompiledKernel& ck = c.kernels[i];
    if (!spirv[i].ok()) return spirv[i].status();  // the first failing kernel's error
    ck.binary = *std::move(spirv[i]);
    ck.twin = k.twin;
    // The table indices the runtime pushes for the kernel (gpu_program.h): its buffers, then its
    // params (by slot).
    ck.buffers = k.buffers;
    ck.params = k.params;
    for (int d = 0; d < 3; ++d) {
      ck.grid[d] = k.grid[d];
      ck.block[d] = k.block[d];
    }
    ck.strategy = k.strategy;
    if (keep_sources) ck.source = k.source;
  }
  return c;
}

}  // namespace kiln::runtime::vk

#include "backends/vulkan/spirv_compiler.h"

#include <shaderc/shaderc.hpp>
#include <spirv-tools/libspirv.hpp>
#include <spirv-tools/optimizer.hpp>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"

namespace kiln::runtime::vk {
namespace {

spv_target_env target_env(const SpirvOptions& o) { return o.vulkan13 ? SPV_ENV_VULKAN_1_3 : SPV_ENV_VULKAN_1_2; }

std::string numbered(const std::string& src) {
  std::string out;
  int line = 0;
  for (absl::string_view l : absl::StrSplit(src, '\n')) absl::StrAppendFormat(&out, "%4d| %s\n", ++line, l);
  return out;
}

absl::Status failure(const std::string& what, const std::string& name, const std::string& log, const std::string& glsl) {
  return absl::InternalError(absl::StrCat("vulkan: ", what, " of kernel '", name, "' failed:\n", log, "\n--- GLSL source ---\n", numbered(glsl)));
}

spvtools::ValidatorOptions validator_options(const SpirvOptions& o) {
  spvtools::ValidatorOptions v;
  v.SetScalarBlockLayout(o.scalar_layout);
  return v;
}

absl::Status validate(const std::vector<uint32_t>& spirv, const SpirvOptions& o, std::string* log) {
  spvtools::SpirvTools tools(target_env(o));
  tools.SetMessageConsumer([log](spv_message_level_t, const char*, const spv_position_t& pos, const char* msg) {
    absl::StrAppend(log, "word ", pos.index, ": ", msg, "\n");
  });
  if (!tools.Validate(spirv.data(), spirv.size(), validator_options(o))) return absl::InternalError("invalid");
  return absl::OkStatus();
}

}  // namespace

std::string spirv_compiler_id(const SpirvOptions& o) {
  unsigned version = 0, revision = 0;
  shaderc_get_spv_version(&version, &revision);
  return absl::StrCat("shaderc spv ", version, ".", revision, "; ", spvSoftwareVersionDetailsString(), "; env ",
                      o.vulkan13 ? "vulkan1.3" : "vulkan1.2", o.scalar_layout ? " scalar" : "", o.optimize ? " -O" : " -O0",
                      o.float_controls.preserve_inf_nan16 ? " szinp16" : "", o.float_controls.preserve_inf_nan32 ? " szinp32" : "",
                      o.float_controls.preserve_inf_nan64 ? " szinp64" : "", o.float_controls.preserve_denorm32 ? " denorm32" : "");
}

absl::StatusOr<std::vector<uint32_t>> compile_glsl(const std::string& name, const std::string& glsl, const SpirvOptions& o) {
  shaderc::Compiler compiler;
  shaderc::CompileOptions opts;
  opts.SetSourceLanguage(shaderc_source_language_glsl);
  opts.SetTargetEnvironment(shaderc_target_env_vulkan, o.vulkan13 ? shaderc_env_version_vulkan_1_3 : shaderc_env_version_vulkan_1_2);
  opts.SetTargetSpirv(o.vulkan13 ? shaderc_spirv_version_1_6 : shaderc_spirv_version_1_5);
  opts.SetOptimizationLevel(shaderc_optimization_level_zero);  // SPIRV-Tools optimizes below
  shaderc::SpvCompilationResult r =
      compiler.CompileGlslToSpv(glsl, shaderc_compute_shader, (name + ".comp").c_str(), "main", opts);
  if (r.GetCompilationStatus() != shaderc_compilation_status_success)
    return failure("GLSL compile (shaderc)", name, r.GetErrorMessage(), glsl);
  std::vector<uint32_t> spirv = add_float_controls(std::vector<uint32_t>(r.cbegin(), r.cend()), o.float_controls);
  std::string log;
  if (!validate(spirv, o, &log).ok()) return failure("SPIR-V validation (after shaderc)", name, log, glsl);
  if (!o.optimize) return spirv;

  spvtools::Optimizer opt(target_env(o));
  opt.SetMessageConsumer([&log](spv_message_level_t level, const char*, const spv_position_t&, const char* msg) {
    if (level <= SPV_MSG_ERROR) absl::StrAppend(&log, msg, "\n");
  });
  opt.RegisterPerformancePasses();
  std::vector<uint32_t> optimized;
  spvtools::OptimizerOptions oo;
  oo.set_run_validator(false);  // validated just above
  if (!opt.Run(spirv.data(), spirv.size(), &optimized, oo)) return failure("SPIR-V optimization", name, log, glsl);
  if (!validate(optimized, o, &log).ok()) return failure("SPIR-V validation (after optimization)", name, log, glsl);
  return optimized;
}

}  // namespace kiln::runtime::vk

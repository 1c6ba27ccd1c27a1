// GLSL -> SPIR-V without a device: shaderc, SPIRV-Tools validation and optimization, and the
// float-controls execution modes added to every kernel.
#include <gtest/gtest.h>

#include <algorithm>

#include "backends/vulkan/spirv_compiler.h"
#include "vulkan/vulkan_fixture.h"

namespace kiln::vktest {
namespace {

using runtime::vk::SpirvOptions;

const std::string kKernel = glsl_preamble() + R"(void main() {
  Table t = Table(pc.table);
  uint i = gl_GlobalInvocationID.x;
  BufF32(t.a[1]).v[i] = BufF32(t.a[0]).v[i] * 2.0 + 1.0;
}
)";

// Whether `spirv` has an instruction with exactly these words.
bool has_instruction(const std::vector<uint32_t>& spirv, const std::vector<uint32_t>& words) {
  for (size_t i = 5; i < spirv.size();) {
    uint32_t n = spirv[i] >> 16;
    if (n == 0) return false;
    if (n == words.size() && std::equal(words.begin(), words.end(), spirv.begin() + i)) return true;
    i += n;
  }
  return false;
}

TEST(Spirv, CompilesValidatesAndOptimizes) {
  SpirvOptions o;
  o.optimize = false;
  auto plain = runtime::vk::compile_glsl("k", kKernel, o);
  ASSERT_TRUE(plain.ok()) << plain.status();
  o.optimize = true;
  auto opt = runtime::vk::compile_glsl("k", kKernel, o);
  ASSERT_TRUE(opt.ok()) << opt.status();
  EXPECT_EQ((*opt)[0], 0x07230203u);
  EXPECT_LT(opt->size(), plain->size());  // the optimizer removed the temporaries
  EXPECT_NE(runtime::vk::spirv_compiler_id(o), runtime::vk::spirv_compiler_id(SpirvOptions{false, false, false, {}}));
}

TEST(Spirv, SignedZeroInfNanPreserveIsAddedForTheUsedWidths) {
  SpirvOptions o;
  o.float_controls.preserve_inf_nan32 = o.float_controls.preserve_inf_nan64 = true;
  auto spirv = runtime::vk::compile_glsl("k", kKernel, o);
  ASSERT_TRUE(spirv.ok()) << spirv.status();  // and the result still validates
  EXPECT_TRUE(has_instruction(*spirv, {(2u << 16) | 17u, 4466u}));  // OpCapability SignedZeroInfNanPreserve
  bool mode32 = false, mode64 = false;
  for (size_t i = 5; i + 3 < spirv->size(); ++i) {
    if ((*spirv)[i] != ((4u << 16) | 16u) || (*spirv)[i + 2] != 4461u) continue;  // OpExecutionMode .. SignedZeroInfNanPreserve
    mode32 |= (*spirv)[i + 3] == 32;
    mode64 |= (*spirv)[i + 3] == 64;
  }
  EXPECT_TRUE(mode32);
  EXPECT_FALSE(mode64);  // the kernel uses no doubles
  EXPECT_FALSE(has_instruction(*spirv, {(2u << 16) | 17u, 4464u}));  // no DenormPreserve asked for

  o.float_controls.preserve_denorm32 = true;
  auto denorm = runtime::vk::compile_glsl("k", kKernel, o);
  ASSERT_TRUE(denorm.ok()) << denorm.status();
  EXPECT_TRUE(has_instruction(*denorm, {(2u << 16) | 17u, 4464u}));  // OpCapability DenormPreserve
  EXPECT_TRUE(has_instruction(*denorm, {(2u << 16) | 17u, 4466u}));
  o.float_controls = {};
  auto without = runtime::vk::compile_glsl("k", kKernel, o);
  ASSERT_TRUE(without.ok());
  EXPECT_FALSE(has_instruction(*without, {(2u << 16) | 17u, 4466u}));
}

TEST(Spirv, ShadercErrorsCarryTheLogAndTheSource) {
  auto r = runtime::vk::compile_glsl("bad", "#version 460\nvoid main() { int x = 1.5 +; }\n", SpirvOptions{});
  ASSERT_FALSE(r.ok());
  const std::string m(r.status().message());
  EXPECT_NE(m.find("GLSL compile (shaderc) of kernel 'bad' failed"), std::string::npos) << m;
  EXPECT_NE(m.find("bad.comp:2: error"), std::string::npos) << m;
  EXPECT_NE(m.find("   2| void main() { int x = 1.5 +; }"), std::string::npos) << m;
}

TEST(Spirv, ValidatorRejectsWhatShadercAccepts) {
  // shaderc accepts `layout(scalar)` anywhere; an array of vec3 with a 12-byte stride is valid
  // Vulkan SPIR-V only with scalarBlockLayout, and the validator must say so when it is off.
  const std::string scalar = R"(#version 460
#extension GL_EXT_scalar_block_layout : require
layout(local_size_x = 1) in;
layout(scalar, binding = 0) buffer B { vec3 v[]; } buf;
void main() { buf.v[1] = buf.v[0]; }
)";
  SpirvOptions o;
  o.scalar_layout = false;
  auto r = runtime::vk::compile_glsl("scalar", scalar, o);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("SPIR-V validation (after shaderc) of kernel 'scalar' failed"), std::string::npos) << r.status();
  o.scalar_layout = true;
  EXPECT_TRUE(runtime::vk::compile_glsl("scalar", scalar, o).ok());
}

}  // namespace
}  // namespace kiln::vktest

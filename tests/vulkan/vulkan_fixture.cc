#include "vulkan/vulkan_fixture.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "testing/temp_dir.h"

namespace kiln::vktest {

std::string fresh_dir(const std::string& tag) { return testing::unique_temp_dir("vk_" + tag); }

std::unique_ptr<runtime::vk::VulkanDevice> make_device(const std::string& cache_dir, std::string* why) {
  ::setenv("KILN_VULKAN_VALIDATION", "1", 1);
  ::setenv("KILN_CACHE_DIR", cache_dir.c_str(), 1);
  ::unsetenv("KILN_DISK_CACHE");
  auto d = runtime::vk::VulkanDevice::create();
  if (!d.ok()) {
    *why = std::string(d.status().message());
    return nullptr;
  }
  return *std::move(d);
}

std::unique_ptr<runtime::vk::VulkanCompiler> make_compiler(const ir::TargetInfo& t) {
  auto c = runtime::vk::VulkanCompiler::create(t);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? *std::move(c) : nullptr;
}

absl::StatusOr<std::unique_ptr<runtime::Executable>> compile_and_load(runtime::Device* d, const ir::Program& p,
                                                                      const codegen::gpu::RenderedProgram& r) {
  auto compiler = runtime::vk::VulkanCompiler::create(d->target());
  if (!compiler.ok()) return compiler.status();
  auto compiled = (*compiler)->compile_rendered(p, r);
  if (!compiled.ok()) return compiled.status();
  return d->load(*compiled);
}

int ProgramBuilder::add_buffer(ir::BufferKind kind, int64_t n) {
  ir::BufferDesc b;
  b.kind = kind;
  b.dtype = DType::kFloat32;
  b.shape = {n};
  if (kind == ir::BufferKind::kInput) b.index = p_.num_inputs++;
  if (kind == ir::BufferKind::kOutput) b.index = p_.num_outputs++;
  if (kind == ir::BufferKind::kIntermediate) {
    b.offset = p_.arena_bytes;
    p_.arena_bytes += (b.bytes() + 255) / 256 * 256;
  }
  p_.buffers.push_back(b);
  return int(p_.buffers.size()) - 1;
}
int ProgramBuilder::input(int64_t n) { return add_buffer(ir::BufferKind::kInput, n); }
int ProgramBuilder::intermediate(int64_t n) { return add_buffer(ir::BufferKind::kIntermediate, n); }
int ProgramBuilder::output(int64_t n) {
  int b = add_buffer(ir::BufferKind::kOutput, n);
  p_.outputs.push_back(b);
  return b;
}

std::string glsl_preamble() {
  return R"(#version 460
#extension GL_EXT_buffer_reference : require
#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require
layout(buffer_reference, std430, buffer_reference_align = 8) readonly buffer Table { uint64_t a[]; };
layout(push_constant) uniform PC { uint64_t table; } pc;
layout(buffer_reference, std430, buffer_reference_align = 4) buffer BufF32 { float v[]; };
layout(local_size_x = 64) in;
)";
}

int ProgramBuilder::map(const std::string& name, int64_t n, int dst, const std::vector<int>& srcs, const std::string& expr,
                        const std::vector<int>& deps) {
  std::string body = absl::StrCat("void main() {\n  Table t = Table(pc.table);\n  uint i = gl_GlobalInvocationID.x;\n  if (i >= ", n,
                                  "u) return;\n");
  for (size_t k = 0; k < srcs.size(); ++k) absl::StrAppend(&body, "  float x", k, " = BufF32(t.a[", srcs[k], "]).v[i];\n");
  absl::StrAppend(&body, "  BufF32(t.a[", dst, "]).v[i] = ", expr, ";\n}\n");
  return raw(name, glsl_preamble() + body, uint32_t((n + 63) / 64), deps, srcs, {dst});
}

int ProgramBuilder::raw(const std::string& name, const std::string& glsl, uint32_t groups, const std::vector<int>& deps,
                        const std::vector<int>& reads, const std::vector<int>& writes) {
  ir::Kernel k;
  k.name = name;
  for (int b : reads) {
    ir::KNode load;
    load.op = ir::Op::kLoad;
    load.buffer = b;
    k.nodes.push_back(load);
  }
  for (int b : writes) {
    ir::Store st;
    st.buffer = b;
    k.stores.push_back(st);
  }
  p_.kernels.push_back(k);
  codegen::gpu::KernelSource s;
  s.name = name;
  s.grid[0] = groups;
  s.block[0] = 64;
  s.source = glsl;
  r_.kernels.push_back(s);
  ir::Step step;
  step.kernel = int(p_.kernels.size()) - 1;
  step.deps = deps;
  p_.steps.push_back(step);
  return int(p_.steps.size()) - 1;
}

std::shared_ptr<runtime::Buffer> upload(runtime::Device* d, const std::vector<float>& v) {
  auto b = d->alloc(int64_t(v.size() * sizeof(float)));
  EXPECT_TRUE(b.ok()) << b.status();
  if (!b.ok()) return nullptr;
  absl::Status s = d->upload(b->get(), v.data(), int64_t(v.size() * sizeof(float)));
  EXPECT_TRUE(s.ok()) << s;
  return *b;
}

std::vector<float> download(runtime::Device* d, runtime::Buffer* b, size_t n) {
  std::vector<float> v(n);
  absl::Status s = d->download(b, v.data(), int64_t(n * sizeof(float)));
  EXPECT_TRUE(s.ok()) << s;
  return v;
}

std::vector<float> iota_floats(size_t n, float start) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i) v[i] = start + float(i);
  return v;
}

void VulkanTest::SetUp() {
  cache_dir_ = fresh_dir("cache");
  std::string why;
  dev_ = make_device(cache_dir_, &why);
  if (!dev_) GTEST_SKIP() << "no Vulkan device: " << why;
}

void VulkanTest::TearDown() {
  if (!dev_) return;
  ASSERT_TRUE(dev_->synchronize().ok());
  std::vector<std::string> msgs = dev_->validation_messages();
  EXPECT_TRUE(msgs.empty()) << "validation layer messages:\n" << absl::StrJoin(msgs, "\n");
}

}  // namespace kiln::vktest

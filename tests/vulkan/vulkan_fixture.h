// Helpers for the Vulkan runtime tests: a private Vulkan device per test (validation layer with
// synchronization validation on, its own kernel cache directory), programs with hand-written GLSL
// kernels that follow the gpu_program.h binding contract, and host <-> device helpers.
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <string>
#include <vector>

#include "backends/vulkan/compiler.h"
#include "backends/vulkan/device.h"
#include "codegen/c_family/gpu_program.h"
#include "ir/program.h"
#include "runtime/device.h"

namespace kiln::vktest {

// A fresh directory under the test temp dir.
std::string fresh_dir(const std::string& tag);

// A Vulkan device made for this test (not the registry singleton), or nullptr with the reason
// in *why when this machine has none.
std::unique_ptr<runtime::vk::VulkanDevice> make_device(const std::string& cache_dir, std::string* why);

// The Vulkan compiler for `t` (a test failure and nullptr if `t` is not a Vulkan target).
std::unique_ptr<runtime::vk::VulkanCompiler> make_compiler(const ir::TargetInfo& t);

// What the JIT does with hand-rendered kernels: compile them for d's target, load the result on d.
absl::StatusOr<std::unique_ptr<runtime::Executable>> compile_and_load(runtime::Device* d, const ir::Program& p,
                                                                      const codegen::gpu::RenderedProgram& r);

// An ir::Program plus its rendered kernels, built by hand.
class ProgramBuilder {
 public:
  int input(int64_t n);         // float32[n]
  int output(int64_t n);        // float32[n]
  int intermediate(int64_t n);  // float32[n] in the arena (no reuse)
  // out[i] = expr for i < n, where expr reads x0, x1, ... = srcs[k][i]. Returns the step index.
  int map(const std::string& name, int64_t n, int dst, const std::vector<int>& srcs, const std::string& expr,
          const std::vector<int>& deps);
  // A kernel with arbitrary GLSL source (no preamble added) dispatched over `groups` workgroups;
  // its ir::Kernel loads `reads` and stores `writes` (what validation mode mirrors).
  int raw(const std::string& name, const std::string& glsl, uint32_t groups, const std::vector<int>& deps,
          const std::vector<int>& reads = {}, const std::vector<int>& writes = {});
  ir::Program& program() { return p_; }
  codegen::gpu::RenderedProgram& rendered() { return r_; }

 private:
  int add_buffer(ir::BufferKind kind, int64_t n);
  ir::Program p_;
  codegen::gpu::RenderedProgram r_;
};

// The common GLSL preamble of the hand-written kernels (local_size_x = 64).
std::string glsl_preamble();

std::shared_ptr<runtime::Buffer> upload(runtime::Device* d, const std::vector<float>& v);
std::vector<float> download(runtime::Device* d, runtime::Buffer* b, size_t n);
std::vector<float> iota_floats(size_t n, float start);

// Base fixture: a validated device; TearDown fails the test on any validation message it did
// not expect (tests that provoke one call clear_validation_messages).
class VulkanTest : public ::testing::Test {
 protected:
  void SetUp() override;
  void TearDown() override;
  std::string cache_dir_;
  std::unique_ptr<runtime::vk::VulkanDevice> dev_;
};

}  // namespace kiln::vktest

// Compile apart from load: the Vulkan Compiler works from a TargetInfo alone, its CompiledProgram
// survives serialization, and a device loads it only when it was compiled for its target.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>

#include "backends/vulkan/spirv_module.h"
#include "backends/vulkan/target.h"
#include "fuzz/compare.h"
#include "ir/graph.h"
#include "ir/interpreter.h"
#include "passes/pipeline.h"
#include "runtime/compiled_program.h"
#include "testing/vulkan_target.h"
#include "vulkan/vulkan_fixture.h"

namespace kiln::vktest {
namespace {

// Two outputs, three kernels at least: a broadcast product reduced over rows, and an exp.
constexpr const char* kGraph = R"(graph {
  %0 = input 0 : f32[4,64]
  %1 = input 1 : f32[64]
  %2 = reshape %1 : f32[1,64]
  %3 = expand %2 : f32[4,64]
  %4 = mul %0, %3 : f32[4,64]
  %5 = reduce_sum %4 axes=[1] : f32[4,1]
  %6 = exp %0 : f32[4,64]
  output %5, %6
}
)";

ir::Program plan(const ir::TargetInfo& t) {
  auto g = ir::parse(kGraph);
  EXPECT_TRUE(g.ok()) << g.status();
  auto planned = passes::compile_graph(*g, t, passes::Options{});
  EXPECT_TRUE(planned.ok()) << planned.status();
  return planned.ok() ? planned->program : ir::Program{};
}

ir::TargetInfo handwritten_target() { return testing::handwritten_vulkan_target(); }

TEST(VulkanCompiler, CompilesFromATargetInfoAloneAndSerializes) {
  ::setenv("KILN_CACHE_DIR", fresh_dir("nodevice").c_str(), 1);
  const ir::TargetInfo t = handwritten_target();
  auto compiler = make_compiler(t);
  ASSERT_NE(compiler, nullptr);
  EXPECT_EQ(compiler->target_key(), runtime::vk::target_key(t));
  ir::Program p = plan(t);
  auto c = compiler->compile(p);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->backend, "vulkan");
  EXPECT_EQ(c->target_key, runtime::vk::target_key(t));
  ASSERT_EQ(c->kernels.size(), p.kernels.size());
  for (const runtime::CompiledKernel& k : c->kernels) {
    ASSERT_GE(k.binary.size(), 20u) << k.name;
    EXPECT_EQ(k.binary.substr(0, 4), std::string("\x03\x02\x23\x07", 4)) << k.name;  // SPIR-V magic
    EXPECT_TRUE(runtime::vk::spirv_words(k.binary).ok()) << k.name;
    EXPECT_FALSE(k.writes.empty()) << k.name;
    for (int b : k.writes) EXPECT_NE(c->buffers[size_t(b)].kind, ir::BufferKind::kInput) << k.name;
    EXPECT_TRUE(k.source.empty()) << "sources are kept only for dumps";
  }
  auto back = runtime::deserialize(runtime::serialize(*c));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->target_key, c->target_key);
  ASSERT_EQ(back->kernels.size(), c->kernels.size());
  for (size_t i = 0; i < c->kernels.size(); ++i) {
    EXPECT_EQ(back->kernels[i].binary, c->kernels[i].binary);
    EXPECT_EQ(back->kernels[i].grid, c->kernels[i].grid);
    EXPECT_EQ(back->kernels[i].block, c->kernels[i].block);
  }
}

TEST(VulkanCompiler, KeepsSourcesForDumpsAndRejectsOtherTargets) {
  ::setenv("KILN_CACHE_DIR", fresh_dir("sources").c_str(), 1);
  const ir::TargetInfo t = handwritten_target();
  ::setenv("KILN_DEBUG", "4", 1);
  auto c = make_compiler(t)->compile(plan(t));
  ::unsetenv("KILN_DEBUG");
  ASSERT_TRUE(c.ok()) << c.status();
  for (const runtime::CompiledKernel& k : c->kernels) EXPECT_NE(k.source.find("#version 460"), std::string::npos) << k.name;

  ir::TargetInfo cpu;  // name "cpu"
  auto other = runtime::vk::VulkanCompiler::create(cpu);
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(other.status().message().find("'cpu' target"), std::string::npos) << other.status();
}

using CompileApartTest = VulkanTest;

// Runs `exe` on `inputs` (by input position) and returns each graph output as the device wrote it.
std::vector<ir::HostTensor> run(runtime::Device* d, runtime::Executable* exe, const runtime::CompiledProgram& c,
                                const std::vector<ir::HostTensor>& inputs) {
  std::vector<std::shared_ptr<runtime::Buffer>> in, out(size_t(c.num_outputs));
  std::vector<runtime::Buffer*> in_raw, out_raw(size_t(c.num_outputs));
  for (const ir::HostTensor& t : inputs) {
    auto b = testing::upload_host(d, t);
    EXPECT_TRUE(b.ok()) << b.status();
    if (!b.ok()) return {};
    in_raw.push_back(b->get());
    in.push_back(*std::move(b));
  }
  for (const ir::BufferDesc& b : c.buffers) {
    if (b.kind != ir::BufferKind::kOutput) continue;
    auto buf = d->alloc(b.bytes());
    EXPECT_TRUE(buf.ok()) << buf.status();
    if (!buf.ok()) return {};
    out_raw[size_t(b.index)] = buf->get();
    out[size_t(b.index)] = *std::move(buf);
  }
  absl::Status s = exe->run(in_raw, out_raw, {});
  EXPECT_TRUE(s.ok()) << s;
  std::vector<ir::HostTensor> results;
  for (int o : c.outputs) {
    const ir::BufferDesc& b = c.buffers[size_t(o)];
    const auto& buf = b.kind == ir::BufferKind::kInput ? in[size_t(b.index)] : out[size_t(b.index)];
    auto host = testing::download_host(*buf, b.dtype, b.shape);
    EXPECT_TRUE(host.ok()) << host.status();
    results.push_back(host.ok() ? *std::move(host) : ir::HostTensor{});
  }
  return results;
}

TEST_F(CompileApartTest, ASerializedProgramLoadsAndMatchesTheReference) {
  // The compiler sees a copy of the target and nothing else of the device.
  const ir::TargetInfo t = dev_->target();
  auto compiler = make_compiler(t);
  ASSERT_NE(compiler, nullptr);
  ir::Program p = plan(t);
  auto compiled = compiler->compile(p);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  const std::string bytes = runtime::serialize(*compiled);
  compiled = absl::InternalError("dropped: only the bytes go on");

  auto loaded = runtime::deserialize(bytes);
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  auto exe = dev_->load(*loaded);
  ASSERT_TRUE(exe.ok()) << exe.status();
  EXPECT_EQ((*exe)->kernels_per_run(), int(loaded->steps.size()));

  auto g = ir::parse(kGraph);
  ASSERT_TRUE(g.ok());
  std::vector<ir::HostTensor> inputs = {ir::HostTensor::make(DType::kFloat32, {4, 64}),
                                        ir::HostTensor::make(DType::kFloat32, {64})};
  for (size_t k = 0; k < inputs[0].f.size(); ++k) inputs[0].f[k] = double(float(int(k % 37) - 18) / 16.0f);
  for (size_t k = 0; k < inputs[1].f.size(); ++k) inputs[1].f[k] = double(float(int(k % 11) - 5) / 4.0f);
  auto want = ir::interpret(*g, inputs);
  ASSERT_TRUE(want.ok()) << want.status();
  for (int rep = 0; rep < 2; ++rep) {  // a replay with the same executable gives the same values
    std::vector<ir::HostTensor> got = run(dev_.get(), exe->get(), *loaded, inputs);
    ASSERT_EQ(got.size(), want->size());
    for (size_t k = 0; k < got.size(); ++k) {
      testing::Comparison cmp = testing::compare_host((*want)[k], got[k], {1e-5, 1e-5});
      EXPECT_TRUE(cmp.ok()) << "output " << k << ":\n" << cmp.report;
    }
  }
}

TEST_F(CompileApartTest, AProgramForAnotherTargetIsRefusedWithBothKeys) {
  ir::TargetInfo other = dev_->target();
  other.subgroup_size = other.subgroup_size == 32 ? 16 : 32;  // the kernels bake it in
  auto compiled = make_compiler(other)->compile(plan(other));
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  auto exe = dev_->load(*compiled);
  ASSERT_FALSE(exe.ok());
  EXPECT_EQ(exe.status().code(), absl::StatusCode::kFailedPrecondition) << exe.status();
  const std::string m(exe.status().message());
  EXPECT_NE(m.find(runtime::vk::target_key(other)), std::string::npos) << m;
  EXPECT_NE(m.find(dev_->target_key()), std::string::npos) << m;

  compiled->backend = "cuda";  // and a program of another backend
  exe = dev_->load(*compiled);
  ASSERT_FALSE(exe.ok());
  EXPECT_EQ(exe.status().code(), absl::StatusCode::kFailedPrecondition) << exe.status();
  EXPECT_NE(exe.status().message().find("compiled for cuda"), std::string::npos) << exe.status();
}

TEST_F(CompileApartTest, ABrokenBinaryIsAnInvalidArgument) {
  const ir::TargetInfo t = dev_->target();
  auto compiled = make_compiler(t)->compile(plan(t));
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  runtime::CompiledProgram truncated = *compiled;
  truncated.kernels[0].binary.resize(truncated.kernels[0].binary.size() - 6);
  auto exe = dev_->load(truncated);
  ASSERT_FALSE(exe.ok());
  EXPECT_EQ(exe.status().code(), absl::StatusCode::kInvalidArgument) << exe.status();
  EXPECT_NE(exe.status().message().find("kernel '" + compiled->kernels[0].name + "'"), std::string::npos) << exe.status();

  runtime::CompiledProgram bad_step = *compiled;
  bad_step.steps[0].kernel = 99;
  exe = dev_->load(bad_step);
  ASSERT_FALSE(exe.ok());
  EXPECT_EQ(exe.status().code(), absl::StatusCode::kInvalidArgument) << exe.status();
  EXPECT_TRUE(dev_->load(*compiled).ok());  // the untouched program still loads
}

// Chained reductions (passes/chain_reduce.h): planned as a GPU plans them (more partials than a
// CPU would make) and compiled for this device, a full sum (a workgroup per partial: the
// workgroup storing the last one folds them all) and a column mean (column tiles: the thread
// storing a column's last partial folds it alone) are one kernel each, survive serialization
// with their zeroed tickets, and give the reference's values run after run (each run must find
// the tickets back at zero), under the validation layer where vulkan_test has it.
constexpr const char* kChained = R"(graph {
  %0 = input 0 : f32[1048576]
  %1 = reduce_sum %0 axes=[0] : f32[1]
  %2 = input 1 : f32[8192,64]
  %3 = reduce_sum %2 axes=[0] : f32[1,64]
  %4 = const 0.0001220703125 : f32[1,64]
  %5 = mul %3, %4 : f32[1,64]
  output %1, %5
}
)";

TEST_F(CompileApartTest, ChainedReductionsRunAgainAndAgain) {
  ir::TargetInfo planned_as = dev_->target();
  planned_as.is_gpu = true;  // split as on a GPU of 16 multiprocessors
  planned_as.parallelism = 16;
  auto g = ir::parse(kChained);
  ASSERT_TRUE(g.ok()) << g.status();
  auto planned = passes::compile_graph(*g, planned_as, passes::Options{});
  ASSERT_TRUE(planned.ok()) << planned.status();
  const ir::Program& p = planned->program;
  ASSERT_EQ(p.kernels.size(), 2u) << p.to_string();
  for (const ir::Kernel& k : p.kernels) ASSERT_TRUE(k.chained()) << p.to_string();
  auto compiled = make_compiler(dev_->target())->compile(p);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  EXPECT_NE(compiled->kernels[0].strategy.find("folds them with its workgroup"), std::string::npos) << compiled->kernels[0].strategy;
  EXPECT_NE(compiled->kernels[1].strategy.find("column tiles"), std::string::npos) << compiled->kernels[1].strategy;
  EXPECT_NE(compiled->kernels[1].strategy.find("folds them alone"), std::string::npos) << compiled->kernels[1].strategy;
  auto loaded = runtime::deserialize(runtime::serialize(*compiled));
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  int zeroed = 0;
  for (const ir::BufferDesc& b : loaded->buffers) zeroed += b.zeroed;
  EXPECT_EQ(zeroed, 2);
  for (size_t k = 0; k < 2; ++k) {
    const int tickets = p.kernels[k].tickets;
    const std::vector<int>& w = loaded->kernels[k].writes;
    EXPECT_NE(std::find(w.begin(), w.end(), tickets), w.end()) << "kernel " << k << " writes its tickets";
  }
  auto exe = dev_->load(*loaded);
  ASSERT_TRUE(exe.ok()) << exe.status();
  EXPECT_EQ((*exe)->kernels_per_run(), 2);
  for (int rep = 0; rep < 3; ++rep) {
    std::vector<ir::HostTensor> inputs = {ir::HostTensor::make(DType::kFloat32, {1048576}),
                                          ir::HostTensor::make(DType::kFloat32, {8192, 64})};
    for (size_t k = 0; k < inputs[0].f.size(); ++k) inputs[0].f[k] = double(float(int((k * 7 + size_t(rep)) % 41) - 20) / 8.0f);
    for (size_t k = 0; k < inputs[1].f.size(); ++k) inputs[1].f[k] = double(float(int((k * 3 + size_t(rep) * 5) % 23) - 11) / 4.0f);
    auto want = ir::interpret(*g, inputs);
    ASSERT_TRUE(want.ok()) << want.status();
    std::vector<ir::HostTensor> got = run(dev_.get(), exe->get(), *loaded, inputs);
    ASSERT_EQ(got.size(), want->size());
    for (size_t k = 0; k < got.size(); ++k) {
      testing::Comparison cmp = testing::compare_host((*want)[k], got[k], {1e-5, 1e-5});
      EXPECT_TRUE(cmp.ok()) << "run " << rep << ", output " << k << ":\n" << cmp.report;
    }
  }
}

TEST(VulkanCompiler, ChainedReductionsCompileForAGpuTarget) {
  ::setenv("KILN_CACHE_DIR", fresh_dir("chained").c_str(), 1);
  const ir::TargetInfo t = handwritten_target();
  auto g = ir::parse(kChained);
  ASSERT_TRUE(g.ok()) << g.status();
  auto planned = passes::compile_graph(*g, t, passes::Options{});
  ASSERT_TRUE(planned.ok()) << planned.status();
  ASSERT_EQ(planned->program.kernels.size(), 2u) << planned->program.to_string();
  auto c = make_compiler(t)->compile(planned->program);
  ASSERT_TRUE(c.ok()) << c.status();
  for (const runtime::CompiledKernel& k : c->kernels) {
    EXPECT_NE(k.strategy.find("chained"), std::string::npos) << k.strategy;
    EXPECT_TRUE(runtime::vk::spirv_words(k.binary).ok()) << k.name;
  }
}

}  // namespace
}  // namespace kiln::vktest

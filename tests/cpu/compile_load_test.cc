// Compile apart from load on the CPU: the Compiler makes a CompiledProgram from a TargetInfo alone
// (no device), the bytes survive serialize/deserialize, the device loads and runs them, and a
// program made for another CPU is refused with FailedPrecondition.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>

#include "backends/cpu/target.h"
#include "codegen/llvm/compile.h"
#include "ir/graph.h"
#include "ir/interpreter.h"
#include "passes/pipeline.h"
#include "runtime/registry.h"
#include "testing/reference.h"

namespace kiln {
namespace {

// A row softmax and a column sum of cos: three kernels at least, calls into the C library.
constexpr char kGraph[] = R"(graph {
  %0 = input 0 : f32[16,40]
  %1 = reduce_max %0 axes=[1] : f32[16,1]
  %2 = expand %1 : f32[16,40]
  %3 = sub %0, %2 : f32[16,40]
  %4 = exp %3 : f32[16,40]
  %5 = reduce_sum %4 axes=[1] : f32[16,1]
  %6 = expand %5 : f32[16,40]
  %7 = div %4, %6 : f32[16,40]
  %8 = cos %0 : f32[16,40]
  %9 = reduce_sum %8 axes=[0] : f32[1,40]
  output %7, %9
}
)";

// The CPU's target as a build machine would write it: no device involved (cpu_name "" = host).
ir::TargetInfo cpu_target(const std::string& cpu_name = "") {
  ir::TargetInfo t;
  t.name = "cpu";
  t.parallelism = 4;
  t.max_fused_row = int64_t(1) << 40;
  t.cpu_name = cpu_name;
  return t;
}

absl::StatusOr<runtime::CompiledProgram> compile(const ir::Graph& g, const ir::TargetInfo& t) {
  auto compiler = runtime::make_compiler("cpu", t);
  if (!compiler.ok()) return compiler.status();
  auto planned = passes::compile_graph(g, (*compiler)->target(), passes::Options{});
  if (!planned.ok()) return planned.status();
  auto c = (*compiler)->compile(planned->program);
  if (c.ok()) {
    EXPECT_EQ(c->target_key, (*compiler)->target_key());
  }
  return c;
}

ir::Graph graph() {
  auto g = ir::parse(kGraph);
  EXPECT_TRUE(g.ok()) << g.status();
  return *g;
}

// Runs `c` on the cpu device with `x` as input 0; the graph outputs, as floats.
std::vector<std::vector<float>> run_on_cpu(const runtime::CompiledProgram& c, const std::vector<float>& x) {
  auto dev = runtime::get_device("cpu");
  EXPECT_TRUE(dev.ok()) << dev.status();
  auto exe = (*dev)->load(c);
  EXPECT_TRUE(exe.ok()) << exe.status();
  if (!exe.ok()) return {};
  auto in = (*dev)->alloc(int64_t(x.size() * 4));
  EXPECT_TRUE(in.ok());
  EXPECT_TRUE((*dev)->upload(in->get(), x.data(), int64_t(x.size() * 4)).ok());
  std::vector<std::shared_ptr<runtime::Buffer>> outs(size_t(c.num_outputs));
  std::vector<runtime::Buffer*> out_raw;
  for (const ir::BufferDesc& b : c.buffers)
    if (b.kind == ir::BufferKind::kOutput) outs[size_t(b.index)] = *(*dev)->alloc(b.bytes());
  for (auto& b : outs) out_raw.push_back(b.get());
  absl::Status s = (*exe)->run({in->get()}, out_raw, {});
  EXPECT_TRUE(s.ok()) << s;
  std::vector<std::vector<float>> result;
  for (int b : c.outputs) {
    const ir::BufferDesc& d = c.buffers[size_t(b)];
    std::vector<float> v(size_t(shape_numel(d.shape)));
    EXPECT_TRUE((*dev)->download(outs[size_t(d.index)].get(), v.data(), int64_t(v.size() * 4)).ok());
    result.push_back(std::move(v));
  }
  return result;
}

void expect_matches_interpreter(const std::vector<std::vector<float>>& got, const std::vector<float>& x) {
  ir::HostTensor in = ir::HostTensor::make(DType::kFloat32, {16, 40});
  in.f.assign(x.begin(), x.end());
  auto want = ir::interpret(graph(), {in});
  ASSERT_TRUE(want.ok()) << want.status();
  ASSERT_EQ(got.size(), want->size());
  for (size_t o = 0; o < got.size(); ++o) {
    ASSERT_EQ(int64_t(got[o].size()), (*want)[o].numel());
    for (size_t i = 0; i < got[o].size(); ++i) {
      double w = (*want)[o].f[i];
      ASSERT_NEAR(got[o][i], w, 1e-5 * std::abs(w) + 1e-6) << "output " << o << " element " << i;
    }
  }
}

TEST(CpuCompileLoad, CompiledWithoutADeviceSerializedThenLoadedAndRun) {
  auto c = compile(graph(), cpu_target());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->backend, "cpu");
  ASSERT_GE(c->kernels.size(), 2u);
  for (const runtime::CompiledKernel& k : c->kernels) {
    EXPECT_EQ(k.name.rfind("kiln_", 0), 0u) << k.name;
    EXPECT_GT(k.tiles, 0) << k.name;
  }
  // One object per part (codegen/llvm/compile.h): here one per kernel, each function on its own.
  auto objects = codegen::cpu::unpack_objects(c->module);
  ASSERT_TRUE(objects.ok()) << objects.status();
  EXPECT_EQ(objects->size(), c->kernels.size());
  EXPECT_EQ(c->module.substr(0, 8), "KILNOBJS");
  for (std::string_view o : *objects) EXPECT_EQ(o.substr(0, 4), "\x7f" "ELF");
  auto back = runtime::deserialize(runtime::serialize(*c));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->module, c->module);
  std::vector<float> x = testing::random_floats(16 * 40, 7);
  expect_matches_interpreter(run_on_cpu(*back, x), x);
  // Loaded twice in one process (the same symbols in two libraries): both run, with new data.
  std::vector<float> y = testing::random_floats(16 * 40, 8);
  expect_matches_interpreter(run_on_cpu(*c, y), y);
}

TEST(CpuCompileLoad, ObjectsAreDeterministic) {
  ::setenv("KILN_DISK_CACHE", "0", 1);  // compile twice for real
  auto a = compile(graph(), cpu_target());
  auto b = compile(graph(), cpu_target());
  ::unsetenv("KILN_DISK_CACHE");
  ASSERT_TRUE(a.ok() && b.ok());
  EXPECT_EQ(a->module, b->module) << "symbol names or code differ between two compiles";
}

TEST(CpuCompileLoad, ProgramForAnotherCpuIsRefused) {
  auto host = runtime::cpu::host_target(1);
  ASSERT_TRUE(host.ok()) << host.status();
  const std::string other = host->cpu_name == "skylake-avx512" ? "znver3" : "skylake-avx512";
  auto c = compile(graph(), cpu_target(other));  // cross-compiling needs no such CPU here
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_NE(c->target_key.find(other), std::string::npos) << c->target_key;
  auto dev = runtime::get_device("cpu");
  ASSERT_TRUE(dev.ok()) << dev.status();
  auto exe = (*dev)->load(*c);
  ASSERT_EQ(exe.status().code(), absl::StatusCode::kFailedPrecondition) << exe.status();
  const std::string msg(exe.status().message());
  EXPECT_NE(msg.find("compiled for another CPU"), std::string::npos) << msg;
  EXPECT_NE(msg.find(other), std::string::npos) << msg;
  EXPECT_NE(msg.find(host->cpu_name), std::string::npos) << msg;
}

TEST(CpuCompileLoad, ProgramOfAnotherBackendOrWithoutAnObjectIsRefused) {
  auto c = compile(graph(), cpu_target());
  ASSERT_TRUE(c.ok()) << c.status();
  auto dev = runtime::get_device("cpu");
  ASSERT_TRUE(dev.ok()) << dev.status();
  runtime::CompiledProgram other = *c;
  other.backend = "cuda";
  EXPECT_EQ((*dev)->load(other).status().code(), absl::StatusCode::kFailedPrecondition);
  runtime::CompiledProgram garbage = *c;
  garbage.module = "not an object file";
  auto exe = (*dev)->load(garbage);
  EXPECT_EQ(exe.status().code(), absl::StatusCode::kInvalidArgument) << exe.status();
  // A list of objects that is cut short, or claims more objects than a program has parts.
  for (size_t cut : {size_t(12), size_t(20), c->module.size() - 1}) {
    runtime::CompiledProgram shortened = *c;
    shortened.module = c->module.substr(0, cut);
    exe = (*dev)->load(shortened);
    EXPECT_EQ(exe.status().code(), absl::StatusCode::kInvalidArgument) << exe.status();
  }
  runtime::CompiledProgram many = *c;
  many.module[8] = char(100);
  exe = (*dev)->load(many);
  EXPECT_EQ(exe.status().code(), absl::StatusCode::kInvalidArgument) << exe.status();
  EXPECT_NE(exe.status().message().find("100 object files"), std::string::npos) << exe.status();
  runtime::CompiledProgram renamed = *c;
  renamed.kernels[0].name = "kiln_no_such_kernel";
  exe = (*dev)->load(renamed);
  EXPECT_EQ(exe.status().code(), absl::StatusCode::kInvalidArgument) << exe.status();
  EXPECT_NE(exe.status().message().find("kiln_no_such_kernel"), std::string::npos) << exe.status();
}

TEST(CpuCompileLoad, WrongBindingsAreInvalidArgument) {
  auto c = compile(graph(), cpu_target());
  ASSERT_TRUE(c.ok()) << c.status();
  auto dev = runtime::get_device("cpu");
  ASSERT_TRUE(dev.ok()) << dev.status();
  auto exe = (*dev)->load(*c);
  ASSERT_TRUE(exe.ok()) << exe.status();
  auto small = (*dev)->alloc(16);
  ASSERT_TRUE(small.ok());
  absl::Status s = (*exe)->run({small->get()}, {}, {});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  std::vector<runtime::Buffer*> outs(size_t(c->num_outputs), small->get());
  s = (*exe)->run({small->get()}, outs, {});
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument) << s;
  EXPECT_NE(s.message().find("holds 16 bytes"), std::string::npos) << s;
}

}  // namespace
}  // namespace kiln

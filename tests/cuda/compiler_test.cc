// Compile apart from load: the CUDA Compiler makes a CompiledProgram for sm_90 on a machine
// without a GPU (made from a TargetInfo alone), the result survives serialization, and where a
// GPU is present the Device loads it (or refuses it when it was made for another architecture)
// and computes the right values.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <vector>

#include "absl/strings/str_cat.h"
#include "backends/cuda/target.h"
#include "codegen/c_family/gpu_program.h"
#include "ir/graph.h"
#include "passes/pipeline.h"
#include "runtime/compiled_program.h"
#include "runtime/registry.h"
#include "runtime/stats.h"

namespace kiln::runtime {
namespace {

constexpr int kRows = 64, kCols = 300;

// A row softmax and the row sums under it: a reduction and an elementwise epilogue.
const char* kGraph = R"(graph {
  %0 = input 0 : f32[64,300]
  %1 = exp %0 : f32[64,300]
  %2 = reduce_sum %1 axes=[1] : f32[64,1]
  %3 = expand %2 : f32[64,300]
  %4 = div %1, %3 : f32[64,300]
  output %4, %2
}
)";

absl::StatusOr<ir::Program> plan(const ir::TargetInfo& target) {
  auto g = ir::parse(kGraph);
  if (!g.ok()) return g.status();
  auto c = passes::compile_graph(*g, target, passes::Options{});
  if (!c.ok()) return c.status();
  return std::move(c->program);
}

absl::StatusOr<CompiledProgram> compile_for(const ir::TargetInfo& target, ir::Program* planned = nullptr) {
  auto p = plan(target);
  if (!p.ok()) return p.status();
  auto compiler = make_compiler("cuda", target);
  if (!compiler.ok()) return compiler.status();
  if (planned) *planned = *p;
  return (*compiler)->compile(*p);
}

void expect_same_launches(const CompiledProgram& a, const CompiledProgram& b) {
  ASSERT_EQ(a.kernels.size(), b.kernels.size());
  for (size_t i = 0; i < a.kernels.size(); ++i) {
    EXPECT_EQ(a.kernels[i].name, b.kernels[i].name);
    EXPECT_EQ(a.kernels[i].buffers, b.kernels[i].buffers);
    EXPECT_EQ(a.kernels[i].grid, b.kernels[i].grid);
    EXPECT_EQ(a.kernels[i].block, b.kernels[i].block);
    EXPECT_EQ(a.kernels[i].shared_bytes, b.kernels[i].shared_bytes);
  }
}

TEST(CudaCompiler, CompilesForSm90WithoutAGpuAndSurvivesSerialization) {
  const ir::TargetInfo h100 = cuda::cuda_target_info(132, 232448, 90);
  auto compiler = make_compiler("cuda", h100);
  ASSERT_TRUE(compiler.ok()) << compiler.status();
  EXPECT_EQ((*compiler)->target_key(), "sm_90");
  ir::Program p;
  auto c = compile_for(h100, &p);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->backend, "cuda");
  EXPECT_EQ(c->target_key, "sm_90");
  ASSERT_GE(c->module.size(), 4u);
  EXPECT_EQ(c->module.substr(0, 4), "\x7f" "ELF") << "the module is not a cubin";
  ASSERT_FALSE(c->kernels.empty());
  ASSERT_EQ(c->kernels.size(), p.kernels.size());
  EXPECT_EQ(c->buffers.size(), p.buffers.size());
  EXPECT_EQ(c->outputs, p.outputs);
  EXPECT_EQ(c->arena_bytes, p.arena_bytes);

  // The launch shapes are the renderer's, kernel for kernel.
  auto r = codegen::gpu::render(p, codegen::gpu::Dialect::kCuda, h100);
  ASSERT_TRUE(r.ok()) << r.status();
  ASSERT_EQ(r->kernels.size(), c->kernels.size());
  for (size_t i = 0; i < c->kernels.size(); ++i) {
    const CompiledKernel& k = c->kernels[i];
    const codegen::gpu::KernelSource& want = r->kernels[i];
    EXPECT_EQ(k.name, want.name);
    EXPECT_EQ(k.buffers, want.buffers);
    for (int d = 0; d < 3; ++d) {
      EXPECT_EQ(k.grid[size_t(d)], want.grid[d]) << k.name;
      EXPECT_EQ(k.block[size_t(d)], want.block[d]) << k.name;
    }
    EXPECT_EQ(k.shared_bytes, want.shared_bytes);
    EXPECT_EQ(k.strategy, want.strategy);
    EXPECT_GT(uint64_t(k.block[0]) * k.block[1] * k.block[2], 0u);
    EXPECT_LE(uint64_t(k.block[0]) * k.block[1] * k.block[2], 1024u);
  }

  auto back = deserialize(serialize(*c));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->backend, "cuda");
  EXPECT_EQ(back->target_key, "sm_90");
  EXPECT_EQ(back->module, c->module);
  EXPECT_EQ(back->steps.size(), c->steps.size());
  EXPECT_EQ(back->outputs, c->outputs);
  EXPECT_EQ(back->num_inputs, 1);
  EXPECT_EQ(back->num_outputs, c->num_outputs);
  expect_same_launches(*back, *c);
}

TEST(CudaCompiler, SecondCompileComesFromTheDiskCache) {
  const ir::TargetInfo h100 = cuda::cuda_target_info(132, 232448, 90);
  auto first = compile_for(h100);
  ASSERT_TRUE(first.ok()) << first.status();
  const int64_t compiled0 = counters().kernels_compiled, hits0 = counters().kernel_disk_cache_hits;
  auto second = compile_for(h100);
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(counters().kernels_compiled - compiled0, 0) << "a warm compile ran NVRTC";
  EXPECT_EQ(counters().kernel_disk_cache_hits - hits0, int64_t(second->kernels.size()));
  EXPECT_EQ(second->module, first->module);
}

TEST(CudaCompiler, KeepsSourceAndPtxOnlyForDumps) {
  const ir::TargetInfo h100 = cuda::cuda_target_info(132, 232448, 90);
  auto plain = compile_for(h100);
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_TRUE(plain->module_source.empty());
  ::setenv("KILN_DEBUG", "4", 1);
  auto kept = compile_for(h100);
  ::unsetenv("KILN_DEBUG");
  ASSERT_TRUE(kept.ok()) << kept.status();
  EXPECT_NE(kept->module_source.find("__global__"), std::string::npos) << "no CUDA source kept";
  EXPECT_NE(kept->module_source.find(".target sm_90"), std::string::npos) << "no PTX kept";
  std::vector<std::string> listings = kept->listings();
  ASSERT_EQ(listings.size(), kept->kernels.size());
  EXPECT_NE(listings[0].find(kept->kernels[0].name), std::string::npos);
}

// PTX for an architecture runs on it and on every later one; arch-specific code nowhere else.
TEST(CudaCompiler, PtxRunsOnItsArchitectureAndLaterOnes) {
  const ir::TargetInfo h100 = cuda::cuda_target_info(132, 232448, 90);
  EXPECT_TRUE(cuda::runs_ptx_of(h100, "sm_75"));
  EXPECT_TRUE(cuda::runs_ptx_of(h100, "sm_90"));
  EXPECT_FALSE(cuda::runs_ptx_of(h100, "sm_100"));
  EXPECT_FALSE(cuda::runs_ptx_of(h100, "sm_90a"));
  EXPECT_FALSE(cuda::runs_ptx_of(h100, "sm_"));
  EXPECT_FALSE(cuda::runs_ptx_of(h100, "gfx90a"));
  auto sm80 = compile_for(cuda::cuda_target_info(108, 166912, 80));
  ASSERT_TRUE(sm80.ok()) << sm80.status();
  EXPECT_NE(sm80->portable_module.find(".target sm_80"), std::string::npos);
  for (const CompiledKernel& k : sm80->kernels)
    EXPECT_NE(sm80->portable_module.find(".entry " + k.name), std::string::npos) << k.name;
  auto back = deserialize(serialize(*sm80));
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->portable_module, sm80->portable_module);
}

// A stack of identical layers (ir/kernel_twins.h): one function per family in the module, each
// twin launching it with its own buffers (and, on the sm_90a path, its own tensor maps).
std::string layer_stack(const char* dtype, int layers) {
  std::string t = absl::StrCat("graph {\n  %0 = input 0 : ", dtype, "[128,256]\n");
  int id = 0;
  for (int l = 0; l < layers; ++l) {
    absl::StrAppend(&t, "  %", id + 1, " = input ", l + 1, " : ", dtype, "[256,256]\n");
    absl::StrAppend(&t, "  %", id + 2, " = dot %", id, ", %", id + 1, " : ", dtype, "[128,256]\n");
    absl::StrAppend(&t, "  %", id + 3, " = tanh %", id + 2, " : ", dtype, "[128,256]\n");
    id += 3;
  }
  return absl::StrCat(t, "  output %", id, "\n}\n");
}

TEST(CudaCompiler, RepeatedLayersCompileOneFunctionPerFamily) {
  const ir::TargetInfo h100 = cuda::cuda_target_info(132, 232448, 90);
  auto compiler = make_compiler("cuda", h100);
  ASSERT_TRUE(compiler.ok()) << compiler.status();
  for (const char* dtype : {"f32", "bf16"}) {
    auto g = ir::parse(layer_stack(dtype, 5));
    ASSERT_TRUE(g.ok()) << g.status();
    auto planned = passes::compile_graph(*g, h100, passes::Options{});
    ASSERT_TRUE(planned.ok()) << planned.status();
    auto c = (*compiler)->compile(planned->program);
    ASSERT_TRUE(c.ok()) << c.status();
    ASSERT_EQ(c->kernels.size(), 5u) << dtype;
    // The first layer reads the graph input; the others read the previous layer's result, and
    // the last writes the output: the middle layers at least are one function.
    int twins = 0;
    for (size_t i = 0; i < c->kernels.size(); ++i) {
      const CompiledKernel& k = c->kernels[i];
      if (k.twin < 0) continue;
      ++twins;
      const CompiledKernel& first = c->kernels[size_t(k.twin)];
      EXPECT_EQ(c->entry(i), first.name) << dtype;
      EXPECT_NE(k.name, first.name) << dtype << ": a twin keeps its own name for profiles";
      EXPECT_NE(k.buffers, first.buffers) << dtype;
      ASSERT_EQ(k.tensor_maps.size(), first.tensor_maps.size()) << dtype;
      for (size_t m = 0; m < k.tensor_maps.size(); ++m)
        EXPECT_TRUE(std::find(k.buffers.begin(), k.buffers.end(), k.tensor_maps[m].buffer) != k.buffers.end())
            << dtype << ": a twin's tensor map addresses its own buffer";
    }
    EXPECT_GE(twins, 2) << dtype;
    auto back = deserialize(serialize(*c));
    ASSERT_TRUE(back.ok()) << back.status();
    for (size_t i = 0; i < c->kernels.size(); ++i) EXPECT_EQ(back->kernels[i].twin, c->kernels[i].twin);
    // A twin that names a later kernel, or a twin, is refused when read back.
    CompiledProgram bad = *c;
    bad.kernels[0].twin = 1;
    auto refused = deserialize(serialize(bad));
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(std::string(refused.status().message()).find("not an earlier kernel with a function of its own"),
              std::string::npos) << refused.status();
    // A twin binding fewer buffers than its family's function reads.
    size_t twin = 0;
    for (size_t i = 0; i < c->kernels.size() && twin == 0; ++i)
      if (c->kernels[i].twin >= 0) twin = i;
    ASSERT_GT(twin, 0u);
    bad = *c;
    bad.kernels[twin].buffers.pop_back();
    refused = deserialize(serialize(bad));
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(std::string(refused.status().message()).find("buffers and"), std::string::npos) << refused.status();
  }
}

TEST(CudaCompiler, NeedsACudaTarget) {
  auto c = make_compiler("cuda", ir::TargetInfo{});  // the CPU's defaults: no compute capability
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument) << c.status();
}

// Softmax rows and row sums of x, in double.
void reference(const std::vector<float>& x, std::vector<double>* soft, std::vector<double>* sums) {
  soft->assign(x.size(), 0);
  sums->assign(kRows, 0);
  for (int i = 0; i < kRows; ++i) {
    for (int j = 0; j < kCols; ++j) (*sums)[size_t(i)] += std::exp(double(x[size_t(i * kCols + j)]));
    for (int j = 0; j < kCols; ++j)
      (*soft)[size_t(i * kCols + j)] = std::exp(double(x[size_t(i * kCols + j)])) / (*sums)[size_t(i)];
  }
}

TEST(CudaCompiler, TheDeviceLoadsWhatTheCompilerMade) {
  auto d = get_device("cuda");
  if (!d.ok()) GTEST_SKIP() << d.status().message();
  Device* dev = *d;
  auto sm90 = compile_for(cuda::cuda_target_info(132, 232448, 90));
  ASSERT_TRUE(sm90.ok()) << sm90.status();
  auto compiler = compiler_for(dev);
  ASSERT_TRUE(compiler.ok()) << compiler.status();
  const std::string mine = (*compiler)->target_key();

  // Made for a newer architecture: refused, naming both (its PTX cannot run here either).
  CompiledProgram other = *sm90;
  other.target_key = "sm_999";
  auto refused = dev->load(other);
  ASSERT_FALSE(refused.ok());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kFailedPrecondition) << refused.status();
  EXPECT_NE(std::string(refused.status().message()).find(other.target_key), std::string::npos) << refused.status();
  EXPECT_NE(std::string(refused.status().message()).find(mine), std::string::npos) << refused.status();
  EXPECT_NE(std::string(refused.status().message()).find("PTX runs only on its architecture and later ones"),
            std::string::npos) << refused.status();
  // Made for an older architecture: its cubin does not fit, its PTX does (the driver compiles
  // it); without PTX it is refused.
  if (dev->target().compute_capability > 75) {
    auto sm75 = compile_for(cuda::cuda_target_info(40, 65536, 75));
    ASSERT_TRUE(sm75.ok()) << sm75.status();
    ASSERT_FALSE(sm75->portable_module.empty());
    auto jit = dev->load(*sm75);
    EXPECT_TRUE(jit.ok()) << jit.status();
    sm75->portable_module.clear();
    auto no_ptx = dev->load(*sm75);
    ASSERT_FALSE(no_ptx.ok());
    EXPECT_NE(std::string(no_ptx.status().message()).find("no PTX"), std::string::npos) << no_ptx.status();
  }

  // The sm_90 program as read back from disk on an H100; elsewhere the same graph compiled for
  // this GPU, through the same serialize/deserialize round trip.
  auto made = mine == "sm_90" ? sm90 : compile_for(dev->target());
  ASSERT_TRUE(made.ok()) << made.status();
  auto loaded = deserialize(serialize(*made));
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  auto exe = dev->load(*loaded);
  ASSERT_TRUE(exe.ok()) << exe.status();
  EXPECT_EQ((*exe)->kernels_per_run(), int(loaded->kernels.size()));

  std::vector<float> x(size_t(kRows * kCols));
  for (size_t i = 0; i < x.size(); ++i) x[i] = float(3.0 * std::sin(0.37 * double(i / kCols) + 0.011 * double(i % kCols)));
  auto in = dev->alloc(int64_t(x.size() * 4));
  ASSERT_TRUE(in.ok()) << in.status();
  ASSERT_TRUE(dev->upload(in->get(), x.data(), int64_t(x.size() * 4)).ok());
  std::vector<std::shared_ptr<Buffer>> outs(size_t(loaded->num_outputs));
  std::vector<Buffer*> out_raw(outs.size());
  for (const ir::BufferDesc& b : loaded->buffers) {
    if (b.kind != ir::BufferKind::kOutput) continue;
    auto o = dev->alloc(b.bytes());
    ASSERT_TRUE(o.ok()) << o.status();
    outs[size_t(b.index)] = *o;
    out_raw[size_t(b.index)] = o->get();
  }
  ASSERT_TRUE((*exe)->run({in->get()}, out_raw, {}).ok());

  std::vector<double> soft, sums;
  reference(x, &soft, &sums);
  ASSERT_EQ(loaded->outputs.size(), 2u);
  std::vector<std::vector<float>> got;
  for (int b : loaded->outputs) {
    const ir::BufferDesc& desc = loaded->buffers[size_t(b)];
    ASSERT_EQ(desc.kind, ir::BufferKind::kOutput);
    std::vector<float> v(size_t(desc.bytes() / 4));
    ASSERT_TRUE(dev->download(outs[size_t(desc.index)].get(), v.data(), desc.bytes()).ok());
    got.push_back(std::move(v));
  }
  ASSERT_EQ(got[0].size(), soft.size());
  ASSERT_EQ(got[1].size(), sums.size());
  for (size_t i = 0; i < soft.size(); i += 7) EXPECT_NEAR(got[0][i], soft[i], 1e-6 + 1e-5 * soft[i]) << i;
  for (size_t i = 0; i < sums.size(); ++i) EXPECT_NEAR(got[1][i], sums[i], 1e-5 * sums[i]) << i;
}

// Profiles' peaks from the driver's attributes: an H100 SXM (132 SMs, 1980 MHz, HBM3 at 2619 MHz
// on a 5120-bit bus) and an A100 (108 SMs, 1410 MHz, 1215 MHz x 5120 bits).
TEST(CudaPeaks, FromDriverAttributes) {
  support::Peaks h100 = cuda::cuda_peaks(90, 132, 1980000, 2619000, 5120);
  EXPECT_NEAR(h100.bytes_per_s / 1e12, 3.352, 0.001);
  EXPECT_NEAR(h100.flops_per_s / 1e12, 66.9, 0.1);          // 132 x 128 lanes x 2 x 1.98 GHz
  EXPECT_NEAR(h100.matrix_flops_per_s / 1e12, 1070.5, 0.5);  // 132 x 4096 x 1.98 GHz
  EXPECT_NE(h100.source.find("sm_90, 132 SMs at 1980 MHz"), std::string::npos) << h100.source;
  support::Peaks a100 = cuda::cuda_peaks(80, 108, 1410000, 1215000, 5120);
  EXPECT_NEAR(a100.bytes_per_s / 1e12, 1.555, 0.001);
  EXPECT_NEAR(a100.flops_per_s / 1e12, 19.5, 0.1);
  EXPECT_NEAR(a100.matrix_flops_per_s / 1e12, 311.9, 0.5);
  // A driver that reports no clocks leaves the peaks unknown (0), never made up.
  support::Peaks none = cuda::cuda_peaks(90, 132, 0, 0, 5120);
  EXPECT_EQ(none.bytes_per_s, 0);
  EXPECT_EQ(none.flops_per_s, 0);
}

}  // namespace
}  // namespace kiln::runtime

// Without an AMD GPU: kiln's kernels compile with comgr to code objects for gfx90a (MI200) and
// gfx908 (MI100), each an AMDGPU ELF holding every kernel of its program (and its kernel
// descriptor); processors comgr cannot target, and rejected sources, are clear errors. The graphs
// are the benchmark workloads and op families at small sizes (elementwise chains, reductions and
// row normalizations with wavefront shuffles, tiled matmuls, gathers, scatters, convolutions,
// pooling, casts through f16 and bf16, 64-bit integers).
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "backends/hip/comgr.h"
#ifdef KILN_TEST_HIP_RUNTIME
#include "backends/hip/hip_api.h"
#endif
#include "backends/hip/compiler.h"
#include "backends/hip/target.h"
#include "codegen/c_family/gpu_program.h"
#include "frontend/capture.h"
#include "kiln/kiln.h"
#include "passes/pipeline.h"
#include "runtime/registry.h"
#include "testing/corpus.h"
#include "testing/kernel_cases.h"
#include "testing/planned.h"
#include "testing/reference.h"

namespace kiln {
namespace {

using testing::random_tensor;

// The bytes of an ELF code object: 64-bit, machine EM_AMDGPU (224).
void expect_amdgpu_elf(const std::string& module, const std::string& what) {
  ASSERT_GT(module.size(), 64u) << what;
  EXPECT_EQ(module.substr(0, 4), std::string("\x7f" "ELF")) << what;
  EXPECT_EQ(module[4], 2) << what << ": not a 64-bit ELF";
  uint16_t machine = 0;
  std::memcpy(&machine, module.data() + 18, 2);
  EXPECT_EQ(machine, 224) << what << ": not an AMDGPU code object";
}

void compile_all_for(const std::string& gfx) {
  const ir::TargetInfo target = runtime::hip::hip_target_info(gfx, 104);
  auto compiler = runtime::hip::HipCompiler::create(target);
  ASSERT_TRUE(compiler.ok()) << compiler.status();
  int kernels = 0;
  for (const testing::KernelCase& c : testing::kernel_cases()) {
    std::vector<std::shared_ptr<runtime::Buffer>> bufs;
    ir::Graph g = detail::capture(c.outputs, &bufs);
    for (bool fusion : {true, false}) {
      const std::string what = absl::StrCat(c.name, fusion ? " (fused)" : " (unfused)", " for ", gfx);
      passes::Options opts;
      opts.fusion = fusion;
      auto planned = passes::compile_graph(g, target, opts);
      ASSERT_TRUE(planned.ok()) << what << ": " << planned.status();
      auto compiled = (*compiler)->compile(planned->program);
      ASSERT_TRUE(compiled.ok()) << what << ": " << compiled.status();
      EXPECT_EQ(compiled->backend, "hip");
      EXPECT_EQ(compiled->target_key, gfx);
      expect_amdgpu_elf(compiled->module, what);
      for (size_t i = 0; i < compiled->kernels.size(); ++i) {
        const runtime::CompiledKernel& k = compiled->kernels[i];
        ++kernels;
        // A twin (ir/kernel_twins.h) launches its family's first kernel's entry point.
        const std::string& entry = compiled->entry(i);
        EXPECT_NE(compiled->module.find(entry + ".kd"), std::string::npos) << what << ": no kernel descriptor for " << entry;
        EXPECT_LE(k.block[0] * k.block[1] * k.block[2], 1024u) << what;
      }
    }
  }
  std::printf("%d kernels compiled for %s with comgr %s\n", kernels, gfx.c_str(), runtime::hip::comgr_version().c_str());
}

TEST(HipCompile, KernelsCompileToCodeObjectsForGfx90a) { compile_all_for("gfx90a"); }
TEST(HipCompile, KernelsCompileToCodeObjectsForGfx908) { compile_all_for("gfx908"); }

// On CDNA GPUs, f16 products (and bf16 ones from gfx90a on) run on the matrix cores (MFMA,
// through the compiler's builtins); the modules compile with comgr. Other products, and RDNA
// GPUs, keep the SIMT kernel.
TEST(HipCompile, CdnaProductsTakeMfma) {
  Tensor h = random_tensor({3, 70, 40}, float16, 1), g = random_tensor({3, 40, 33}, float16, 2);
  Tensor bh = random_tensor({70, 40}, bfloat16, 3), bg = random_tensor({40, 130}, bfloat16, 4);
  Tensor f = random_tensor({70, 40}, float32, 5);
  struct Product {
    const char* gfx;
    const char* what;
    Tensor out;
    const char* strategy;
  };
  const Product products[] = {
      {"gfx90a", "batched f16 with a ragged tile", matmul(h, g), "contraction matrix units: MFMA 16x16x16 f16"},
      {"gfx90a", "f16, transposed operand, gelu", gelu(matmul(g.transpose(1, 2), h.transpose(1, 2)), true),
       "contraction matrix units: MFMA 16x16x16 f16"},
      {"gfx90a", "bf16 + bias", matmul(bh, bg) + random_tensor({130}, float32, 6), "contraction matrix units: MFMA 16x16x16 bf16"},
      {"gfx908", "f16", matmul(h, g), "contraction matrix units: MFMA 16x16x16 f16"},
      {"gfx908", "bf16 (no bf16_1k on MI100)", matmul(bh, bg), "contraction: "},
      {"gfx90a", "f32", matmul(f, f.t()), "contraction: "},
      {"gfx1100", "f16 on RDNA", matmul(h, g), "contraction: "},
  };
  for (const Product& p : products) {
    const std::string what = absl::StrCat(p.what, " on ", p.gfx);
    auto target = runtime::target_profile("hip", p.gfx);
    ASSERT_TRUE(target.ok()) << target.status();
    auto r = codegen::gpu::render(testing::planned({p.out}, *target), codegen::gpu::Dialect::kHip, *target);
    ASSERT_TRUE(r.ok()) << what << ": " << r.status();
    bool found = false;
    for (const codegen::gpu::KernelSource& k : r->kernels) found = found || k.strategy.rfind(p.strategy, 0) == 0;
    EXPECT_TRUE(found) << what << ": no kernel of strategy " << p.strategy;
    if (std::string(p.gfx) == "gfx1100") continue;  // (comgr 5.2 lacks gfx1100's device libraries)
    auto bin = runtime::hip::comgr_compile(r->module_source, p.gfx);
    EXPECT_TRUE(bin.ok()) << what << ": " << bin.status();
  }
}

TEST(HipCompile, WavefrontSizeFollowsTheProcessor) {
  EXPECT_EQ(runtime::hip::hip_target_info("gfx90a", 104).subgroup_size, 64);
  EXPECT_EQ(runtime::hip::hip_target_info("gfx1100", 96).subgroup_size, 32);
  auto p = runtime::target_profile("hip", "gfx942");
  ASSERT_TRUE(p.ok()) << p.status();
  EXPECT_EQ(p->parallelism, 304);
  EXPECT_EQ(runtime::target_profile("hip", "gfx123").status().code(), absl::StatusCode::kNotFound);
}

TEST(HipCompile, ProcessorsComgrCannotTargetAreRefusedByName) {
  auto compiler = runtime::make_compiler("hip", runtime::hip::hip_target_info("gfx942", 304));
  ASSERT_TRUE(compiler.ok()) << compiler.status();
  std::vector<std::shared_ptr<runtime::Buffer>> bufs;
  auto planned = passes::compile_graph(detail::capture({random_tensor({8}, float32, 1) * 2.0}, &bufs),
                                       (*compiler)->target(), passes::Options{});
  ASSERT_TRUE(planned.ok()) << planned.status();
  auto c = (*compiler)->compile(planned->program);
  ASSERT_FALSE(c.ok());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(c.status().message().find("cannot compile for gfx942"), std::string::npos) << c.status();
  EXPECT_NE(c.status().message().find("gfx90a"), std::string::npos) << c.status();
  EXPECT_EQ(runtime::make_compiler("hip", runtime::hip::hip_target_info("sm_90", 1)).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(HipCompile, ARejectedSourceIsAnInternalErrorWithComgrsLog) {
  auto bin = runtime::hip::comgr_compile("extern \"C\" __attribute__((global)) void k(float* a) { a[0] = undefined_name; }\n",
                                         "gfx90a");
  ASSERT_FALSE(bin.ok());
  EXPECT_EQ(bin.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(bin.status().message().find("undefined_name"), std::string::npos) << bin.status();
}

// The HIP runtime is loaded by dlopen: on a machine without an AMD GPU the device says so (and
// does not even initialize ROCm); where Debian's libamdhip64 is installed, every entry point kiln
// uses is found in it by name.
TEST(HipRuntime, WithoutAnAmdGpuTheDeviceSaysWhy) {
  if (std::filesystem::exists("/dev/kfd")) GTEST_SKIP() << "this machine has the amdgpu kernel driver";
  auto d = runtime::get_device("hip");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(d.status().message().find("hip: no AMD GPU (no /dev/kfd"), std::string::npos) << d.status();
}

#ifdef KILN_TEST_HIP_RUNTIME
TEST(HipRuntime, EveryEntryPointIsInTheInstalledRuntime) {
  auto api = runtime::hip::load_api();
  if (!api.ok()) {
    EXPECT_EQ(api.status().code(), absl::StatusCode::kUnavailable);
    EXPECT_NE(api.status().message().find("no HIP runtime"), std::string::npos) << api.status();
    GTEST_SKIP() << api.status();
  }
  EXPECT_NE((*api)->library.find("libamdhip64.so"), std::string::npos);
  EXPECT_NE((*api)->hipGetDeviceProperties, nullptr);
  EXPECT_NE((*api)->hipGraphExecKernelNodeSetParams, nullptr);
  EXPECT_STREQ((*api)->hipGetErrorName(hipErrorNoDevice), "hipErrorNoDevice");
  absl::Status s = runtime::hip::hip_check(**api, hipErrorOutOfMemory, "allocating");
  EXPECT_EQ(s.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(s.message().find("hip: allocating failed: hipErrorOutOfMemory"), std::string::npos) << s;
}
#endif

// Every graph the op, fusion and convolution suites capture (ctest's cuda_corpus fixture dumps
// them and passes the folders in $KILN_CUDA_CORPUS), fused and unfused, compiles for gfx90a;
// each distinct kernel is compiled once (testing::unseen_kernels).
TEST(HipKernels, OpAndFusionSuitesCompileForGfx90a) {
  const char* dirs = std::getenv("KILN_CUDA_CORPUS");
  if (!dirs || !*dirs) GTEST_SKIP() << "KILN_CUDA_CORPUS is not set (ctest sets it after the cuda_corpus fixture)";
  const ir::TargetInfo target = runtime::hip::hip_target_info("gfx90a", 104);
  std::set<uint64_t> seen;
  std::vector<std::string> failures;
  int modules = 0, kernels = 0;
  const int graphs = testing::for_each_planned(dirs, target, &failures, [&](const std::string& what, const ir::Program& p) {
    auto r = codegen::gpu::render(p, codegen::gpu::Dialect::kHip, target);
    if (!r.ok()) {
      failures.push_back(absl::StrCat(what, ": render failed: ", r.status().message()));
      return;
    }
    const size_t before = seen.size();
    const std::string source = testing::unseen_kernels(*r, &seen);
    if (source.empty()) return;
    ++modules;
    kernels += int(seen.size() - before);
    auto bin = runtime::hip::comgr_compile(source, "gfx90a");
    if (!bin.ok()) failures.push_back(absl::StrCat(what, ": ", bin.status().message()));
  });
  ASSERT_GT(graphs, 0) << "no captured graphs under " << dirs;
  std::printf("%d graphs, %d distinct kernels compiled in %d modules for gfx90a\n", graphs, kernels, modules);
  std::string first;
  for (size_t i = 0; i < failures.size() && i < 3; ++i) absl::StrAppend(&first, "\n---- ", failures[i].substr(0, 3000));
  EXPECT_TRUE(failures.empty()) << failures.size() << " failure(s); the first ones:" << first;
}

#ifdef KILN_LLVM_OBJDUMP
// LLVM's disassembly of `module` for gfx90a, by symbol: each "<name>:" header's instructions, one
// a line without the encoding comment. *status is llvm-objdump's exit status; *listing its output.
std::map<std::string, std::vector<std::string>> disassemble_gfx90a(const std::string& module, int* status, std::string* listing) {
  static int serial = 0;  // tests run one at a time
  const std::filesystem::path path =
      std::filesystem::temp_directory_path() / absl::StrCat("kiln_objdump_", ::getpid(), "_", serial++, ".hsaco");
  { std::ofstream(path, std::ios::binary) << module; }
  const std::string cmd = absl::StrCat(KILN_LLVM_OBJDUMP, " --triple=amdgcn-amd-amdhsa --mcpu=gfx90a -d '", path.string(), "' 2>&1");
  listing->clear();
  *status = -1;
  if (FILE* p = ::popen(cmd.c_str(), "r")) {
    char buf[65536];
    for (size_t n; (n = std::fread(buf, 1, sizeof(buf), p)) > 0;) listing->append(buf, n);
    *status = ::pclose(p);
  }
  std::filesystem::remove(path);
  std::map<std::string, std::vector<std::string>> symbols;
  std::vector<std::string>* code = nullptr;
  for (absl::string_view line : absl::StrSplit(*listing, '\n', absl::SkipEmpty())) {
    const size_t open = line.find(" <");
    if (line[0] != '\t' && open != absl::string_view::npos && absl::EndsWith(line, ">:")) {
      code = &symbols[std::string(line.substr(open + 2, line.size() - open - 4))];
    } else if (code && line[0] == '\t') {
      line = line.substr(0, line.find("//"));
      while (!line.empty() && (line.front() == '\t' || line.front() == ' ')) line.remove_prefix(1);
      while (!line.empty() && (line.back() == '\t' || line.back() == ' ')) line.remove_suffix(1);
      if (!line.empty()) code->push_back(std::string(line));
    }
  }
  return symbols;
}
#endif

// The code objects are AMDGPU ELF that LLVM's own disassembler reads for gfx90a: every kernel
// entry point is a symbol of real instructions, none undecodable, that ends its program.
TEST(HipCompile, CodeObjectsDisassembleWithLlvmObjdump) {
#ifndef KILN_LLVM_OBJDUMP
  GTEST_SKIP() << "llvm-objdump was not found when kiln was configured (Debian: llvm-16, which dev.sh installs)";
#else
  const ir::TargetInfo target = runtime::hip::hip_target_info("gfx90a", 104);
  auto compiler = runtime::hip::HipCompiler::create(target);
  ASSERT_TRUE(compiler.ok()) << compiler.status();
  int programs = 0, kernels = 0;
  for (const testing::KernelCase& c : testing::kernel_cases()) {
    std::vector<std::shared_ptr<runtime::Buffer>> bufs;
    auto planned = passes::compile_graph(detail::capture(c.outputs, &bufs), target, passes::Options{});
    ASSERT_TRUE(planned.ok()) << c.name << ": " << planned.status();
    auto compiled = (*compiler)->compile(planned->program);
    ASSERT_TRUE(compiled.ok()) << c.name << ": " << compiled.status();
    if (compiled->kernels.empty()) continue;
    int status = 0;
    std::string listing;
    const auto symbols = disassemble_gfx90a(compiled->module, &status, &listing);
    ASSERT_EQ(status, 0) << c.name << ": llvm-objdump failed:\n" << listing.substr(0, 4000);
    EXPECT_NE(listing.find("file format elf64-amdgpu"), std::string::npos) << c.name << ":\n" << listing.substr(0, 1000);
    ++programs;
    std::set<std::string> entries;
    for (size_t i = 0; i < compiled->kernels.size(); ++i) entries.insert(compiled->entry(i));
    for (const std::string& entry : entries) {
      ++kernels;
      auto it = symbols.find(entry);
      ASSERT_NE(it, symbols.end()) << c.name << ": no symbol " << entry << " in the disassembly";
      const std::vector<std::string>& code = it->second;
      EXPECT_GE(code.size(), 2u) << c.name << ": " << entry << " has no instructions";
      bool ends = false;
      for (const std::string& ins : code) {
        ends |= ins == "s_endpgm";
        EXPECT_TRUE(ins.find("v_illegal") == std::string::npos && ins.find("<unknown>") == std::string::npos)
            << c.name << ": " << entry << " has an undecodable instruction: " << ins;
      }
      EXPECT_TRUE(ends) << c.name << ": " << entry << " never ends its program (no s_endpgm)";
    }
  }
  ASSERT_GT(programs, 0);
  std::printf("%d kernel entry points in %d code objects disassembled by %s\n", kernels, programs, KILN_LLVM_OBJDUMP);
#endif
}

}  // namespace
}  // namespace kiln

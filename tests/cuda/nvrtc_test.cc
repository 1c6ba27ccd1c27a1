// NVRTC and the binary cache, without a GPU: hand-written modules that follow the renderer's
// contract (codegen/c_family/gpu_program.h) compile to cubins and PTX that ptxas accepts.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cuda/ptxas.h"
#include "backends/cuda/compiler.h"
#include "backends/cuda/nvrtc.h"
#include "runtime/stats.h"

namespace kiln::runtime::cuda {
namespace {

constexpr int kSm90 = 90;

// Two kernels in one translation unit, with half and bfloat16 storage, dynamic shared memory
// and a warp reduction: what the renderer emits for elementwise and row-reduction kernels.
const char* kModule = R"(#include <cuda_fp16.h>
#include <cuda_bf16.h>
extern "C" __global__ void k0_scale(const float* b0, __half* b1) {
  long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (i < 4096) b1[i] = __float2half(b0[i] * 2.0f + 1.0f);
}
extern "C" __global__ void k1_rowsum(const __nv_bfloat16* b0, float* b1) {
  extern __shared__ float partial[];
  float acc = 0.0f;
  for (int j = threadIdx.x; j < 1024; j += blockDim.x) acc += __bfloat162float(b0[blockIdx.x * 1024 + j]);
  for (int o = 16; o > 0; o >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, o);
  if ((threadIdx.x & 31) == 0) partial[threadIdx.x >> 5] = acc;
  __syncthreads();
  if (threadIdx.x == 0) {
    float s = 0.0f;
    for (int w = 0; w < (int)(blockDim.x >> 5); ++w) s += partial[w];
    b1[blockIdx.x] = s;
  }
}
)";

std::string fresh_dir(const std::string& name) {
  std::string d = ::testing::TempDir() + "/kiln_nvrtc_" + name + "_" + std::to_string(::getpid());
  std::filesystem::remove_all(d);
  return d;
}

TEST(Nvrtc, CompilesAModuleToCubinAndPtxThatPtxasAccepts) {
  auto b = nvrtc_compile(kModule, kSm90, /*keep_ptx=*/true);
  ASSERT_TRUE(b.ok()) << b.status();
  ASSERT_GE(b->cubin.size(), 4u);
  EXPECT_EQ(b->cubin.substr(0, 4), "\x7f" "ELF");
  EXPECT_NE(b->ptx.find(".target sm_90"), std::string::npos);
  EXPECT_NE(b->ptx.find(".entry k0_scale"), std::string::npos);
  EXPECT_NE(b->ptx.find(".entry k1_rowsum"), std::string::npos);
  if (!testing_ptxas::available()) GTEST_SKIP() << "no ptxas in the CUDA toolkit";
  std::string log;
  EXPECT_TRUE(testing_ptxas::assemble(b->ptx, "sm_90", &log)) << log;
}

TEST(Nvrtc, OptionsNameTheArchitectureAndTheToolkitHeaders) {
  std::vector<std::string> o = nvrtc_options(kSm90);
  ASSERT_FALSE(o.empty());
  EXPECT_EQ(o[0], "-arch=sm_90");
  bool include = false;
  for (const std::string& s : o) include |= s.rfind("-I", 0) == 0;
  EXPECT_TRUE(include) << "cuda_fp16.h needs the toolkit's include folder";
  EXPECT_NE(nvrtc_version(), "unknown");
}

TEST(Nvrtc, RejectedSourceGivesTheLogAndDumpsTheSource) {
  const std::string dump = fresh_dir("dump");
  ::setenv("KILN_DUMP_DIR", dump.c_str(), 1);
  auto b = nvrtc_compile("extern \"C\" __global__ void k0(float* b0) { b0[0] = undeclared_name; }\n", kSm90, false);
  ::unsetenv("KILN_DUMP_DIR");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.status().code(), absl::StatusCode::kInternal);
  const std::string msg(b.status().message());
  EXPECT_NE(msg.find("NVRTC"), std::string::npos) << msg;
  EXPECT_NE(msg.find("undeclared_name"), std::string::npos) << "the NVRTC log is missing: " << msg;
  EXPECT_NE(msg.find(dump), std::string::npos) << "the dump file is not named: " << msg;
  int cu_files = 0;
  for (const auto& e : std::filesystem::directory_iterator(dump)) {
    if (e.path().extension() != ".cu") continue;
    ++cu_files;
    std::ifstream in(e.path());
    std::stringstream ss;
    ss << in.rdbuf();
    EXPECT_NE(ss.str().find("undeclared_name"), std::string::npos);
  }
  EXPECT_EQ(cu_files, 1);
}

TEST(Nvrtc, UnsupportedArchitectureIsAnError) {
  auto b = nvrtc_compile("extern \"C\" __global__ void k0(float* b0) {}\n", 11, false);
  ASSERT_FALSE(b.ok());
  EXPECT_NE(std::string(b.status().message()).find("sm_11"), std::string::npos) << b.status();
}

TEST(BinaryCache, WarmStartCompilesNothing) {
  CompileCache cache(DiskCache(fresh_dir("warm")));
  const int64_t compiled0 = counters().kernels_compiled, hits0 = counters().kernel_disk_cache_hits;
  auto cold = compile_module(kModule, kSm90, 2, false, cache);
  ASSERT_TRUE(cold.ok()) << cold.status();
  EXPECT_EQ(counters().kernels_compiled - compiled0, 2);
  EXPECT_EQ(counters().kernel_disk_cache_hits - hits0, 0);
  auto warm = compile_module(kModule, kSm90, 2, /*keep_ptx=*/true, cache);
  ASSERT_TRUE(warm.ok()) << warm.status();
  EXPECT_EQ(counters().kernels_compiled - compiled0, 2) << "a warm start compiled";
  EXPECT_EQ(counters().kernel_disk_cache_hits - hits0, 2);
  EXPECT_EQ(warm->cubin, cold->cubin);
  EXPECT_NE(warm->ptx.find(".entry k0_scale"), std::string::npos) << "the cache keeps the PTX for dumps";
}

TEST(BinaryCache, KeyCoversSourceArchitectureAndCompiler) {
  const std::string k = binary_cache_key(kModule, kSm90);
  EXPECT_NE(k, binary_cache_key(kModule, 80));
  EXPECT_NE(k, binary_cache_key(std::string(kModule) + " ", kSm90));
  EXPECT_NE(k.find(nvrtc_version()), std::string::npos);
  EXPECT_NE(k.find("-arch=sm_90"), std::string::npos);
}

TEST(BinaryCache, CorruptedEntryIsRecompiledAndRewritten) {
  CompileCache cache(DiskCache(fresh_dir("corrupt")));
  ASSERT_TRUE(compile_module(kModule, kSm90, 2, false, cache).ok());
  const std::string path = cache.path_for(binary_cache_key(kModule, kSm90));
  const auto full = std::filesystem::file_size(path);
  std::filesystem::resize_file(path, full - 100);
  const int64_t compiled0 = counters().kernels_compiled;
  ::testing::internal::CaptureStderr();
  auto again = compile_module(kModule, kSm90, 2, false, cache);
  std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_NE(err.find("corrupted"), std::string::npos) << err;
  EXPECT_EQ(counters().kernels_compiled - compiled0, 2);
  EXPECT_EQ(std::filesystem::file_size(path), full) << "the entry was not rewritten";
  const int64_t hits0 = counters().kernel_disk_cache_hits;
  ASSERT_TRUE(compile_module(kModule, kSm90, 2, false, cache).ok());
  EXPECT_EQ(counters().kernel_disk_cache_hits - hits0, 2);
}

}  // namespace
}  // namespace kiln::runtime::cuda

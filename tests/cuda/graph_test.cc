// The CUDA replay unit on a GPU, with hand-written kernels that follow the renderer's contract:
// graph edges from step dependencies, rebinding, output safety, concurrency, memory errors.
// Skips where there is no CUDA device.
#include <gtest/gtest.h>

#include <atomic>
#include <thread>
#include <vector>

#include "backends/cuda/device.h"
#include "backends/cuda/executable.h"
#include "backends/cuda/nvrtc.h"
#include "runtime/compiled_program.h"
#include "runtime/device.h"
#include "runtime/registry.h"

namespace kiln::runtime::cuda {
namespace {

constexpr int kN = 1 << 16;

const char* kModule = R"(
extern "C" __global__ void k_twice(const float* b0, float* b1) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < 65536) b1[i] = b0[i] * 2.0f;
}
extern "C" __global__ void k_plus1(const float* b0, float* b1) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < 65536) b1[i] = b0[i] + 1.0f;
}
// Slow on purpose: a download right after the launch must still wait for it.
extern "C" __global__ void k_slow_square(const float* b0, float* b1) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= 65536) return;
  float x = b0[i], acc = 0.0f;
  for (int r = 0; r < 20000; ++r) acc = fmaf(acc, 0.0f, x * x);
  b1[i] = acc;
}
// Uses 64 KiB of dynamic shared memory (over the 48 KiB default): reverses each block's slice.
extern "C" __global__ void k_big_shared(const float* b0, float* b1) {
  extern __shared__ float tile[];
  const int n = 16384, base = blockIdx.x * n;
  for (int j = threadIdx.x; j < n; j += blockDim.x) tile[j] = b0[base + j];
  __syncthreads();
  for (int j = threadIdx.x; j < n; j += blockDim.x) b1[base + j] = tile[n - 1 - j];
}
)";

ir::BufferDesc buffer(ir::BufferKind kind, int index, int64_t offset = -1) {
  ir::BufferDesc b;
  b.kind = kind;
  b.index = index;
  b.dtype = DType::kFloat32;
  b.shape = {kN};
  b.offset = offset;
  return b;
}

CompiledKernel spec(const char* name, std::vector<int> buffers, uint32_t grid = kN / 256, uint32_t block = 256,
                    uint32_t shared = 0) {
  CompiledKernel k;
  k.name = name;
  k.buffers = std::move(buffers);
  k.grid[0] = grid;
  k.block[0] = block;
  k.shared_bytes = shared;
  return k;
}

// A program of `buffers` running `kernels` in `steps` (the module is the fixture's).
CompiledProgram program(std::vector<ir::BufferDesc> buffers, std::vector<CompiledKernel> kernels,
                        std::vector<ir::Step> steps, int64_t arena_bytes = 0) {
  CompiledProgram c;
  c.backend = "cuda";
  for (const ir::BufferDesc& b : buffers) {
    c.num_inputs += b.kind == ir::BufferKind::kInput;
    c.num_outputs += b.kind == ir::BufferKind::kOutput;
    if (b.kind == ir::BufferKind::kOutput) c.outputs.push_back(int(c.buffers.size()));
    c.buffers.push_back(b);
  }
  c.kernels = std::move(kernels);
  c.steps = std::move(steps);
  c.arena_bytes = arena_bytes;
  EXPECT_TRUE(check_consistent(c).ok()) << check_consistent(c);
  return c;
}

class CudaGraphTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto d = get_device("cuda");
    if (!d.ok()) GTEST_SKIP() << d.status().message();
    dev_ = *d;
    ctx_ = context_of(dev_);
    ASSERT_NE(ctx_, nullptr);
    auto bin = nvrtc_compile(kModule, ctx_->cc, false);
    ASSERT_TRUE(bin.ok()) << bin.status();
    auto m = Module::load(bin->cubin);
    ASSERT_TRUE(m.ok()) << m.status();
    module_ = *m;
  }

  std::shared_ptr<Buffer> upload(const std::vector<float>& v) {
    auto b = dev_->alloc(int64_t(v.size() * 4));
    EXPECT_TRUE(b.ok()) << b.status();
    EXPECT_TRUE(dev_->upload(b->get(), v.data(), int64_t(v.size() * 4)).ok());
    return *b;
  }
  std::shared_ptr<Buffer> fresh() {
    auto b = dev_->alloc(kN * 4);
    EXPECT_TRUE(b.ok()) << b.status();
    return *b;
  }
  std::vector<float> download(const std::shared_ptr<Buffer>& b) {
    std::vector<float> v(size_t(b->bytes() / 4));
    absl::Status s = dev_->download(b.get(), v.data(), b->bytes());
    EXPECT_TRUE(s.ok()) << s;
    return v;
  }
  // in -> k_twice -> intermediate (arena) -> k_plus1 -> out: out = 2 * in + 1.
  std::unique_ptr<CudaExecutable> chain() {
    CompiledProgram p = program({buffer(ir::BufferKind::kInput, 0), buffer(ir::BufferKind::kOutput, 0),
                                 buffer(ir::BufferKind::kIntermediate, 0, 0)},
                                {spec("k_twice", {0, 2}), spec("k_plus1", {2, 1})}, {{0, {}}, {1, {0}}}, kN * 4);
    auto e = CudaExecutable::create(dev_, ctx_, p, module_);
    EXPECT_TRUE(e.ok()) << e.status();
    return e.ok() ? *std::move(e) : nullptr;
  }

  Device* dev_ = nullptr;
  Context* ctx_ = nullptr;
  std::shared_ptr<Module> module_;
};

std::vector<float> iota(float start) {
  std::vector<float> v(kN);
  for (int i = 0; i < kN; ++i) v[size_t(i)] = start + float(i % 1000) * 0.5f;
  return v;
}

TEST_F(CudaGraphTest, RunsADependentChain) {
  auto e = chain();
  ASSERT_NE(e, nullptr);
  EXPECT_EQ(e->kernels_per_run(), 2);
  auto in = upload(iota(1.0f));
  auto out = fresh();
  ASSERT_TRUE(e->run({in.get()}, {out.get()}, {}).ok());
  std::vector<float> got = download(out), x = iota(1.0f);
  for (int i = 0; i < kN; i += 997) EXPECT_EQ(got[size_t(i)], 2 * x[size_t(i)] + 1) << i;
}

TEST_F(CudaGraphTest, ResultHeldFromRunOneIsIntactAfterRunTwo) {
  auto e = chain();
  ASSERT_NE(e, nullptr);
  auto in1 = upload(iota(1.0f)), in2 = upload(iota(-7.0f));
  auto out1 = fresh(), out2 = fresh();
  ASSERT_TRUE(e->run({in1.get()}, {out1.get()}, {}).ok());
  ASSERT_TRUE(e->run({in2.get()}, {out2.get()}, {}).ok());  // new bindings: node parameters updated
  ASSERT_TRUE(e->run({in2.get()}, {out2.get()}, {}).ok());  // same bindings: nothing to update
  std::vector<float> r1 = download(out1), r2 = download(out2), x1 = iota(1.0f), x2 = iota(-7.0f);
  for (int i = 0; i < kN; i += 131) {
    ASSERT_EQ(r1[size_t(i)], 2 * x1[size_t(i)] + 1) << "run 1's result was overwritten at " << i;
    ASSERT_EQ(r2[size_t(i)], 2 * x2[size_t(i)] + 1) << i;
  }
}

TEST_F(CudaGraphTest, IndependentKernelsBothRun) {
  CompiledProgram p = program(
      {buffer(ir::BufferKind::kInput, 0), buffer(ir::BufferKind::kOutput, 0), buffer(ir::BufferKind::kOutput, 1)},
      {spec("k_twice", {0, 1}), spec("k_plus1", {0, 2})},
      {{0, {}}, {1, {}}});  // no edge: the graph may run them concurrently
  auto e = CudaExecutable::create(dev_, ctx_, p, module_);
  ASSERT_TRUE(e.ok()) << e.status();
  auto in = upload(iota(3.0f));
  auto a = fresh(), b = fresh();
  ASSERT_TRUE((*e)->run({in.get()}, {a.get(), b.get()}, {}).ok());
  std::vector<float> ra = download(a), rb = download(b), x = iota(3.0f);
  for (int i = 0; i < kN; i += 499) {
    EXPECT_EQ(ra[size_t(i)], 2 * x[size_t(i)]);
    EXPECT_EQ(rb[size_t(i)], x[size_t(i)] + 1);
  }
}

TEST_F(CudaGraphTest, EmptyKernelPassesItsDependenciesOn) {
  CompiledProgram p = program(
      {buffer(ir::BufferKind::kInput, 0), buffer(ir::BufferKind::kOutput, 0),
       buffer(ir::BufferKind::kIntermediate, 0, 0)},
      {spec("k_slow_square", {0, 2}), spec("k_twice", {2, 2}, 0), spec("k_plus1", {2, 1})},
      {{0, {}}, {1, {0}}, {2, {1}}},  // step 1 launches nothing; step 2 must still wait for 0
      kN * 4);
  auto e = CudaExecutable::create(dev_, ctx_, p, module_);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ((*e)->kernels_per_run(), 2);
  auto in = upload(iota(0.25f));
  auto out = fresh();
  ASSERT_TRUE((*e)->run({in.get()}, {out.get()}, {}).ok());
  std::vector<float> r = download(out), x = iota(0.25f);
  for (int i = 0; i < kN; i += 333) EXPECT_EQ(r[size_t(i)], x[size_t(i)] * x[size_t(i)] + 1) << i;
}

TEST_F(CudaGraphTest, DownloadWaitsForTheRunThatWroteTheBuffer) {
  CompiledProgram p = program({buffer(ir::BufferKind::kInput, 0), buffer(ir::BufferKind::kOutput, 0)},
                              {spec("k_slow_square", {0, 1})}, {{0, {}}});
  auto e = CudaExecutable::create(dev_, ctx_, p, module_);
  ASSERT_TRUE(e.ok()) << e.status();
  auto in = upload(iota(2.0f));
  auto out = fresh();
  ASSERT_TRUE((*e)->run({in.get()}, {out.get()}, {}).ok());
  std::vector<float> r = download(out), x = iota(2.0f);  // no synchronize() in between
  for (int i = 0; i < kN; i += 97) EXPECT_EQ(r[size_t(i)], x[size_t(i)] * x[size_t(i)]) << i;
}

TEST_F(CudaGraphTest, ConcurrentRunsOfOneExecutable) {
  auto e = chain();
  ASSERT_NE(e, nullptr);
  std::atomic<int> bad{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([&, t] {
      for (int r = 0; r < 10; ++r) {
        std::vector<float> x = iota(float(t * 100 + r));
        auto in = upload(x);
        auto out = fresh();
        if (!e->run({in.get()}, {out.get()}, {}).ok()) {
          ++bad;
          continue;
        }
        std::vector<float> got = download(out);
        for (int i = 0; i < kN; i += 1021)
          if (got[size_t(i)] != 2 * x[size_t(i)] + 1) ++bad;
      }
    });
  }
  for (std::thread& th : threads) th.join();
  EXPECT_EQ(bad.load(), 0);
}

TEST_F(CudaGraphTest, DynamicSharedMemoryOver48KiB) {
  if (ctx_->shared_optin < 65536) GTEST_SKIP() << "the device has " << ctx_->shared_optin << " bytes of shared memory";
  CompiledProgram p = program({buffer(ir::BufferKind::kInput, 0), buffer(ir::BufferKind::kOutput, 0)},
                              {spec("k_big_shared", {0, 1}, kN / 16384, 512, 65536)}, {{0, {}}});
  auto e = CudaExecutable::create(dev_, ctx_, p, module_);
  ASSERT_TRUE(e.ok()) << e.status();
  auto in = upload(iota(0.0f));
  auto out = fresh();
  ASSERT_TRUE((*e)->run({in.get()}, {out.get()}, {}).ok());
  std::vector<float> r = download(out), x = iota(0.0f);
  for (int i = 0; i < kN; i += 101) {
    int blk = i / 16384, j = i % 16384;
    EXPECT_EQ(r[size_t(i)], x[size_t(blk * 16384 + 16383 - j)]) << i;
  }
}

TEST_F(CudaGraphTest, BadLaunchShapeIsAnError) {
  CompiledProgram p = program({buffer(ir::BufferKind::kInput, 0), buffer(ir::BufferKind::kOutput, 0)},
                              {spec("k_twice", {0, 1}, 1, 2048)}, {{0, {}}});
  auto e = CudaExecutable::create(dev_, ctx_, p, module_);
  ASSERT_FALSE(e.ok());
  EXPECT_NE(std::string(e.status().message()).find("1024"), std::string::npos) << e.status();
  auto missing = module_->function("no_such_kernel");
  EXPECT_FALSE(missing.ok());
  p.kernels[0] = spec("no_such_kernel", {0, 1});
  auto unknown = CudaExecutable::create(dev_, ctx_, p, module_);
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(std::string(unknown.status().message()).find("no_such_kernel"), std::string::npos) << unknown.status();
}

TEST_F(CudaGraphTest, OutOfMemoryIsAnErrorAndTheProcessContinues) {
  auto huge = dev_->alloc(int64_t(1) << 50);  // 1 PiB
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kResourceExhausted) << huge.status();
  auto e = chain();
  ASSERT_NE(e, nullptr);
  auto in = upload(iota(5.0f));
  auto out = fresh();
  ASSERT_TRUE(e->run({in.get()}, {out.get()}, {}).ok());
  EXPECT_EQ(download(out)[10], 2 * iota(5.0f)[10] + 1);
}

TEST_F(CudaGraphTest, DeviceDescribesItself) {
  EXPECT_EQ(dev_->name(), "cuda");
  EXPECT_NE(dev_->description().find("sm_"), std::string::npos) << dev_->description();
  const ir::TargetInfo& t = dev_->target();
  EXPECT_EQ(t.name, "cuda");
  EXPECT_TRUE(t.is_gpu);
  EXPECT_GT(t.parallelism, 0);
  EXPECT_EQ(t.subgroup_size, 32);
  EXPECT_EQ(t.max_workgroup, 1024);
  EXPECT_GE(t.shared_memory, 48 * 1024);
}

}  // namespace
}  // namespace kiln::runtime::cuda

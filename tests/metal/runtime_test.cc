// The Metal runtime (backends/metal: device, memory, queue, executable) against an in-process
// fake of Metal (fake_metal.h), since no machine here has one: programs written by hand in the
// "metal" binding convention (one argument block per kernel at buffer 0) are loaded and run, and
// the tests check what reaches the "GPU": the addresses and params in each argument block, the
// commands of the indirect command buffer and their barriers, the buffers made resident, the
// order of runs, and that rebinding rewrites arguments without re-encoding. The fake's kernels
// compute on the bound memory, so results downloaded through the device check the whole path.
#include <gtest/gtest.h>

#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "backends/metal/compiler.h"
#include "backends/metal/device.h"
#include "backends/metal/memory.h"
#include "backends/metal/target.h"
#include "ir/params.h"
#include "metal/fake_metal.h"
#include "runtime/compiled_program.h"

namespace kiln::testing {
namespace {

using runtime::Buffer;
using runtime::CompiledKernel;
using runtime::CompiledProgram;
using runtime::Device;
using runtime::Executable;
using runtime::metal::MetalDevice;

constexpr char kMsl[] =
    "kernel void scale(constant scale_args& kiln_args [[buffer(0)]]) {}\n"
    "kernel void idle(constant idle_args& kiln_args [[buffer(0)]]) {}\n"
    "kernel void add_ticket(constant add_ticket_args& kiln_args [[buffer(0)]]) {}\n";

ir::BufferDesc buffer(ir::BufferKind kind, int index, DType dtype, Shape shape, int64_t offset = -1, bool zeroed = false) {
  ir::BufferDesc b;
  b.kind = kind;
  b.index = index;
  b.dtype = dtype;
  b.shape = std::move(shape);
  b.offset = offset;
  b.zeroed = zeroed;
  return b;
}

CompiledKernel kernel(const std::string& name, std::vector<int> buffers, std::vector<int> params, std::vector<int> reads,
                      std::vector<int> writes, uint32_t grid = 1, uint32_t block = 4) {
  CompiledKernel k;
  k.name = name;
  k.buffers = std::move(buffers);
  k.params = std::move(params);
  k.reads = std::move(reads);
  k.writes = std::move(writes);
  k.grid = {grid, 1, 1};
  k.block = {block, 1, 1};
  return k;
}

ir::Step step(int kernel, std::vector<int> deps) {
  ir::Step s;
  s.kernel = kernel;
  s.deps = std::move(deps);
  return s;
}

// x (input 0) -> t = x * p0 (scale) -> y = t + tickets[0] (add_ticket), and z = x * p1 (scale's
// twin), with an idle kernel that launches nothing between the first two:
//   buffers 0 x, 1 t (arena 0), 2 tickets (arena 256, zeroed), 3 y, 4 z; arena 512 bytes.
//   steps   s0 scale, s1 idle (after s0), s2 add_ticket (after s1), s3 scale twin (independent).
CompiledProgram program() {
  CompiledProgram c;
  c.backend = "metal";
  c.target_key = runtime::metal::target_key(runtime::metal::metal_target_info("Apple M2 Max", 38));
  c.buffers = {buffer(ir::BufferKind::kInput, 0, DType::kFloat32, {4}),
               buffer(ir::BufferKind::kIntermediate, 0, DType::kFloat32, {4}, 0),
               buffer(ir::BufferKind::kIntermediate, 0, DType::kUInt32, {2}, 256, /*zeroed=*/true),
               buffer(ir::BufferKind::kOutput, 0, DType::kFloat32, {4}),
               buffer(ir::BufferKind::kOutput, 1, DType::kFloat32, {4})};
  c.arena_bytes = 512;
  c.num_inputs = 1;
  c.num_outputs = 2;
  c.outputs = {3, 4};
  c.params = {ir::ParamDesc{DType::kFloat32}, ir::ParamDesc{DType::kFloat32}};
  c.module = kMsl;
  c.kernels = {kernel("scale", {0, 1}, {0}, {0}, {1}), kernel("idle", {1}, {}, {1}, {1}, /*grid=*/0),
               kernel("add_ticket", {1, 2, 3}, {}, {1, 2}, {2, 3}), kernel("scale_z", {0, 4}, {1}, {0}, {4})};
  c.kernels[3].twin = 0;
  c.steps = {step(0, {}), step(1, {0}), step(2, {1}), step(3, {})};
  return c;
}

uint64_t f32_param(double v) { return ir::encode_param(ir::ParamDesc{DType::kFloat32}, Scalar::from_double(v)); }

float f32_of(uint64_t bits) {
  const auto low = uint32_t(bits);
  float f;
  std::memcpy(&f, &low, 4);
  return f;
}

// The fake's kernels: scale (x, out; p) and add_ticket (t, tickets, out), over grid x block threads.
void install_kernels(FakeMetal& fake) {
  fake.kernels["scale"] = FakeKernel{2, 1, [](const uint64_t* a, MtlSize grid, MtlSize block) {
                                       const auto* in = reinterpret_cast<const float*>(a[0]);
                                       auto* out = reinterpret_cast<float*>(a[1]);
                                       for (unsigned long i = 0; i < grid.width * block.width; ++i) out[i] = in[i] * f32_of(a[2]);
                                     }};
  fake.kernels["add_ticket"] = FakeKernel{3, 0, [](const uint64_t* a, MtlSize grid, MtlSize block) {
                                            const auto* t = reinterpret_cast<const float*>(a[0]);
                                            const auto* tickets = reinterpret_cast<const uint32_t*>(a[1]);
                                            auto* out = reinterpret_cast<float*>(a[2]);
                                            for (unsigned long i = 0; i < grid.width * block.width; ++i)
                                              out[i] = t[i] + float(tickets[0]);
                                          }};
}

uint64_t address(const std::shared_ptr<Buffer>& b) { return static_cast<runtime::metal::MetalBuffer*>(b.get())->address(); }
Id handle(const std::shared_ptr<Buffer>& b) { return static_cast<runtime::metal::MetalBuffer*>(b.get())->buffer(); }

class MetalRuntime : public ::testing::Test {
 protected:
  void SetUp() override { install_kernels(fake); }

  std::unique_ptr<Device> open() {
    auto d = MetalDevice::create_with(fake.api());
    EXPECT_TRUE(d.ok()) << d.status();
    return d.ok() ? *std::move(d) : nullptr;
  }
  std::shared_ptr<Buffer> floats(Device& d, const std::vector<float>& v) {
    auto b = d.alloc(int64_t(v.size() * 4));
    EXPECT_TRUE(b.ok()) << b.status();
    EXPECT_TRUE(d.upload(b->get(), v.data(), int64_t(v.size() * 4)).ok());
    return *b;
  }
  std::shared_ptr<Buffer> empty(Device& d, int n) { return *d.alloc(n * 4); }
  std::vector<float> read(Device& d, const std::shared_ptr<Buffer>& b, int n) {
    std::vector<float> v(static_cast<size_t>(n));
    absl::Status s = d.download(b.get(), v.data(), n * 4);
    EXPECT_TRUE(s.ok()) << s;
    return v;
  }
  std::unique_ptr<Executable> load(Device& d, const CompiledProgram& c) {
    auto e = d.load(c);
    EXPECT_TRUE(e.ok()) << e.status();
    return e.ok() ? *std::move(e) : nullptr;
  }

  FakeMetal fake;  // outlives every device of a test
};

TEST(MetalOpen, UnavailableWithoutMetalFramework) {
#ifdef __APPLE__
  GTEST_SKIP() << "this machine may have Metal";
#endif
  auto d = MetalDevice::create();
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(d.status().message().find("no Metal framework"), std::string::npos) << d.status();
}

TEST_F(MetalRuntime, NoGpuOrNoMetal3IsUnavailable) {
  fake.has_device = false;
  auto none = MetalDevice::create_with(fake.api());
  ASSERT_EQ(none.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(none.status().message().find("no Metal device"), std::string::npos) << none.status();
  fake.has_device = true;
  fake.metal3 = false;
  fake.device_name = "AMD Radeon Pro 560";
  auto old = MetalDevice::create_with(fake.api());
  ASSERT_EQ(old.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(old.status().message().find("AMD Radeon Pro 560 lacks Metal 3"), std::string::npos) << old.status();
  EXPECT_EQ(fake.live_objects(), 0);
}

TEST_F(MetalRuntime, DeviceDescribesItsTarget) {
  auto d = open();
  EXPECT_EQ(d->name(), "metal");
  EXPECT_EQ(d->target().subgroup_size, 32);
  EXPECT_EQ(d->target().parallelism, 38);
  EXPECT_NE(d->description().find("Apple M2 Max"), std::string::npos) << d->description();
}

TEST_F(MetalRuntime, TransfersCopyBytes) {
  auto d = open();
  auto b = floats(*d, {1.5f, -2, 3, 4e9f});
  EXPECT_EQ(read(*d, b, 4), (std::vector<float>{1.5f, -2, 3, 4e9f}));
  EXPECT_TRUE(d->alloc(0).ok());
  float big[8] = {};
  EXPECT_EQ(d->upload(b.get(), big, 32).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(d->download(b.get(), big, 32).code(), absl::StatusCode::kOutOfRange);
  EXPECT_EQ(d->alloc(-1).status().code(), absl::StatusCode::kInvalidArgument);
  fake.out_of_memory = true;
  EXPECT_EQ(d->alloc(64).status().code(), absl::StatusCode::kResourceExhausted);
}

TEST_F(MetalRuntime, KernelsReadTheirBindingsFromArgumentBlocks) {
  auto d = open();
  auto e = load(*d, program());
  ASSERT_TRUE(e);
  EXPECT_EQ(e->kernels_per_run(), 3);
  auto x = floats(*d, {1, 2, 3, 4});
  auto y = empty(*d, 4), z = empty(*d, 4);
  ASSERT_TRUE(e->run({x.get()}, {y.get(), z.get()}, {f32_param(2), f32_param(-1)}).ok());
  // y = x * 2 + tickets[0]: right only if the zeroed tickets read 0 (new memory is 0xCD here).
  EXPECT_EQ(read(*d, y, 4), (std::vector<float>{2, 4, 6, 8}));
  EXPECT_EQ(read(*d, z, 4), (std::vector<float>{-1, -2, -3, -4}));
  ASSERT_EQ(fake.libraries, std::vector<std::string>{kMsl});
  ASSERT_EQ(fake.executed.size(), 3u);
  const uint64_t arena = fake.executed[0].args[1];
  EXPECT_EQ(fake.buffer_at(arena), (std::pair<uint64_t, size_t>{arena, 512}));  // t is at the arena's start
  EXPECT_EQ(fake.executed[0].function, "scale");
  EXPECT_EQ(fake.executed[0].args, (std::vector<uint64_t>{address(x), arena, f32_param(2)}));
  EXPECT_EQ(fake.executed[1].function, "add_ticket");
  EXPECT_EQ(fake.executed[1].args, (std::vector<uint64_t>{arena, arena + 256, address(y)}));
  EXPECT_EQ(fake.executed[2].function, "scale");  // the twin runs its family's function
  EXPECT_EQ(fake.executed[2].args, (std::vector<uint64_t>{address(x), address(z), f32_param(-1)}));
  EXPECT_EQ(*reinterpret_cast<const uint64_t*>(arena + 256), 0u);  // the tickets stay zero
  EXPECT_TRUE(fake.violations.empty()) << fake.violations[0];
}

TEST_F(MetalRuntime, OneCommandPerLaunchInStepOrderWithBarriersAfterDependencies) {
  auto d = open();
  auto e = load(*d, program());
  ASSERT_TRUE(e);
  auto x = floats(*d, {1, 2, 3, 4});
  auto y = empty(*d, 4), z = empty(*d, 4);
  ASSERT_TRUE(e->run({x.get()}, {y.get(), z.get()}, {f32_param(1), f32_param(1)}).ok());
  ASSERT_EQ(fake.icbs().size(), 1u);
  const std::vector<FakeMetal::Command> commands = fake.icbs()[0];
  ASSERT_EQ(commands.size(), 3u);  // the idle kernel launches nothing
  EXPECT_EQ(commands[0].function, "scale");
  EXPECT_EQ(commands[1].function, "add_ticket");
  EXPECT_EQ(commands[2].function, "scale");
  EXPECT_FALSE(commands[0].barrier);
  EXPECT_TRUE(commands[1].barrier);   // after scale, through the idle step
  EXPECT_FALSE(commands[2].barrier);  // depends on nothing: runs beside the others
  for (const FakeMetal::Command& c : commands) {
    EXPECT_EQ(c.offset % 256, 0u);
    EXPECT_EQ(c.grid.width, 1u);
    EXPECT_EQ(c.block.width, 4u);
    EXPECT_EQ(c.args, commands[0].args);
  }
  EXPECT_NE(commands[0].offset, commands[2].offset);  // the twin has a block of its own
  ASSERT_EQ(fake.submissions.size(), 1u);
  ASSERT_EQ(fake.submissions[0].passes.size(), 1u);
  EXPECT_EQ(fake.submissions[0].passes[0].executions, (std::vector<std::pair<size_t, size_t>>{{0, 3}}));
}

TEST_F(MetalRuntime, EveryBufferTheKernelsReachIsResident) {
  auto d = open();
  auto e = load(*d, program());
  ASSERT_TRUE(e);
  auto x = floats(*d, {1, 2, 3, 4});
  auto y = empty(*d, 4), z = empty(*d, 4);
  ASSERT_TRUE(e->run({x.get()}, {y.get(), z.get()}, {f32_param(1), f32_param(1)}).ok());
  d->synchronize().IgnoreError();
  // The fake checks each argument buffer and each address in an argument block against the pass.
  EXPECT_TRUE(fake.violations.empty()) << fake.violations[0];
  const std::map<Id, bool>& resident = fake.submissions.at(0).passes.at(0).resident;
  EXPECT_EQ(resident.size(), 5u);  // x, y, z, the arena, the argument buffer
  EXPECT_EQ(resident.at(handle(x)), false);
  EXPECT_EQ(resident.at(handle(y)), true);
  EXPECT_EQ(resident.at(handle(z)), true);
  EXPECT_EQ(resident.at(fake.icbs()[0][0].args), false);
}

TEST_F(MetalRuntime, RebindingRewritesArgumentsWithoutReencoding) {
  auto d = open();
  auto e = load(*d, program());
  ASSERT_TRUE(e);
  auto x1 = floats(*d, {1, 2, 3, 4}), x2 = floats(*d, {10, 20, 30, 40});
  auto y1 = empty(*d, 4), z1 = empty(*d, 4), y2 = empty(*d, 4), z2 = empty(*d, 4);
  ASSERT_TRUE(e->run({x1.get()}, {y1.get(), z1.get()}, {f32_param(2), f32_param(3)}).ok());
  ASSERT_TRUE(e->run({x2.get()}, {y2.get(), z2.get()}, {f32_param(0.5), f32_param(-2)}).ok());
  EXPECT_EQ(read(*d, y1, 4), (std::vector<float>{2, 4, 6, 8}));
  EXPECT_EQ(read(*d, z1, 4), (std::vector<float>{3, 6, 9, 12}));
  EXPECT_EQ(read(*d, y2, 4), (std::vector<float>{5, 10, 15, 20}));
  EXPECT_EQ(read(*d, z2, 4), (std::vector<float>{-20, -40, -60, -80}));
  ASSERT_EQ(fake.executed.size(), 6u);
  EXPECT_EQ(fake.executed[3].args[0], address(x2));
  EXPECT_EQ(fake.executed[3].args[2], f32_param(0.5));
  EXPECT_EQ(fake.executed[4].args[2], address(y2));
  EXPECT_EQ(fake.executed[5].args, (std::vector<uint64_t>{address(x2), address(z2), f32_param(-2)}));
  // The first run was done when the second came: its ICB and argument buffer were reused as encoded.
  const std::vector<std::vector<FakeMetal::Command>> icbs = fake.icbs();
  ASSERT_EQ(icbs.size(), 1u);
  for (const FakeMetal::Command& c : icbs[0]) EXPECT_EQ(c.encodings, 1);
  EXPECT_EQ(fake.libraries.size(), 1u);
}

TEST_F(MetalRuntime, DownloadWaitsForTheRunThatWroteItsBuffer) {
  fake.hold = true;
  auto d = open();
  auto e = load(*d, program());
  ASSERT_TRUE(e);
  auto x = floats(*d, {1, 2, 3, 4});
  auto y = empty(*d, 4), z = empty(*d, 4);
  ASSERT_TRUE(e->run({x.get()}, {y.get(), z.get()}, {f32_param(2), f32_param(1)}).ok());
  ASSERT_EQ(fake.submissions.size(), 1u);
  EXPECT_FALSE(fake.submissions[0].executed);  // run() returned without waiting
  auto w = floats(*d, {7, 7, 7, 7});            // an upload into a buffer no run uses waits for nothing
  EXPECT_FALSE(fake.submissions[0].executed);
  EXPECT_EQ(read(*d, y, 4), (std::vector<float>{2, 4, 6, 8}));
  EXPECT_TRUE(fake.submissions[0].executed);
  EXPECT_TRUE(fake.violations.empty()) << fake.violations[0];
}

TEST_F(MetalRuntime, RunsInFlightKeepTheirOwnArgumentBlocksAndRunInOrder) {
  fake.hold = true;
  auto d = open();
  auto e = load(*d, program());
  ASSERT_TRUE(e);
  auto x1 = floats(*d, {1, 2, 3, 4}), x2 = floats(*d, {10, 20, 30, 40});
  auto y1 = empty(*d, 4), z1 = empty(*d, 4), y2 = empty(*d, 4), z2 = empty(*d, 4);
  ASSERT_TRUE(e->run({x1.get()}, {y1.get(), z1.get()}, {f32_param(2), f32_param(1)}).ok());
  ASSERT_TRUE(e->run({x2.get()}, {y2.get(), z2.get()}, {f32_param(3), f32_param(1)}).ok());
  // Neither has executed: the second run wrote its arguments into a second argument buffer.
  EXPECT_EQ(fake.icbs().size(), 2u);
  ASSERT_EQ(fake.submissions.size(), 2u);
  EXPECT_EQ(fake.submissions[0].wait, 0u);
  EXPECT_EQ(fake.submissions[1].wait, fake.submissions[0].signal);  // the second waits for the first
  EXPECT_GT(fake.submissions[1].signal, fake.submissions[0].signal);
  EXPECT_EQ(read(*d, y1, 4), (std::vector<float>{2, 4, 6, 8}));
  EXPECT_FALSE(fake.submissions[1].executed);  // waiting for run 1 did not wait for run 2
  EXPECT_EQ(read(*d, y2, 4), (std::vector<float>{30, 60, 90, 120}));
  EXPECT_TRUE(fake.violations.empty()) << fake.violations[0];
}

TEST_F(MetalRuntime, AGpuFailureIsReportedAndLaterRunsAreNotStuck) {
  fake.hold = true;
  fake.failing_commits = {0};
  auto d = open();
  auto e = load(*d, program());
  ASSERT_TRUE(e);
  auto x = floats(*d, {1, 2, 3, 4});
  auto y1 = empty(*d, 4), z1 = empty(*d, 4), y2 = empty(*d, 4), z2 = empty(*d, 4);
  ASSERT_TRUE(e->run({x.get()}, {y1.get(), z1.get()}, {f32_param(2), f32_param(1)}).ok());
  ASSERT_TRUE(e->run({x.get()}, {y2.get(), z2.get()}, {f32_param(2), f32_param(1)}).ok());
  float out[4];
  absl::Status s = d->download(y2.get(), out, 16);
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_NE(s.message().find("fake GPU fault"), std::string::npos) << s;
  // The failed run never signalled its tick; the second ran anyway (the fake checks the wait).
  EXPECT_TRUE(fake.submissions[1].executed);
  EXPECT_TRUE(fake.violations.empty()) << fake.violations[0];
}

TEST_F(MetalRuntime, RefusesProgramsForAnotherTarget) {
  auto d = open();
  CompiledProgram wide = program();
  wide.target_key = "msl3.0-simd64";
  EXPECT_EQ(d->load(wide).status().code(), absl::StatusCode::kFailedPrecondition);
  CompiledProgram cuda = program();
  cuda.backend = "cuda";
  EXPECT_EQ(d->load(cuda).status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_TRUE(fake.libraries.empty());
}

TEST_F(MetalRuntime, RefusesLoopsAndCollectives) {
  auto d = open();
  CompiledProgram loop = program();
  loop.buffers.push_back(buffer(ir::BufferKind::kIntermediate, 0, DType::kBool, {1}, 320));
  ir::Step head, end;
  head.kind = ir::StepKind::kWhile;
  head.flag = 5;
  end.kind = ir::StepKind::kEnd;
  loop.steps = {step(0, {}), head, step(2, {}), end};
  auto l = d->load(loop);
  EXPECT_EQ(l.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_EQ(l.status().message(), runtime::metal::kMetalNoControl);
  CompiledProgram collective = program();
  ir::Step all_reduce;
  all_reduce.kind = ir::StepKind::kCollective;
  all_reduce.in = 3;
  all_reduce.out = 4;
  collective.steps.push_back(all_reduce);
  auto c = d->load(collective);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(c.status().message().find("metal"), std::string::npos) << c.status();
}

TEST_F(MetalRuntime, CompileErrorsCarryTheCompilersLog) {
  fake.compile_error = "program_source:1:20: error: unknown type name 'scale_args'";
  auto d = open();
  auto e = d->load(program());
  EXPECT_EQ(e.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(e.status().message().find("unknown type name 'scale_args'"), std::string::npos) << e.status();
}

TEST_F(MetalRuntime, AMissingEntryPointIsInternal) {
  auto d = open();
  CompiledProgram c = program();
  c.module = "kernel void scale(constant scale_args& kiln_args [[buffer(0)]]) {}\n";
  auto e = d->load(c);
  EXPECT_EQ(e.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(e.status().message().find("add_ticket"), std::string::npos) << e.status();
}

TEST_F(MetalRuntime, RefusesPipelinesThatDoNotFitTheLaunch) {
  auto d = open();
  fake.execution_width = 64;  // SIMD-groups wider than the target's 32
  auto wide = d->load(program());
  EXPECT_EQ(wide.status().code(), absl::StatusCode::kUnimplemented);
  EXPECT_NE(wide.status().message().find("kernel scale runs in SIMD-groups of 64"), std::string::npos) << wide.status();
  fake.execution_width = 32;
  fake.max_threads = 2;  // fewer threads than the kernels' threadgroups of 4
  auto big = d->load(program());
  EXPECT_EQ(big.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(big.status().message().find("threadgroups of 4 threads"), std::string::npos) << big.status();
}

TEST_F(MetalRuntime, ProgramsOfManyKernelsRunInRangesOfTheIcb) {
  auto d = open();
  fake.kernels["touch"] = FakeKernel{1, 0, nullptr};
  const int n = int(runtime::metal::kMaxCommandsPerExecute) + 1;
  CompiledProgram c;
  c.backend = "metal";
  c.target_key = runtime::metal::target_key(d->target());
  c.buffers = {buffer(ir::BufferKind::kOutput, 0, DType::kFloat32, {1})};
  c.num_outputs = 1;
  c.outputs = {0};
  c.module = "kernel void touch(constant touch_args& kiln_args [[buffer(0)]]) {}\n";
  for (int i = 0; i < n; ++i) {
    c.kernels.push_back(kernel("touch" + std::to_string(i), {0}, {}, {}, {0}, 1, 1));
    if (i > 0) c.kernels.back().twin = 0;
    c.steps.push_back(step(i, i > 0 ? std::vector<int>{i - 1} : std::vector<int>{}));
  }
  c.kernels[0].name = "touch";
  auto e = load(*d, c);
  ASSERT_TRUE(e);
  auto out = empty(*d, 1);
  ASSERT_TRUE(e->run({}, {out.get()}, {}).ok());
  const FakeMetal::Pass& pass = fake.submissions.at(0).passes.at(0);
  EXPECT_EQ(pass.executions, (std::vector<std::pair<size_t, size_t>>{{0, size_t(n - 1)}, {size_t(n - 1), 1}}));
  EXPECT_EQ(pass.memory_barriers, 1);  // the second range starts after the first has finished
  EXPECT_EQ(fake.executed.size(), size_t(n));
  EXPECT_TRUE(fake.violations.empty()) << fake.violations[0];
}

TEST_F(MetalRuntime, ReleasesEverythingItMade) {
  {
    auto d = open();
    auto e = load(*d, program());
    ASSERT_TRUE(e);
    auto x = floats(*d, {1, 2, 3, 4});
    auto y = empty(*d, 4), z = empty(*d, 4);
    ASSERT_TRUE(e->run({x.get()}, {y.get(), z.get()}, {f32_param(2), f32_param(1)}).ok());
    e.reset();  // while its run may be in flight: released after it
    x.reset();
  }
  EXPECT_EQ(fake.live_objects(), 0);
  EXPECT_TRUE(fake.violations.empty()) << fake.violations[0];
}

}  // namespace
}  // namespace kiln::testing

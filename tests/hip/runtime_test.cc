// kiln's HIP runtime (backends/hip: device, memory, executable) run against a stand-in
// libamdhip64.so (tests/hip/fake_runtime), since no AMD GPU is reachable: each test runs again in
// a child process with the fake first on LD_LIBRARY_PATH (kiln dlopens "libamdhip64.so" by name,
// once per process) and KILN_HIP_SKIP_KFD_CHECK=1 (the device's /dev/kfd check would stop it
// first), and passes when the child does. The programs are real kiln programs, compiled by
// kiln's HIP compiler for gfx90a; the fake cannot run AMDGPU code, so the tests check what
// reached the "driver" through the fake's call log (fake_hip.h): the device it opened, the code
// object loaded and the entry points asked for, the HIP graph built (a kernel node per step,
// edges from the steps' dependencies, the buffers' addresses and param values as arguments),
// rebinding on later runs, the launches in order, copies, and how driver errors reach the caller.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "backends/hip/executable.h"
#include "backends/hip/hip_api.h"
#include "backends/hip/memory.h"
#include "backends/hip/target.h"
#include "frontend/capture.h"
#include "hip/fake_runtime/fake_hip.h"
#include "ir/params.h"
#include "kiln/kiln.h"
#include "passes/pipeline.h"
#include "runtime/registry.h"
#include "testing/reference.h"

namespace kiln {
namespace {

using runtime::Buffer;
using runtime::CompiledProgram;
using runtime::Device;
using runtime::Executable;
using testing::random_tensor;

// ---- Running a test in a child process on the fake ----

constexpr const char* kChild = "KILN_FAKE_HIP_CHILD";

// In the test process: runs the current test again in a child process on the fake (with `env`,
// "NAME=value ..."), expects it to pass, and returns false. In that child: returns true, and the
// test's body runs.
bool in_child_on_fake(const std::string& env = "") {
  if (std::getenv(kChild)) return true;
  if (!std::filesystem::exists(KILN_FAKE_HIP_DIR "/libamdhip64.so")) {
    [] { GTEST_SKIP() << "the stand-in runtime is not built here (a bundle?): " KILN_FAKE_HIP_DIR "/libamdhip64.so"; }();
    return false;
  }
  const ::testing::TestInfo* t = ::testing::UnitTest::GetInstance()->current_test_info();
  const char* old = std::getenv("LD_LIBRARY_PATH");
  // KILN_DEVICE=cpu: the tensors the test builds stay on the CPU (the fake GPU computes nothing).
  const std::string cmd = absl::StrCat(
      "env -u GTEST_OUTPUT -u GTEST_FILTER -u GTEST_TOTAL_SHARDS -u GTEST_SHARD_INDEX 'LD_LIBRARY_PATH=", KILN_FAKE_HIP_DIR,
      old && *old ? ":" : "", old ? old : "", "' KILN_HIP_SKIP_KFD_CHECK=1 KILN_DEVICE=cpu ", kChild, "=1 ", env, " /proc/",
      ::getpid(), "/exe --gtest_filter=", t->test_suite_name(), ".", t->name(), " 2>&1");
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) {
    ADD_FAILURE() << "popen failed: " << cmd;
    return false;
  }
  char buf[4096];
  for (size_t n; (n = std::fread(buf, 1, sizeof(buf), p)) > 0;) out.append(buf, n);
  const int status = ::pclose(p);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && out.find("[  SKIPPED ] 1 test") != std::string::npos) {
    [&] { GTEST_SKIP() << "the child skipped:\n" << out; }();
    return false;
  }
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0 && out.find("[  PASSED  ] 1 test.") != std::string::npos)
      << "the child on the fake runtime failed:\n" << cmd << "\n" << out;
  return false;
}

// ---- The fake's log ----

struct Call {
  std::string entry;
  std::map<std::string, std::string> kv;
  std::string text;
  std::string operator[](const std::string& key) const {
    auto it = kv.find(key);
    return it == kv.end() ? "<none>" : it->second;
  }
  bool failed() const { return kv.count("error") > 0; }
};
using Calls = std::vector<Call>;

Calls parse(const std::string& log) {
  Calls calls;
  for (absl::string_view line : absl::StrSplit(log, '\n', absl::SkipEmpty())) {
    Call c;
    c.text = std::string(line);
    std::vector<std::string> words = absl::StrSplit(line, ' ');
    c.entry = words[0];
    for (size_t i = 1; i < words.size(); ++i) {
      const size_t eq = words[i].find('=');
      if (eq != std::string::npos) c.kv[words[i].substr(0, eq)] = words[i].substr(eq + 1);
    }
    calls.push_back(std::move(c));
  }
  return calls;
}

// The first call of `entry` (an empty Call, whose every key reads "<none>", where there is none).
Call first(const Calls& calls, const std::string& entry) {
  for (const Call& c : calls)
    if (c.entry == entry) return c;
  return Call{};
}

Calls named(const Calls& calls, const std::string& entry) {
  Calls out;
  for (const Call& c : calls)
    if (c.entry == entry) out.push_back(c);
  return out;
}

std::vector<std::string> entries(const Calls& calls) {
  std::vector<std::string> out;
  for (const Call& c : calls) out.push_back(c.entry);
  return out;
}

std::string text(const Calls& calls) {
  std::string s;
  for (const Call& c : calls) absl::StrAppend(&s, c.text, "\n");
  return s;
}

std::string hex(uint64_t v) { return absl::StrCat("0x", absl::Hex(v)); }
uint64_t address(const void* p) { return uint64_t(reinterpret_cast<uintptr_t>(p)); }
uint64_t address(const Buffer* b) { return address(static_cast<const runtime::hip::HipBuffer*>(b)->ptr()); }
uint64_t parse_hex(const std::string& s) { return std::stoull(s, nullptr, 16); }

// The HIP device on the fake, and the fake's log.
struct Fake {
  Device* dev = nullptr;
  const char* (*log)() = nullptr;
  void (*clear)() = nullptr;
  // The calls since the last take().
  Calls take() {
    Calls c = parse(log());
    clear();
    return c;
  }
};

void open_fake(Fake* f) {
  auto d = runtime::get_device("hip");
  ASSERT_TRUE(d.ok()) << d.status();
  f->dev = *d;
  // The library kiln loaded (RTLD_NOLOAD: no second copy) must be the fake.
  void* lib = ::dlopen("libamdhip64.so", RTLD_NOW | RTLD_NOLOAD);
  ASSERT_NE(lib, nullptr) << "kiln's HIP device is open but libamdhip64.so is not loaded";
  f->log = reinterpret_cast<decltype(&kiln_fake_hip_log)>(::dlsym(lib, "kiln_fake_hip_log"));
  f->clear = reinterpret_cast<decltype(&kiln_fake_hip_clear_log)>(::dlsym(lib, "kiln_fake_hip_clear_log"));
  ASSERT_NE(f->log, nullptr) << "the libamdhip64.so kiln loaded is not the stand-in";
  ASSERT_NE(f->clear, nullptr);
}

// ---- The program ----

// y = tanh(a) * 0.75 + tanh(b), one kernel per op (fusion off): tanh(b) is tanh(a)'s twin and
// independent of it, the product waits for tanh(a), the sum for both; the three intermediates
// live in the arena; 0.75 is a param (slot 0), read by the product's kernel.
struct Program {
  CompiledProgram c;
  runtime::ParamValues params;
  std::vector<int> launched;  // steps that launch a kernel, in order
};

void compile_program(const ir::TargetInfo& target, Program* out) {
  Tensor a = random_tensor({256}, float32, 1), b = random_tensor({256}, float32, 2);
  ir::Graph g = ir::lift_params(detail::capture({a.tanh() * 0.75 + b.tanh()}, nullptr));
  auto compiler = runtime::make_compiler("hip", target);
  ASSERT_TRUE(compiler.ok()) << compiler.status();
  passes::Options opts;
  opts.fusion = false;
  auto planned = passes::compile_graph(g, (*compiler)->target(), opts);
  ASSERT_TRUE(planned.ok()) << planned.status();
  auto compiled = (*compiler)->compile(planned->program);
  ASSERT_TRUE(compiled.ok()) << compiled.status();
  out->c = *std::move(compiled);
  const std::vector<Scalar> values = ir::param_values(g);
  ASSERT_EQ(values.size(), out->c.params.size());
  for (size_t s = 0; s < values.size(); ++s) out->params.push_back(ir::encode_param(out->c.params[s], values[s]));
  for (size_t i = 0; i < out->c.steps.size(); ++i)
    if (!out->c.kernels[size_t(out->c.steps[i].kernel)].launches_nothing()) out->launched.push_back(int(i));
}

// The program for the fake GPU, checked to have what the tests rely on.
void gfx90a_program(Fake& f, Program* out) {
  ASSERT_NO_FATAL_FAILURE(compile_program(f.dev->target(), out));
  const CompiledProgram& c = out->c;
  ASSERT_EQ(c.target_key, "gfx90a");
  ASSERT_EQ(out->launched.size(), c.steps.size()) << "every step launches";
  ASSERT_GE(c.steps.size(), 4u);
  ASSERT_EQ(c.params.size(), 1u);
  ASSERT_EQ(c.num_inputs, 2);
  ASSERT_EQ(c.num_outputs, 1);
  ASSERT_GT(c.arena_bytes, 0);
  bool twin = false, independent = false, join = false;
  for (size_t k = 0; k < c.kernels.size(); ++k) twin |= c.kernels[k].twin >= 0;
  for (size_t i = 1; i < c.steps.size(); ++i) {
    independent |= c.steps[i].deps.empty();
    join |= c.steps[i].deps.size() >= 2;
  }
  ASSERT_TRUE(twin && independent && join) << "expected a twin, a second independent step and a join";
}

// Buffers for a program's inputs and outputs, on the device.
struct Bindings {
  std::vector<std::shared_ptr<Buffer>> in, out;
  std::vector<Buffer*> ins() const { return raw(in); }
  std::vector<Buffer*> outs() const { return raw(out); }
  static std::vector<Buffer*> raw(const std::vector<std::shared_ptr<Buffer>>& v) {
    std::vector<Buffer*> r;
    for (const auto& b : v) r.push_back(b.get());
    return r;
  }
};

std::shared_ptr<Buffer> alloc(Device* dev, int64_t bytes) {
  auto b = dev->alloc(bytes);
  EXPECT_TRUE(b.ok()) << b.status();
  return b.ok() ? *b : nullptr;
}

Bindings bind(Device* dev, const CompiledProgram& c) {
  Bindings b;
  b.in.resize(size_t(c.num_inputs));
  b.out.resize(size_t(c.num_outputs));
  for (const ir::BufferDesc& d : c.buffers) {
    if (d.kind == ir::BufferKind::kInput) b.in[size_t(d.index)] = alloc(dev, d.bytes());
    if (d.kind == ir::BufferKind::kOutput) b.out[size_t(d.index)] = alloc(dev, d.bytes());
  }
  return b;
}

// What kernel `k`'s launch must pass: each buffer's device address (the arena's base plus the
// offset for an intermediate, the bound buffer for an input or output; 0 where none is bound
// yet), then the values of its param slots.
std::string expected_args(const CompiledProgram& c, const runtime::CompiledKernel& k, uint64_t arena, const Bindings* b,
                          const runtime::ParamValues* params) {
  std::vector<std::string> args;
  for (int id : k.buffers) {
    const ir::BufferDesc& d = c.buffers[size_t(id)];
    uint64_t a = 0;
    if (d.kind == ir::BufferKind::kIntermediate) a = arena + uint64_t(d.offset);
    else if (b) a = address((d.kind == ir::BufferKind::kInput ? b->in : b->out)[size_t(d.index)].get());
    args.push_back(hex(a));
  }
  for (int s : k.params) args.push_back(hex(params ? (*params)[size_t(s)] : 0));
  return absl::StrJoin(args, ",");
}

// The arena: the one hipMalloc of load(), of the program's arena size.
uint64_t arena_of(const Calls& load, const CompiledProgram& c) {
  Calls m = named(load, "hipMalloc");
  EXPECT_EQ(m.size(), 1u) << text(load);
  if (m.size() != 1) return 0;
  EXPECT_EQ(m[0]["bytes"], std::to_string(c.arena_bytes));
  return parse_hex(m[0]["ptr"]);
}

// ---- The tests ----

TEST(HipFakeRuntime, TheDeviceOpensOnTheFakeGpuAndDescribesIt) {
  if (!in_child_on_fake()) return;
  Fake f;
  ASSERT_NO_FATAL_FAILURE(open_fake(&f));
  EXPECT_EQ(f.dev->name(), "hip");
  EXPECT_EQ(f.dev->description(), "hip (AMD Instinct MI210 (kiln stand-in), gfx90a, 104 CUs, 65536 MiB, HIP runtime 60241134)");
  EXPECT_EQ(runtime::hip::target_key(f.dev->target()), "gfx90a");
  EXPECT_EQ(f.dev->target().subgroup_size, 64);
  EXPECT_EQ(f.dev->target().parallelism, 104);
  auto api = runtime::hip::load_api();
  ASSERT_TRUE(api.ok()) << api.status();
  EXPECT_EQ((*api)->library, "libamdhip64.so");
  EXPECT_EQ((*api)->runtime_version, 60241134);
  // Opening: the version, then device 0 chosen, read through ROCm 6's R0000 properties entry
  // point, and one non-blocking stream (hipStreamNonBlocking = 1).
  Calls calls = f.take();
  EXPECT_EQ(entries(calls), (std::vector<std::string>{"hipRuntimeGetVersion", "hipInit", "hipGetDeviceCount", "hipSetDevice",
                                                      "hipGetDevicePropertiesR0000", "hipStreamCreateWithFlags"}))
      << text(calls);
  ASSERT_EQ(calls.size(), 6u);
  EXPECT_EQ(calls[3]["device"], "0");
  EXPECT_EQ(calls[4]["device"], "0");
  EXPECT_EQ(calls[5]["flags"], "1");
}

TEST(HipFakeRuntime, WithoutAnyGpuTheDeviceIsUnavailable) {
  if (!in_child_on_fake("KILN_FAKE_HIP_DEVICES=0")) return;
  auto d = runtime::get_device("hip");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_EQ(d.status().message(), "hip: no AMD GPU (libamdhip64.so: hipGetDeviceCount hipErrorNoDevice)");
}

// The test switch changes nothing else: with the fake on the search path but without
// KILN_HIP_SKIP_KFD_CHECK=1, a machine without /dev/kfd still gets the /dev/kfd message, and the
// runtime is not even loaded.
TEST(HipFakeRuntime, WithoutTheTestSwitchTheKfdCheckComesFirst) {
  if (!in_child_on_fake("KILN_HIP_SKIP_KFD_CHECK=0")) return;
  if (std::filesystem::exists("/dev/kfd")) GTEST_SKIP() << "this machine has the amdgpu kernel driver";
  auto d = runtime::get_device("hip");
  ASSERT_FALSE(d.ok());
  EXPECT_EQ(d.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(d.status().message().find("no /dev/kfd"), std::string::npos) << d.status();
  EXPECT_EQ(::dlopen("libamdhip64.so", RTLD_NOW | RTLD_NOLOAD), nullptr);
}

TEST(HipFakeRuntime, LoadLoadsTheCodeObjectAndAsksForEachStepsEntryPoint) {
  if (!in_child_on_fake()) return;
  Fake f;
  ASSERT_NO_FATAL_FAILURE(open_fake(&f));
  Program p;
  ASSERT_NO_FATAL_FAILURE(gfx90a_program(f, &p));
  const CompiledProgram& c = p.c;
  f.take();
  auto e = f.dev->load(c);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_EQ((*e)->kernels_per_run(), int(p.launched.size()));
  Calls calls = f.take();
  ASSERT_FALSE(calls.empty());
  // First the module: the whole code object, every distinct entry point in it.
  ASSERT_EQ(calls[0].entry, "hipModuleLoadData") << text(calls);
  EXPECT_EQ(calls[0]["bytes"], std::to_string(c.module.size()));
  EXPECT_EQ(calls[0]["processor"], "gfx90a");
  std::set<std::string> in_module;
  for (absl::string_view k : absl::StrSplit(calls[0]["kernels"], ',')) in_module.insert(std::string(k));
  std::set<std::string> entries_used;
  for (int s : p.launched) entries_used.insert(c.entry(size_t(c.steps[size_t(s)].kernel)));
  EXPECT_EQ(in_module, entries_used) << "the module holds exactly one function per family of twins";
  // Then each step's entry point, in step order; a twin asks for its family's, and gets the
  // same function.
  Calls asked = named(calls, "hipModuleGetFunction");
  ASSERT_EQ(asked.size(), p.launched.size()) << text(calls);
  std::map<std::string, std::string> func_of;
  for (size_t i = 0; i < asked.size(); ++i) {
    const std::string entry = c.entry(size_t(c.steps[size_t(p.launched[i])].kernel));
    EXPECT_EQ(asked[i]["name"], entry);
    EXPECT_EQ(asked[i]["module"], calls[0]["module"]);
    auto it = func_of.emplace(entry, asked[i]["func"]).first;
    EXPECT_EQ(it->second, asked[i]["func"]) << "a twin gets its family's function";
  }
  EXPECT_LT(func_of.size(), asked.size()) << "the twins share an entry point";
  for (const Call& call : calls) EXPECT_FALSE(call.failed()) << call.text;
}

TEST(HipFakeRuntime, TheGraphHasANodePerStepWithEdgesFromTheStepsDependencies) {
  if (!in_child_on_fake()) return;
  Fake f;
  ASSERT_NO_FATAL_FAILURE(open_fake(&f));
  Program p;
  ASSERT_NO_FATAL_FAILURE(gfx90a_program(f, &p));
  const CompiledProgram& c = p.c;
  f.take();
  auto e = f.dev->load(c);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_TRUE(dynamic_cast<runtime::hip::HipExecutable&>(**e).uses_graph());
  Calls calls = f.take();
  const uint64_t arena = arena_of(calls, c);
  ASSERT_EQ(named(calls, "hipGraphCreate").size(), 1u) << text(calls);
  Calls nodes = named(calls, "hipGraphAddKernelNode");
  ASSERT_EQ(nodes.size(), p.launched.size()) << text(calls);
  std::vector<std::string> node_of_step(c.steps.size());
  for (size_t i = 0; i < nodes.size(); ++i) {
    const ir::Step& step = c.steps[size_t(p.launched[i])];
    const runtime::CompiledKernel& k = c.kernels[size_t(step.kernel)];
    const Call& n = nodes[i];
    SCOPED_TRACE(n.text);
    node_of_step[size_t(p.launched[i])] = n["node"];
    EXPECT_EQ(n["graph"], first(calls, "hipGraphCreate")["graph"]);
    // Edges exactly where the step depends on an earlier one.
    std::set<std::string> want;
    for (int d : step.deps) want.insert(node_of_step[size_t(d)]);
    std::set<std::string> got;
    for (absl::string_view d : absl::StrSplit(n["deps"], ',', absl::SkipEmpty())) got.insert(std::string(d));
    EXPECT_EQ(got, want);
    EXPECT_EQ(n["fn"], c.entry(size_t(step.kernel)));
    EXPECT_EQ(n["grid"], absl::StrJoin(k.grid, ","));
    EXPECT_EQ(n["block"], absl::StrJoin(k.block, ","));
    EXPECT_EQ(n["shared"], std::to_string(k.shared_bytes));
    // Intermediates are in the arena from the start; inputs, outputs and params come with a run.
    EXPECT_EQ(n["args"], expected_args(c, k, arena, nullptr, nullptr));
  }
  Calls inst = named(calls, "hipGraphInstantiate");
  ASSERT_EQ(inst.size(), 1u) << text(calls);
  EXPECT_EQ(inst[0]["nodes"], std::to_string(nodes.size()));
  EXPECT_EQ(calls.back().entry, "hipGraphInstantiate") << "the graph is instantiated once it is complete";
}

// Checks one run's calls: the nodes rebound are exactly those whose arguments differ from what
// the instantiated graph held (`held`, updated), each with its new arguments; then one launch of
// the same graph, whose nodes carry every buffer's address and param value, then an event on the
// stream. Returns the nodes rebound.
std::set<std::string> check_run(const Calls& calls, const Program& p, uint64_t arena, const Bindings& b,
                                const runtime::ParamValues& params, std::map<std::string, std::string>* held) {
  const CompiledProgram& c = p.c;
  EXPECT_TRUE(named(calls, "hipGraphInstantiate").empty() && named(calls, "hipGraphAddKernelNode").empty())
      << "a run reuses the instantiated graph:\n" << text(calls);
  std::set<std::string> rebound;
  for (const Call& s : named(calls, "hipGraphExecKernelNodeSetParams")) rebound.insert(s["node"]);
  Calls launches = named(calls, "launch");
  EXPECT_EQ(named(calls, "hipGraphLaunch").size(), 1u) << text(calls);
  EXPECT_EQ(launches.size(), p.launched.size()) << text(calls);
  std::set<std::string> changed;
  for (size_t i = 0; i < launches.size() && i < p.launched.size(); ++i) {
    const runtime::CompiledKernel& k = c.kernels[size_t(c.steps[size_t(p.launched[i])].kernel)];
    const std::string args = expected_args(c, k, arena, &b, &params);
    const std::string node = launches[i]["node"];
    EXPECT_EQ(launches[i]["args"], args) << launches[i].text;
    EXPECT_EQ(launches[i]["fn"], c.entry(size_t(c.steps[size_t(p.launched[i])].kernel)));
    if ((*held)[node] != args) changed.insert(node);
    (*held)[node] = args;
  }
  EXPECT_EQ(rebound, changed) << "rebind exactly the nodes whose arguments changed:\n" << text(calls);
  for (const Call& s : named(calls, "hipGraphExecKernelNodeSetParams")) EXPECT_EQ(s["args"], (*held)[s["node"]]) << s.text;
  // In order: the rebinding, the launch, the event after it on the same stream (and the previous
  // run's event released where no output holds it any more).
  std::vector<std::string> seq;
  for (const Call& call : calls)
    if (call.entry != "launch" && call.entry != "hipGraphExecKernelNodeSetParams") seq.push_back(call.entry);
  if (seq.size() == 4 && seq[3] == "hipEventDestroy") {
    EXPECT_NE(first(calls, "hipEventDestroy")["event"], first(calls, "hipEventRecord")["event"]);
    seq.pop_back();
  }
  EXPECT_EQ(seq, (std::vector<std::string>{"hipGraphLaunch", "hipEventCreateWithFlags", "hipEventRecord"})) << text(calls);
  EXPECT_EQ(first(calls, "hipEventRecord")["stream"], first(calls, "hipGraphLaunch")["stream"]);
  for (const Call& call : calls) EXPECT_FALSE(call.failed()) << call.text;
  return rebound;
}

// The nodes of the launched steps whose kernel binds buffer `id` or reads slot `slot`.
std::set<std::string> nodes_using(const Program& p, const std::vector<std::string>& node_of_launch, int id, int slot) {
  std::set<std::string> out;
  for (size_t i = 0; i < p.launched.size(); ++i) {
    const runtime::CompiledKernel& k = p.c.kernels[size_t(p.c.steps[size_t(p.launched[i])].kernel)];
    const bool uses = std::count(k.buffers.begin(), k.buffers.end(), id) > 0 || std::count(k.params.begin(), k.params.end(), slot) > 0;
    if (uses) out.insert(node_of_launch[i]);
  }
  return out;
}

TEST(HipFakeRuntime, RunsBindBuffersAndParamsAndRebindOnlyWhatChanged) {
  if (!in_child_on_fake()) return;
  Fake f;
  ASSERT_NO_FATAL_FAILURE(open_fake(&f));
  Program p;
  ASSERT_NO_FATAL_FAILURE(gfx90a_program(f, &p));
  const CompiledProgram& c = p.c;
  f.take();
  auto e = f.dev->load(c);
  ASSERT_TRUE(e.ok()) << e.status();
  Calls load = f.take();
  const uint64_t arena = arena_of(load, c);
  std::map<std::string, std::string> held;  // what the instantiated graph holds, node -> arguments
  std::vector<std::string> node_of_launch;
  for (const Call& n : named(load, "hipGraphAddKernelNode")) {
    held[n["node"]] = n["args"];
    node_of_launch.push_back(n["node"]);
  }
  ASSERT_EQ(node_of_launch.size(), p.launched.size());
  Bindings b = bind(f.dev, c);
  f.take();

  // The first run binds every input and output and the param.
  ASSERT_EQ((*e)->run(b.ins(), b.outs(), p.params), absl::OkStatus());
  Calls run1 = f.take();
  EXPECT_FALSE(check_run(run1, p, arena, b, p.params, &held).empty());

  // The same bindings again: nothing to rebind, the same graph launched again.
  ASSERT_EQ((*e)->run(b.ins(), b.outs(), p.params), absl::OkStatus());
  EXPECT_TRUE(check_run(f.take(), p, arena, b, p.params, &held).empty());

  // A new output buffer: only the node that writes the output is rebound.
  int out_id = -1, in1_id = -1;
  for (size_t i = 0; i < c.buffers.size(); ++i) {
    if (c.buffers[i].kind == ir::BufferKind::kOutput) out_id = int(i);
    if (c.buffers[i].kind == ir::BufferKind::kInput && c.buffers[i].index == 1) in1_id = int(i);
  }
  b.out[0] = alloc(f.dev, b.out[0]->bytes());
  f.take();
  ASSERT_EQ((*e)->run(b.ins(), b.outs(), p.params), absl::OkStatus());
  std::set<std::string> rebound = check_run(f.take(), p, arena, b, p.params, &held);
  EXPECT_EQ(rebound, nodes_using(p, node_of_launch, out_id, -1));
  EXPECT_LT(rebound.size(), p.launched.size());

  // A new param value: only the node that reads it.
  runtime::ParamValues params2 = p.params;
  params2[0] = ir::encode_param(c.params[0], Scalar::from_double(1.5));
  ASSERT_NE(params2[0], p.params[0]);
  ASSERT_EQ((*e)->run(b.ins(), b.outs(), params2), absl::OkStatus());
  rebound = check_run(f.take(), p, arena, b, params2, &held);
  EXPECT_EQ(rebound, nodes_using(p, node_of_launch, -1, 0));
  EXPECT_EQ(rebound.size(), 1u);

  // A new second input: only the node that reads it (tanh(b)).
  b.in[1] = alloc(f.dev, b.in[1]->bytes());
  f.take();
  ASSERT_EQ((*e)->run(b.ins(), b.outs(), params2), absl::OkStatus());
  Calls run5 = f.take();
  rebound = check_run(run5, p, arena, b, params2, &held);
  EXPECT_EQ(rebound, nodes_using(p, node_of_launch, in1_id, -1));
  EXPECT_EQ(rebound.size(), 1u);

  // Downloading the output waits for the event recorded after the run that wrote it, then copies.
  std::vector<char> host(size_t(b.out[0]->bytes()));
  ASSERT_TRUE(f.dev->download(b.out[0].get(), host.data(), b.out[0]->bytes()).ok());
  Calls dl = f.take();
  ASSERT_EQ(entries(dl), (std::vector<std::string>{"hipEventSynchronize", "hipMemcpy"})) << text(dl);
  EXPECT_EQ(dl[0]["event"], first(run5, "hipEventRecord")["event"]);
  EXPECT_EQ(dl[1]["kind"], "DeviceToHost");
  EXPECT_EQ(dl[1]["src"], hex(address(b.out[0].get())));
  EXPECT_EQ(dl[1]["bytes"], std::to_string(host.size()));
}

// A rebinding the runtime refuses fails the run with the HIP error; the next run rebinds what
// the failed one could not, and its launch carries every argument.
TEST(HipFakeRuntime, ARefusedRebindFailsTheRunAndTheNextRunRebinds) {
  if (!in_child_on_fake()) return;
  Fake f;
  ASSERT_NO_FATAL_FAILURE(open_fake(&f));
  Program p;
  ASSERT_NO_FATAL_FAILURE(gfx90a_program(f, &p));
  f.take();
  auto e = f.dev->load(p.c);
  ASSERT_TRUE(e.ok()) << e.status();
  const uint64_t arena = arena_of(f.take(), p.c);
  Bindings b = bind(f.dev, p.c);
  ::setenv("KILN_FAKE_HIP_FAIL", "hipGraphExecKernelNodeSetParams", 1);
  absl::Status s = (*e)->run(b.ins(), b.outs(), p.params);
  ::unsetenv("KILN_FAKE_HIP_FAIL");
  EXPECT_EQ(s.code(), absl::StatusCode::kInternal);
  EXPECT_NE(s.message().find("(hipGraphExecKernelNodeSetParams) failed: hipErrorUnknown"), std::string::npos) << s;
  f.take();
  ASSERT_EQ((*e)->run(b.ins(), b.outs(), p.params), absl::OkStatus());
  Calls calls = f.take();
  EXPECT_FALSE(named(calls, "hipGraphExecKernelNodeSetParams").empty()) << text(calls);
  Calls launches = named(calls, "launch");
  ASSERT_EQ(launches.size(), p.launched.size()) << text(calls);
  for (size_t i = 0; i < launches.size(); ++i)
    EXPECT_EQ(launches[i]["args"], expected_args(p.c, p.c.kernels[size_t(p.c.steps[size_t(p.launched[i])].kernel)], arena, &b,
                                                 &p.params))
        << launches[i].text;
}

TEST(HipFakeRuntime, UploadsAndDownloadsCopyTheBytes) {
  if (!in_child_on_fake()) return;
  Fake f;
  ASSERT_NO_FATAL_FAILURE(open_fake(&f));
  f.take();
  std::shared_ptr<Buffer> buf = alloc(f.dev, 1000);
  ASSERT_NE(buf, nullptr);
  Calls calls = f.take();
  ASSERT_EQ(calls.size(), 1u) << text(calls);
  EXPECT_EQ(calls[0].entry, "hipMalloc");
  EXPECT_EQ(calls[0]["bytes"], "1000");
  EXPECT_EQ(calls[0]["ptr"], hex(address(buf.get())));
  std::vector<unsigned char> up(1000);
  for (size_t i = 0; i < up.size(); ++i) up[i] = static_cast<unsigned char>(i * 7 + 3);
  ASSERT_TRUE(f.dev->upload(buf.get(), up.data(), 1000).ok());
  std::vector<unsigned char> down(1000, 0), head(10, 0);
  ASSERT_TRUE(f.dev->download(buf.get(), down.data(), 1000).ok());
  EXPECT_EQ(down, up);
  ASSERT_TRUE(f.dev->download(buf.get(), head.data(), 10).ok());
  EXPECT_EQ(head, std::vector<unsigned char>(up.begin(), up.begin() + 10));
  calls = f.take();
  ASSERT_EQ(entries(calls), (std::vector<std::string>{"hipMemcpy", "hipMemcpy", "hipMemcpy"})) << text(calls);
  EXPECT_EQ(calls[0]["kind"], "HostToDevice");
  EXPECT_EQ(calls[0]["dst"], hex(address(buf.get())));
  EXPECT_EQ(calls[0]["bytes"], "1000");
  EXPECT_EQ(calls[1]["kind"], "DeviceToHost");
  EXPECT_EQ(calls[2]["bytes"], "10");
  // Too large or empty: refused or done without the driver.
  EXPECT_EQ(f.dev->upload(buf.get(), up.data(), 1001).code(), absl::StatusCode::kOutOfRange);
  EXPECT_TRUE(f.dev->upload(buf.get(), up.data(), 0).ok());
  EXPECT_TRUE(f.take().empty());
  // Dropping the buffer frees it.
  const std::string ptr = hex(address(buf.get()));
  buf.reset();
  calls = f.take();
  ASSERT_EQ(calls.size(), 1u) << text(calls);
  EXPECT_EQ(calls[0].entry, "hipFree");
  EXPECT_EQ(calls[0]["ptr"], ptr);
}

// Some ROCm releases refuse module functions in graph nodes: the executable drops the graph and
// launches kernel by kernel, in step order, with the same arguments.
TEST(HipFakeRuntime, WhereGraphsAreRefusedKernelsLaunchOneByOneInStepOrder) {
  if (!in_child_on_fake("KILN_FAKE_HIP_FAIL=hipGraphAddKernelNode")) return;
  Fake f;
  ASSERT_NO_FATAL_FAILURE(open_fake(&f));
  Program p;
  ASSERT_NO_FATAL_FAILURE(gfx90a_program(f, &p));
  const CompiledProgram& c = p.c;
  f.take();
  auto e = f.dev->load(c);
  ASSERT_TRUE(e.ok()) << e.status();
  EXPECT_FALSE(dynamic_cast<runtime::hip::HipExecutable&>(**e).uses_graph());
  EXPECT_EQ((*e)->kernels_per_run(), int(p.launched.size()));
  Calls load = f.take();
  const uint64_t arena = arena_of(load, c);
  EXPECT_TRUE(named(load, "hipGraphInstantiate").empty()) << text(load);
  ASSERT_EQ(named(load, "hipGraphDestroy").size(), 1u) << "the half-built graph is destroyed:\n" << text(load);
  EXPECT_EQ(first(load, "hipGraphDestroy")["graph"], first(load, "hipGraphCreate")["graph"]);
  Bindings b = bind(f.dev, c);
  f.take();
  for (int round = 0; round < 2; ++round) {
    ASSERT_EQ((*e)->run(b.ins(), b.outs(), p.params), absl::OkStatus());
    Calls calls = f.take();
    Calls launches = named(calls, "hipModuleLaunchKernel");
    ASSERT_EQ(launches.size(), p.launched.size()) << text(calls);
    EXPECT_TRUE(named(calls, "hipGraphLaunch").empty());
    EXPECT_TRUE(named(calls, "hipGraphExecKernelNodeSetParams").empty());
    for (size_t i = 0; i < launches.size(); ++i) {
      const runtime::CompiledKernel& k = c.kernels[size_t(c.steps[size_t(p.launched[i])].kernel)];
      EXPECT_EQ(launches[i]["fn"], c.entry(size_t(c.steps[size_t(p.launched[i])].kernel)));
      EXPECT_EQ(launches[i]["args"], expected_args(c, k, arena, &b, &p.params));
      EXPECT_EQ(launches[i]["grid"], absl::StrJoin(k.grid, ","));
      EXPECT_EQ(launches[i]["block"], absl::StrJoin(k.block, ","));
      EXPECT_FALSE(launches[i].failed()) << launches[i].text;
    }
    // The run's event is recorded after its last kernel.
    ASSERT_EQ(named(calls, "hipEventRecord").size(), 1u) << text(calls);
    size_t last_launch = 0, record = 0;
    for (size_t i = 0; i < calls.size(); ++i) {
      if (calls[i].entry == "hipModuleLaunchKernel") last_launch = i;
      if (calls[i].entry == "hipEventRecord") record = i;
    }
    EXPECT_GT(record, last_launch) << text(calls);
    EXPECT_EQ(calls[record]["stream"], launches[0]["stream"]);
  }
}

TEST(HipFakeRuntime, OutOfMemoryIsResourceExhausted) {
  if (!in_child_on_fake()) return;
  Fake f;
  ASSERT_NO_FATAL_FAILURE(open_fake(&f));
  // More than the GPU's 64 GiB.
  auto big = f.dev->alloc(int64_t(100) << 30);
  ASSERT_FALSE(big.ok());
  EXPECT_EQ(big.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(big.status().message().find("hipErrorOutOfMemory"), std::string::npos) << big.status();
  // The arena of a program.
  Program p;
  ASSERT_NO_FATAL_FAILURE(gfx90a_program(f, &p));
  f.take();
  ::setenv("KILN_FAKE_HIP_FAIL", "hipMalloc", 1);
  auto e = f.dev->load(p.c);
  ::unsetenv("KILN_FAKE_HIP_FAIL");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(e.status().message().find("allocating the arena (hipMalloc) failed: hipErrorOutOfMemory"), std::string::npos)
      << e.status();
  // The module loaded before the failure is unloaded.
  Calls calls = f.take();
  ASSERT_EQ(named(calls, "hipModuleUnload").size(), 1u) << text(calls);
  EXPECT_EQ(first(calls, "hipModuleUnload")["module"], first(calls, "hipModuleLoadData")["module"]);
}

TEST(HipFakeRuntime, AModuleTheRuntimeRejectsIsAnInternalErrorNamingTheHipError) {
  if (!in_child_on_fake()) return;
  Fake f;
  ASSERT_NO_FATAL_FAILURE(open_fake(&f));
  Program p;
  ASSERT_NO_FATAL_FAILURE(gfx90a_program(f, &p));
  // Damaged bytes.
  CompiledProgram damaged = p.c;
  damaged.module[1] = 'X';
  auto e = f.dev->load(damaged);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(e.status().message().find("loading the code object (hipModuleLoadData) failed: hipErrorInvalidImage"),
            std::string::npos)
      << e.status();
  // A code object for gfx908 that claims to be for gfx90a: the runtime finds no code for its GPU.
  Program other;
  ASSERT_NO_FATAL_FAILURE(compile_program(runtime::hip::hip_target_info("gfx908", 120), &other));
  other.c.target_key = "gfx90a";
  e = f.dev->load(other.c);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(e.status().message().find("hipErrorNoBinaryForGpu (is it for this GPU's processor?)"), std::string::npos)
      << e.status();
  // A kernel the module does not have.
  CompiledProgram renamed = p.c;
  renamed.kernels[0].name = "kiln_no_such_kernel";
  e = f.dev->load(renamed);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), absl::StatusCode::kInternal);
  EXPECT_NE(e.status().message().find("finding kernel kiln_no_such_kernel in the code object failed: hipErrorNotFound"),
            std::string::npos)
      << e.status();
  // Nothing of the three loads is left behind.
  Calls calls = f.take();
  EXPECT_EQ(named(calls, "hipModuleUnload").size(), 1u) << text(calls);
  EXPECT_TRUE(named(calls, "hipGraphCreate").empty()) << text(calls);
  for (const Call& m : named(calls, "hipMalloc")) {
    bool freed = false;
    for (const Call& fr : named(calls, "hipFree")) freed |= fr["ptr"] == m["ptr"];
    EXPECT_TRUE(freed) << "the arena of a failed load is freed: " << m.text;
  }
}

TEST(HipFakeRuntime, AProgramForAnotherProcessorIsRefusedBeforeTheRuntimeSeesIt) {
  if (!in_child_on_fake()) return;
  Fake f;
  ASSERT_NO_FATAL_FAILURE(open_fake(&f));
  Program other;
  ASSERT_NO_FATAL_FAILURE(compile_program(runtime::hip::hip_target_info("gfx908", 120), &other));
  f.take();
  auto e = f.dev->load(other.c);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_EQ(e.status().message(), "hip: the program was compiled for hip gfx908; this device is hip gfx90a");
  EXPECT_TRUE(f.take().empty());
}

TEST(HipFakeRuntime, DroppingTheExecutableReleasesWhatItHolds) {
  if (!in_child_on_fake()) return;
  Fake f;
  ASSERT_NO_FATAL_FAILURE(open_fake(&f));
  Program p;
  ASSERT_NO_FATAL_FAILURE(gfx90a_program(f, &p));
  f.take();
  auto e = f.dev->load(p.c);
  ASSERT_TRUE(e.ok()) << e.status();
  Calls load = f.take();
  Bindings b = bind(f.dev, p.c);
  ASSERT_EQ((*e)->run(b.ins(), b.outs(), p.params), absl::OkStatus());
  Calls run = f.take();
  e->reset();
  // It waits for its last run, then destroys the graph, frees the arena and unloads the module.
  Calls calls = f.take();
  EXPECT_EQ(entries(calls), (std::vector<std::string>{"hipEventSynchronize", "hipGraphExecDestroy", "hipGraphDestroy",
                                                      "hipFree", "hipModuleUnload"}))
      << text(calls);
  if (calls.size() == 5) {
    EXPECT_EQ(calls[0]["event"], first(run, "hipEventRecord")["event"]);
    EXPECT_EQ(calls[1]["exec"], first(load, "hipGraphInstantiate")["exec"]);
    EXPECT_EQ(calls[2]["graph"], first(load, "hipGraphCreate")["graph"]);
    EXPECT_EQ(parse_hex(calls[3]["ptr"]), arena_of(load, p.c));
    EXPECT_EQ(calls[4]["module"], first(load, "hipModuleLoadData")["module"]);
  }
}

}  // namespace
}  // namespace kiln

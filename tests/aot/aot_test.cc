// Ahead-of-time on the device the test runs on (KILN_DEVICE): an exported model compiled into a
// .kiln artifact and loaded compiles nothing, gives the JIT's results bit for bit (and so the
// reference interpreter's within tolerance), replays with fresh outputs, and does the same in a
// fresh kilnc process. Any device will do (the GPU bundle has no CPU backend); with none
// available the tests skip.
#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "aot/aot_fixture.h"
#include "frontend/lazy.h"
#include "runtime/registry.h"
#include "testing/control_graphs.h"
#include "testing/error_of.h"
#include "testing/reference.h"
#include "tools/kilnc/npy.h"

namespace kiln::testing {
namespace {

TEST(Aot, LoadCompilesNothingAndMatchesJitAndReference) {
  KILN_AOT_REQUIRE_DEVICE();
  for (const Example& e : examples()) {
    SCOPED_TRACE(e.name);
    std::string path = scratch_dir(e.name) + "/model.kiln";
    compile_to(e, default_device().name(), path);
    reset_stats();
    Model m = load(path);
    std::vector<Tensor> got = m(e.inputs);
    bytes_of(got[0]);
    EXPECT_EQ(stats().kernels_compiled, 0);
    EXPECT_EQ(stats().kernel_disk_cache_hits, 0);
    EXPECT_EQ(stats().executables_built, 0);
    EXPECT_EQ(m.target(), default_device().name());
    std::vector<Tensor> want = e.fn(e.inputs);
    EXPECT_MATCHES_REFERENCE(want);
    EXPECT_EQ(bytes_of(got[0]), bytes_of(want[0]));
    EXPECT_EQ(bytes_of(got[0]), bytes_of(Jit(e.fn)(e.inputs)[0]));
  }
}

TEST(Aot, ReplaysWithFreshOutputsAndNamedInputs) {
  KILN_AOT_REQUIRE_DEVICE();
  Example e = examples()[0];
  std::string path = scratch_dir("mlp") + "/mlp.kiln";
  compile_to(e, default_device().name(), path);
  Model m = load(path);
  ASSERT_EQ(m.inputs().size(), 3u);
  EXPECT_EQ(m.inputs()[0].name, "x");
  EXPECT_EQ(m.outputs()[0].name, "probs");
  EXPECT_EQ(m.outputs()[0].shape, (Shape{8, 10}));
  Tensor first = m(e.inputs)[0];
  std::string first_bytes = bytes_of(first);
  std::vector<Tensor> other = e.inputs;
  other[0] = random_tensor({8, 16}, float32, 99);
  Tensor second = m({{"w2", other[2]}, {"x", other[0]}, {"b", other[1]}})[0];
  // A braced list of tensors is positional.
  EXPECT_EQ(bytes_of(m({other[0], other[1], other[2]})[0]), bytes_of(second));
  EXPECT_NE(detail::node_of(first)->buffer, detail::node_of(second)->buffer);
  EXPECT_EQ(bytes_of(first), first_bytes) << "a later call overwrote an earlier result";
  EXPECT_EQ(bytes_of(second), bytes_of(e.fn(other)[0]));
}

TEST(Aot, FreshKilncProcessCompilesNothing) {
  KILN_AOT_REQUIRE_DEVICE();
  for (const Example& e : examples()) {
    SCOPED_TRACE(e.name);
    std::string dir = scratch_dir(e.name);
    compile_to(e, default_device().name(), dir + "/model.kiln");
    std::string args = dir + "/model.kiln --output-dir " + dir + "/out --device " + default_device().name();
    for (size_t i = 0; i < e.inputs.size(); ++i) {
      std::string npy = dir + "/" + e.names.inputs[i] + ".npy";
      ASSERT_TRUE(kilnc::write_npy(npy, {e.inputs[i].dtype(), e.inputs[i].shape(), bytes_of(e.inputs[i])}).ok());
      args += " --input " + e.names.inputs[i] + "=" + npy;
    }
    std::string out;
    ASSERT_EQ(run_kilnc("run " + args, &out), 0) << out;
    EXPECT_NE(out.find("kernels_compiled=0 kernel_disk_cache_hits=0"), std::string::npos) << out;
    EXPECT_NE(out.find("executables_built=0"), std::string::npos) << out;
    auto written = kilnc::read_npy(dir + "/out/probs.npy");
    ASSERT_TRUE(written.ok()) << written.status();
    EXPECT_EQ(written->data, bytes_of(load(dir + "/model.kiln")(e.inputs)[0]));
  }
}

// A section for another device of the same backend is skipped; the one that fits is loaded.
TEST(Aot, PicksTheSectionThatFits) {
  KILN_AOT_REQUIRE_DEVICE();
  Example e = examples()[1];
  std::string dir = scratch_dir("profiles");
  std::string name = default_device().name();
  std::string other = name == "cpu" ? "cuda:sm_90" : name == "vulkan" ? "vulkan:nvidia-sm90" : "vulkan:lavapipe";
  try {
    compile_to(e, other + "," + name, dir + "/m.kiln");
  } catch (const Error& err) {
    GTEST_SKIP() << "this build cannot compile " << other << ": " << err.what();
  }
  Model m = load(dir + "/m.kiln");
  EXPECT_EQ(m.target(), name);
  EXPECT_EQ(bytes_of(m(e.inputs)[0]), bytes_of(e.fn(e.inputs)[0]));
}

// An artifact holding only a section for another target of this backend: the error lists what
// the artifact has and what the device needs.
TEST(Aot, WrongProfileIsAClearError) {
  KILN_AOT_REQUIRE_DEVICE();
  Example e = examples()[1];
  std::string dir = scratch_dir("wrong");
  std::string name = default_device().name();
  if (name == "cpu") {
    // x86-64-v4 needs AVX-512: only a CPU without it refuses the section.
    compile_to(e, "cpu:x86-64-v4", dir + "/m.kiln");
    std::string err = error_of([&] { load(dir + "/m.kiln"); });
    if (err == "no error") GTEST_SKIP() << "this CPU has AVX-512, so cpu:x86-64-v4 fits it";
    EXPECT_NE(err.find("cpu:x86-64-v4 ["), std::string::npos) << err;
    EXPECT_NE(err.find("+avx512f"), std::string::npos) << err;
    return;
  }
  if (name == "cuda") {
    // A newer architecture than any GPU here: neither its cubin nor its PTX runs.
    compile_to(e, "cuda:sm_120", dir + "/m.kiln");
    std::string err = error_of([&] { load(dir + "/m.kiln"); });
    if (err == "no error") GTEST_SKIP() << "this GPU is sm_120 or newer";
    EXPECT_NE(err.find("the artifact has cuda:sm_120 [sm_120]; the device needs cuda [sm_"), std::string::npos) << err;
    EXPECT_NE(err.find("PTX runs only on its architecture and later ones"), std::string::npos) << err;
    return;
  }
  // Vulkan: an H100/H200 fits vulkan:nvidia-sm90; lavapipe (and most other GPUs) do not.
  compile_to(e, "vulkan:nvidia-sm90", dir + "/m.kiln");
  std::string err = error_of([&] { load(dir + "/m.kiln"); });
  if (err == "no error") {
    compile_to(e, "vulkan:lavapipe", dir + "/m.kiln");
    err = error_of([&] { load(dir + "/m.kiln"); });
    EXPECT_NE(err.find("the artifact has vulkan:lavapipe ["), std::string::npos) << err;
  } else {
    EXPECT_NE(err.find("the artifact has vulkan:nvidia-sm90 [SPIR-V 1.6, subgroup 32"), std::string::npos) << err;
  }
  EXPECT_NE(err.find("the device needs vulkan ["), std::string::npos) << err;
}

// HIP sections compile on a machine without an AMD GPU (comgr needs none): the artifact holds a
// code object for each gfx processor asked for, beside this device's own section, which loads.
TEST(Aot, HipSectionsCompileWithoutAnAmdGpu) {
  KILN_AOT_REQUIRE_DEVICE();
  if (!runtime::target_profile("hip", "gfx90a").ok()) GTEST_SKIP() << "this build has no HIP compiler (comgr)";
  Example e = examples()[1];
  std::string dir = scratch_dir("hip");
  std::string name = default_device().name();
  artifact::Artifact a = compile_to(e, "hip:gfx90a|gfx908," + name, dir + "/m.kiln");
  int hip = 0;
  for (const artifact::TargetSection& t : a.targets) {
    if (t.backend != "hip") continue;
    ++hip;
    EXPECT_EQ(t.program.backend, "hip");
    EXPECT_EQ(t.program.target_key, t.profile);
    EXPECT_EQ(t.program.module.substr(0, 4), std::string("\x7f" "ELF")) << t.profile;
    EXPECT_FALSE(t.program.kernels.empty());
  }
  EXPECT_EQ(hip, 2);
  Model m = load(dir + "/m.kiln");
  EXPECT_EQ(m.target(), name);
  EXPECT_EQ(bytes_of(m(e.inputs)[0]), bytes_of(e.fn(e.inputs)[0]));
}

// Metal sections compile on any machine (the MSL is compiled by the device at load): the artifact
// holds one MSL module per Apple GPU profile asked for, beside this device's own section, which
// loads; kilnc inspect lists them.
TEST(Aot, MetalSectionsCompileWithoutAMac) {
  KILN_AOT_REQUIRE_DEVICE();
  Example e = examples()[1];
  std::string dir = scratch_dir("metal");
  std::string name = default_device().name();
  artifact::Artifact a = compile_to(e, "metal:m1|m3-max," + name, dir + "/m.kiln");
  int metal = 0;
  for (const artifact::TargetSection& t : a.targets) {
    if (t.backend != "metal") continue;
    ++metal;
    EXPECT_EQ(t.program.backend, "metal");
    EXPECT_EQ(t.program.target_key, "msl3.0-simd32");
    EXPECT_EQ(t.program.module.rfind("#include <metal_stdlib>", 0), 0u) << t.profile;
    ASSERT_FALSE(t.program.kernels.empty());
    EXPECT_NE(t.program.module.find("kernel void " + t.program.entry(0) + "("), std::string::npos) << t.profile;
  }
  EXPECT_EQ(metal, 2);
  Model m = load(dir + "/m.kiln");
  EXPECT_EQ(m.target(), name);
  EXPECT_EQ(bytes_of(m(e.inputs)[0]), bytes_of(e.fn(e.inputs)[0]));
  std::string out;
  ASSERT_EQ(run_kilnc("inspect " + dir + "/m.kiln", &out), 0) << out;
  EXPECT_NE(out.find("metal:m3-max"), std::string::npos) << out;
}

// Constants in a weights file beside the artifact: the artifact holds code only, loading finds
// the weights, recompiling with the same weights leaves the file as it was, and a missing or
// different weights file is a clear error.
TEST(Aot, WeightsFileBesideTheArtifact) {
  KILN_AOT_REQUIRE_DEVICE();
  Example e = examples()[0];  // the MLP: w1 is captured, a constant
  std::string dir = scratch_dir("weights");
  artifact::Artifact art = compile_to(e, default_device().name(), dir + "/inline.kiln");
  ASSERT_GT(art.constants_bytes, 0u);
  art.weights_file = "mlp.weights";
  ASSERT_TRUE(artifact::write_file(dir + "/mlp.kiln", art).ok());
  namespace fs = std::filesystem;
  EXPECT_EQ(fs::file_size(dir + "/mlp.kiln") + art.constants_bytes, fs::file_size(dir + "/inline.kiln") + 8 + 16 +
                                                                          art.weights_file.size());
  EXPECT_EQ(fs::file_size(dir + "/mlp.weights"), art.constants_bytes + 24);
  Model m = load(dir + "/mlp.kiln");
  EXPECT_EQ(bytes_of(m(e.inputs)[0]), bytes_of(load(dir + "/inline.kiln")(e.inputs)[0]));
  std::string out;
  ASSERT_EQ(run_kilnc("inspect " + dir + "/mlp.kiln", &out), 0) << out;
  EXPECT_NE(out.find("in the weights file mlp.weights beside it"), std::string::npos) << out;

  // Recompiling the code: the weights file is not rewritten.
  auto stamp = fs::last_write_time(dir + "/mlp.weights");
  fs::last_write_time(dir + "/mlp.weights", stamp - std::chrono::hours(1));
  stamp = fs::last_write_time(dir + "/mlp.weights");
  ASSERT_TRUE(artifact::write_file(dir + "/mlp.kiln", art).ok());
  EXPECT_EQ(fs::last_write_time(dir + "/mlp.weights"), stamp);

  // Other weights under the same name: an error naming the file.
  artifact::Artifact other = art;
  other.graph.constants[0].bytes[0] ^= 1;
  other.weights_file = "other.weights";
  ASSERT_TRUE(artifact::write_file(dir + "/other.kiln", other).ok());
  fs::copy_file(dir + "/other.weights", dir + "/mlp.weights", fs::copy_options::overwrite_existing);
  std::string err = error_of([&] { load(dir + "/mlp.kiln"); });
  EXPECT_NE(err.find("weights file mlp.weights holds other weights"), std::string::npos) << err;
  fs::remove(dir + "/mlp.weights");
  err = error_of([&] { load(dir + "/mlp.kiln"); });
  EXPECT_NE(err.find("its weights file " + dir + "/mlp.weights cannot be opened"), std::string::npos) << err;
  art.weights_file = "sub/dir.weights";
  EXPECT_FALSE(artifact::write_file(dir + "/bad.kiln", art).ok());
}

// A section for an older GPU than the device loads through its PTX (the driver compiles it,
// kiln compiles nothing) and computes what the JIT computes; a section for the device's own
// architecture is preferred when the artifact has both.
TEST(Aot, OlderCudaSectionRunsThroughItsPtx) {
  KILN_AOT_REQUIRE_DEVICE();
  if (default_device().name() != "cuda") GTEST_SKIP() << "cuda only";
  Example e = examples()[0];
  std::string dir = scratch_dir("ptx");
  compile_to(e, "cuda:sm_75", dir + "/old.kiln");
  reset_stats();
  std::string err = error_of([&] {
    Model m = load(dir + "/old.kiln");
    std::vector<Tensor> got = m(e.inputs);
    EXPECT_EQ(stats().kernels_compiled, 0);
    EXPECT_EQ(m.target(), "cuda:sm_75");
    std::vector<float> a = got[0].to_vector<float>(), b = e.fn(e.inputs)[0].to_vector<float>();
    ASSERT_EQ(a.size(), b.size());
    for (size_t i = 0; i < a.size(); ++i) EXPECT_NEAR(a[i], b[i], 1e-5 + 1e-5 * std::fabs(b[i])) << i;
  });
  EXPECT_EQ(err, "no error");
  compile_to(e, "cuda:sm_75|" + std::string(default_device().description().find("sm_90") != std::string::npos ? "sm_90" : "sm_80"),
             dir + "/both.kiln");
  Model both = load(dir + "/both.kiln");
  if (default_device().description().find("sm_90") != std::string::npos) {
    EXPECT_EQ(both.target(), "cuda:sm_90");
  }
}

// The named CPU level loads on any CPU with its features (every x86-64 CPU kiln runs on has v2)
// and computes what the JIT computes, within rounding (other instructions may be chosen).
TEST(Aot, CpuProfileLoadsOnACpuWithItsFeatures) {
  KILN_AOT_REQUIRE_DEVICE();
  if (default_device().name() != "cpu") GTEST_SKIP() << "cpu only";
#if !defined(__x86_64__)
  GTEST_SKIP() << "the profiles are x86-64 levels";
#endif
  Example e = examples()[0];
  std::string path = scratch_dir("v2") + "/m.kiln";
  compile_to(e, "cpu:x86-64-v2", path);
  Model m = load(path);
  EXPECT_EQ(m.target(), "cpu:x86-64-v2");
  std::vector<float> got = m(e.inputs)[0].to_vector<float>(), want = e.fn(e.inputs)[0].to_vector<float>();
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-5 + 1e-5 * std::abs(want[i])) << i;
}

// kilnc inspect tells which kernels are twins (ir/kernel_twins.h) and whose function they call:
// three identical layers are one CPU function.
TEST(Aot, InspectShowsTwins) {
  std::string dir = scratch_dir("twins");
  std::string ir = "graph {\n  %0 = input 0 : f32[32,64]\n";
  for (int l = 0; l < 3; ++l)
    ir += absl::StrCat("  %", 3 * l + 1, " = input ", l + 1, " : f32[64,64]\n  %", 3 * l + 2, " = dot %", 3 * l, ", %",
                       3 * l + 1, " : f32[32,64]\n  %", 3 * l + 3, " = tanh %", 3 * l + 2, " : f32[32,64]\n");
  ir += "  output %9\n}\n";
  std::ofstream(dir + "/stack.ir") << ir;
  std::string out;
  ASSERT_EQ(run_kilnc("compile " + dir + "/stack.ir -o " + dir + "/stack.kiln --target cpu:x86-64-v2", &out), 0) << out;
  ASSERT_EQ(run_kilnc("inspect " + dir + "/stack.kiln", &out), 0) << out;
  EXPECT_NE(out.find("kernels: 3 (3 steps; 1 function: the others are twins, calling a family's function)"), std::string::npos)
      << out;
  EXPECT_NE(out.find("kiln_k1_dot_tanh: calls kiln_k0_dot_tanh;"), std::string::npos) << out;
  EXPECT_NE(out.find("kiln_k2_dot_tanh: calls kiln_k0_dot_tanh;"), std::string::npos) << out;
}

// A graph with a device loop compiles ahead of time like any other: inspect counts the loop, and
// the loaded model runs it (x = 2x + w while sum(x) < 100).
TEST(Aot, LoopsCompileAheadOfTime) {
  std::string dir = scratch_dir("loop");
  std::ofstream(dir + "/loop.ir") << kDoublingLoop;
  std::string out;
  ASSERT_EQ(run_kilnc("compile " + dir + "/loop.ir -o " + dir + "/loop.kiln --target cpu:x86-64-v2", &out), 0) << out;
  ASSERT_EQ(run_kilnc("inspect " + dir + "/loop.kiln", &out), 0) << out;
  EXPECT_NE(out.find("; 1 loop and 0 branches run on the device"), std::string::npos) << out;
#if defined(__x86_64__)
  auto cpu = Device::get("cpu");
  if (!cpu.ok()) GTEST_SKIP() << cpu.status();
  Model m = load(dir + "/loop.kiln", *cpu);
  std::vector<float> got =
      m({from_vector<float>({1, 1, 1, 1}, {4}, *cpu), from_vector<float>({0, 1, 0, 1}, {4}, *cpu)})[0].to_vector<float>();
  EXPECT_EQ(got, (std::vector<float>{32, 63, 32, 63}));
#endif
}

}  // namespace
}  // namespace kiln::testing

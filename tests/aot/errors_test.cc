// What a user sees when an artifact, its inputs or kilnc's inputs are wrong: an error naming the
// problem, never a crash or a silent fallback. The artifacts are compiled for, and loaded on, the
// default device (KILN_DEVICE: cpu under ctest, cuda in the GPU bundle); with no device available
// the tests that need one skip.
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "aot/aot_fixture.h"
#include "artifact/targets.h"
#include "runtime/registry.h"
#include "testing/error_of.h"
#include "testing/reference.h"
#include "tools/kilnc/npy.h"

namespace kiln::testing {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}
void spit(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

// The device the artifacts are for: its name is also their one target's.
std::string here() { return default_device().name(); }

// A valid artifact of the softmax example for this device, as bytes, and where it was written.
std::string softmax_artifact(std::string* path) {
  *path = scratch_dir("m") + "/m.kiln";
  compile_to(examples()[1], here(), *path);
  return slurp(*path);
}

TEST(AotErrors, SameInputsGiveTheSameBytes) {
  KILN_AOT_REQUIRE_DEVICE();
  std::string p1, p2 = scratch_dir("again") + "/again.kiln";
  std::string first = softmax_artifact(&p1);
  compile_to(examples()[1], here(), p2);
  EXPECT_EQ(first, slurp(p2));
}

TEST(AotErrors, DamagedArtifacts) {
  KILN_AOT_REQUIRE_DEVICE();
  std::string path;
  std::string good = softmax_artifact(&path);
  spit(path, good.substr(0, good.size() / 2));
  EXPECT_NE(error_of([&] { load(path); }).find("truncated"), std::string::npos) << error_of([&] { load(path); });

  std::string flipped = good;
  flipped[flipped.size() - 100] ^= 0x40;  // inside the target section's program (the last section)
  spit(path, flipped);
  EXPECT_NE(error_of([&] { load(path); }).find("section '" + here() + "' is corrupted (its checksum does not match)"), std::string::npos)
      << error_of([&] { load(path); });

  std::string version = good;
  version[8] = 99;  // the u32 format version after the 8-byte magic
  spit(path, version);
  std::string err = error_of([&] { load(path); });
  EXPECT_NE(err.find("format version 99 (written by kiln 0.1.0); this kiln (0.1.0) reads version 3"), std::string::npos) << err;

  spit(path, "graph {\n}\n");
  EXPECT_NE(error_of([&] { load(path); }).find("not a .kiln file"), std::string::npos);
  EXPECT_NE(error_of([&] { load(path + ".missing"); }).find("cannot open"), std::string::npos);
}

// An artifact for another backend only (cuda:sm_90; on a CUDA device, vulkan:nvidia-sm90).
TEST(AotErrors, MissingTargetListsWhatTheArtifactHasAndTheDeviceNeeds) {
  KILN_AOT_REQUIRE_DEVICE();
  std::string path = scratch_dir("other") + "/other.kiln";
  bool on_cuda = here() == "cuda";
  std::string other = on_cuda ? "vulkan:nvidia-sm90" : "cuda:sm_90";
  try {
    compile_to(examples()[1], other, path);
  } catch (const Error& e) {
    GTEST_SKIP() << "this build cannot compile " << other << ": " << e.what();
  }
  std::string err = error_of([&] { load(path, Device(here())); });
  EXPECT_NE(err.find("no section of the artifact fits the " + here() + " device"), std::string::npos) << err;
  EXPECT_NE(err.find(on_cuda ? "the artifact has vulkan:nvidia-sm90 [SPIR-V 1.6, subgroup 32" : "the artifact has cuda:sm_90 [sm_90]"),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("the device needs " + here() + (here() == "cpu" ? " [x86_64" : " [")), std::string::npos) << err;
}

// The CUDA section is made without a GPU (NVRTC) and holds a cubin: an ELF file for EM_CUDA.
TEST(AotErrors, CudaSectionIsACubinMadeWithoutAGpu) {
  KILN_AOT_REQUIRE_DEVICE();  // the example's tensors live on a device
  std::string path = scratch_dir("cubin") + "/m.kiln";
  try {
    compile_to(examples()[0], "cuda:sm_80|sm_90", path);
  } catch (const Error& e) {
    GTEST_SKIP() << "no CUDA compiler in this build: " << e.what();
  }
  auto art = artifact::read_file(path);
  ASSERT_TRUE(art.ok()) << art.status();
  ASSERT_EQ(art->targets.size(), 2u);
  for (const artifact::TargetSection& t : art->targets) {
    const std::string& cubin = t.program.module;
    ASSERT_GT(cubin.size(), 64u);
    EXPECT_EQ(cubin.substr(0, 4), "\x7f" "ELF");
    EXPECT_EQ(uint8_t(cubin[18]) | uint8_t(cubin[19]) << 8, 190) << "e_machine is not EM_CUDA";
    EXPECT_EQ(t.target_key, t.profile);
    EXPECT_GE(t.program.kernels.size(), 2u);
    for (const runtime::CompiledKernel& k : t.program.kernels) EXPECT_NE(cubin.find(k.name), std::string::npos) << k.name;
    // PTX for newer GPUs (the driver compiles it where no cubin fits).
    EXPECT_NE(t.program.portable_module.find(".target " + t.profile), std::string::npos) << t.label();
  }
  std::string out;
  EXPECT_EQ(run_kilnc("inspect " + path, &out), 0) << out;
  EXPECT_NE(out.find("cuda:sm_90\n    key: sm_90"), std::string::npos) << out;
  EXPECT_NE(out.find("bytes of PTX for newer GPUs"), std::string::npos) << out;
}

TEST(AotErrors, InputsMustMatchTheSignature) {
  KILN_AOT_REQUIRE_DEVICE();
  Example e = examples()[0];
  std::string path = scratch_dir("mlp") + "/mlp.kiln";
  compile_to(e, here(), path);
  Model m = load(path, Device(here()));
  EXPECT_NE(error_of([&] { m({e.inputs[0]}); }).find("the model takes 3 inputs, got 1"), std::string::npos);
  std::vector<Tensor> wrong = e.inputs;
  wrong[0] = random_tensor({4, 16}, float32, 5);
  EXPECT_NE(error_of([&] { m(wrong); }).find("input 'x' is f32[4,16]; the model takes f32[8,16]"), std::string::npos)
      << error_of([&] { m(wrong); });
  wrong[0] = random_tensor({8, 16}, float64, 5);
  EXPECT_NE(error_of([&] { m(wrong); }).find("input 'x' is f64[8,16]"), std::string::npos);
  EXPECT_NE(error_of([&] { m({{"x", e.inputs[0]}, {"bias", e.inputs[1]}, {"w2", e.inputs[2]}}); })
                .find("the model has no input named 'bias' (its inputs: x, b, w2)"),
            std::string::npos);
  EXPECT_NE(error_of([&] { m({{"x", e.inputs[0]}, {"w2", e.inputs[2]}}); }).find("the input 'b' is missing"), std::string::npos);
  EXPECT_NE(error_of([] { Model()(std::vector<Tensor>{}); }).find("not loaded"), std::string::npos);
}

TEST(AotErrors, TargetsAreCheckedByName) {
  auto hip = artifact::parse_targets("cpu,hip:gfx90a");
  if (runtime::target_profile("hip", "gfx90a").ok()) {  // built with comgr: HIP targets compile
    ASSERT_TRUE(hip.ok()) << hip.status();
    EXPECT_EQ((*hip)[1].label(), "hip:gfx90a");
  } else {
    EXPECT_EQ(hip.status().code(), absl::StatusCode::kUnimplemented);
    EXPECT_NE(hip.status().message().find("libamd-comgr-dev"), std::string::npos) << hip.status();
  }
  // Metal compiles anywhere for a named chip; without one it means this machine's Metal device.
  auto metal = artifact::parse_targets("metal:m3-max");
  ASSERT_TRUE(metal.ok()) << metal.status();
  auto m3 = artifact::resolve((*metal)[0]);
  ASSERT_TRUE(m3.ok()) << m3.status();
  EXPECT_EQ(m3->parallelism, 40);
  if (!runtime::get_device("metal").ok()) {
    auto here = artifact::resolve({"metal", ""});
    EXPECT_NE(here.status().message().find("name a profile instead, known: m1, m1-max, m2"), std::string::npos) << here.status();
  }
  EXPECT_NE(artifact::parse_targets("tpu").status().message().find("unknown target backend 'tpu'"), std::string::npos);
  EXPECT_NE(artifact::parse_targets("cpu:pentium").ok(), false);  // parsed; resolving it fails:
  auto resolved = artifact::resolve({"cpu", "pentium"});
  if (runtime::get_device("cpu").ok()) {
    EXPECT_NE(resolved.status().message().find("known: x86-64, x86-64-v2, x86-64-v3, x86-64-v4"), std::string::npos);
  } else {
    EXPECT_NE(resolved.status().message().find("no CPU backend"), std::string::npos) << resolved.status();
  }
  EXPECT_NE(artifact::parse_targets("cpu,cpu").status().message().find("listed twice"), std::string::npos);
  std::string out;
  std::string onnx = scratch_dir("onnx") + "/m.onnx";
  spit(onnx, "not really onnx");
  EXPECT_EQ(run_kilnc("compile " + onnx + " -o x.kiln --target cpu", &out), 1);
  EXPECT_NE(out.find("m.onnx: not an ONNX model"), std::string::npos) << out;
}

TEST(AotErrors, MalformedNpy) {
  kilnc::NpyArray a{DType::kFloat32, {2, 3}, std::string(24, '\1')};
  std::string good = kilnc::format_npy(a);
  auto back = kilnc::parse_npy(good, "a.npy");
  ASSERT_TRUE(back.ok()) << back.status();
  EXPECT_EQ(back->shape, a.shape);
  EXPECT_EQ(back->data, a.data);
  EXPECT_NE(good.find("'shape': (2, 3), }"), std::string::npos);
  EXPECT_EQ((good.size() - 24) % 64, 0u);
  auto err = [](const std::string& bytes) { return std::string(kilnc::parse_npy(bytes, "b.npy").status().message()); };
  EXPECT_EQ(err("hello"), "b.npy: not a .npy file (no \\x93NUMPY magic)");
  EXPECT_NE(err(good.substr(0, good.size() - 4)).find("holds 20 data bytes; f32[2,3] needs 24"), std::string::npos);
  std::string big = good;
  big.replace(big.find("<f4"), 3, ">f4");
  EXPECT_NE(err(big).find("big-endian data ('>f4') is not supported"), std::string::npos) << err(big);
  std::string fortran = good;
  fortran.replace(fortran.find("False"), 5, "True ");
  EXPECT_NE(err(fortran).find("Fortran-order data is not supported"), std::string::npos) << err(fortran);
  std::string complex = good;
  complex.replace(complex.find("<f4"), 3, "<c8");
  EXPECT_NE(err(complex).find("dtype '<c8' is not one kiln has"), std::string::npos);
  std::string shape = good;
  shape.replace(shape.find("(2, 3)"), 6, "(2, x)");
  EXPECT_NE(err(shape).find("has a dimension that is not a non-negative integer"), std::string::npos);
  EXPECT_NE(err(good.substr(0, 12)).find("truncated header"), std::string::npos);

  // Through kilnc run: the file and the problem are named.
  KILN_AOT_REQUIRE_DEVICE();
  std::string dir = scratch_dir("npy");
  Example e = examples()[1];
  compile_to(e, here(), dir + "/m.kiln");
  spit(dir + "/bad.npy", big);
  std::string out;
  EXPECT_EQ(run_kilnc("run " + dir + "/m.kiln --device " + here() + " --input logits=" + dir + "/bad.npy", &out), 1);
  EXPECT_NE(out.find("bad.npy: big-endian data"), std::string::npos) << out;
  spit(dir + "/small.npy", good);
  EXPECT_EQ(run_kilnc("run " + dir + "/m.kiln --device " + here() + " --input logits=" + dir + "/small.npy", &out), 1);
  EXPECT_NE(out.find("input 'logits' is f32[2,3]; the model takes f32[64,100]"), std::string::npos) << out;
}

TEST(AotErrors, SignatureText) {
  KILN_AOT_REQUIRE_DEVICE();  // export_graph's tensors live on a device
  auto dup = ir::parse_exported("signature {\n  input x : f32[2]\n  input x : f32[2]\n  output y : f32[2]\n}\n"
                                "graph {\n  %0 = input 0 : f32[2]\n  %1 = input 1 : f32[2]\n  %2 = add %0, %1 : f32[2]\n  output %2\n}\n");
  EXPECT_NE(dup.status().message().find("the name 'x' appears twice"), std::string::npos) << dup.status();
  auto type = ir::parse_exported("signature {\n  input x : f32[3]\n  output y : f32[2]\n}\n"
                                 "graph {\n  %0 = input 0 : f32[2]\n  output %0\n}\n");
  EXPECT_NE(type.status().message().find("input x is f32[3] but graph input 0 is f32[2]"), std::string::npos) << type.status();
  auto line = ir::parse_exported("signature {\n  output y : f32[2]\n}\ngraph {\n  %0 = inptu 0 : f32[2]\n  output %0\n}\n");
  EXPECT_NE(line.status().message().find("5:"), std::string::npos) << line.status();  // graph errors keep their line numbers

  // export_graph: unused arguments stay in the signature, captured tensors become constants.
  Tensor w = from_vector<float>({1, 2}, {2});
  std::string text = export_graph([w](const std::vector<Tensor>& in) { return std::vector<Tensor>{in[0] * w}; },
                                  {from_vector<float>({3, 4}, {2}), from_vector<float>({5}, {1})}, {{"a", "unused"}, {"y"}});
  EXPECT_NE(text.find("input a : f32[2]\n  input unused : f32[1] unused\n  constant : f32[2] base64="), std::string::npos) << text;
  auto parsed = ir::parse_exported(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(ir::print(*parsed), text);
  Tensor x = from_vector<float>({3, 4}, {2});
  EXPECT_NE(error_of([&] { export_graph([](const std::vector<Tensor>& in) { return in; }, {x, x}); }).find("are the same tensor"),
            std::string::npos);
}

// kilnc emit: each backend's own stage is its text (Metal's MSL module, HIP's disassembled code
// object, SPIR-V assembly, PTX), a stage asked of another backend's target is refused by name,
// and an unknown stage lists the stages.
TEST(KilncEmit, EachBackendsStage) {
  const std::string dir = scratch_dir("emit");
  std::ofstream(dir + "/g.ir") << "graph {\n  %0 = input 0 : f32[64,48]\n  %1 = exp %0 : f32[64,48]\n  %2 = reduce_sum %1 axes=[1] : f32[64,1]\n"
                                  "  output %2\n}\n";
  struct Stage {
    const char* args;
    const char* text;
    bool available;
  };
  const Stage stages[] = {
      {"--stage msl", "kernel void kiln_k0", true},
      {"--stage source --target metal:m4", "kiln_k0_reduce_sum on metal (msl3.0-simd32)", true},
      {"--stage hsaco-asm", "s_endpgm", runtime::target_profile("hip", "gfx90a").ok()},
      {"--stage spirv-asm", "OpEntryPoint GLCompute", runtime::target_profile("vulkan", "lavapipe").ok()},
      {"--stage ptx", ".entry kiln_k0", runtime::target_profile("cuda", "sm_90").ok()},
  };
  for (const Stage& s : stages) {
    if (!s.available) continue;
    std::string out;
    EXPECT_EQ(run_kilnc(absl::StrCat("emit ", s.args, " ", dir, "/g.ir"), &out), 0) << s.args << ": " << out.substr(0, 2000);
    EXPECT_NE(out.find(s.text), std::string::npos) << s.args << ": " << out.substr(0, 2000);
  }
  std::string out;
  EXPECT_NE(run_kilnc(absl::StrCat("emit --stage msl --target cuda:sm_90 ", dir, "/g.ir"), &out), 0);
  EXPECT_NE(out.find("msl needs a metal target"), std::string::npos) << out;
  EXPECT_NE(run_kilnc(absl::StrCat("emit --stage sass ", dir, "/g.ir"), &out), 0);
  EXPECT_NE(out.find("one of graph, simplified, fused, program, source, ptx, spirv-asm, hsaco-asm, msl"), std::string::npos) << out;
}

}  // namespace
}  // namespace kiln::testing

// Errors are statuses: out of memory, bad GLSL, bad launch shapes, malformed programs (caught at
// load by check_consistent); the device keeps working.
#include <gtest/gtest.h>

#include "vulkan/vulkan_fixture.h"

namespace kiln::vktest {
namespace {

using ErrorsTest = VulkanTest;

void expect_working(runtime::Device* d) {
  ProgramBuilder b;
  int in = b.input(64), out = b.output(64);
  b.map("plus_seven", 64, out, {in}, "x0 + 7.0", {});
  auto exe = compile_and_load(d, b.program(), b.rendered());
  ASSERT_TRUE(exe.ok()) << exe.status();
  auto x = upload(d, iota_floats(64, 0));
  auto o = d->alloc(256);
  ASSERT_TRUE(o.ok());
  ASSERT_TRUE((*exe)->run({x.get()}, {o->get()}, {}).ok());
  std::vector<float> r = download(d, o->get(), 64);
  for (int i = 0; i < 64; ++i) ASSERT_EQ(r[i], float(i + 7));
}

TEST_F(ErrorsTest, OutOfMemoryBufferIsResourceExhaustedAndTheDeviceGoesOn) {
  auto huge = dev_->alloc(int64_t(1) << 50);
  ASSERT_FALSE(huge.ok());
  EXPECT_EQ(huge.status().code(), absl::StatusCode::kResourceExhausted) << huge.status();
  EXPECT_NE(huge.status().message().find("1125899906842624 bytes"), std::string::npos) << huge.status();
  expect_working(dev_.get());
}

TEST_F(ErrorsTest, OutOfMemoryArenaIsResourceExhaustedAndTheDeviceGoesOn) {
  ProgramBuilder b;
  int in = b.input(64), out = b.output(64);
  b.map("copy", 64, out, {in}, "x0", {});
  b.program().arena_bytes = int64_t(1) << 50;
  auto exe = compile_and_load(dev_.get(), b.program(), b.rendered());
  ASSERT_FALSE(exe.ok());
  EXPECT_EQ(exe.status().code(), absl::StatusCode::kResourceExhausted) << exe.status();
  EXPECT_NE(exe.status().message().find("arena"), std::string::npos) << exe.status();
  expect_working(dev_.get());
}

TEST_F(ErrorsTest, TensorsOverTwoToTheThirtyTwoElementsAreRejectedBeforeAnyWork) {
  // GLSL indexes with 32-bit integers: a larger tensor would wrap around, so it is an error.
  ProgramBuilder b;
  int in = b.input(64), out = b.output((int64_t(1) << 32) + 1);
  b.map("copy", 64, out, {in}, "x0", {});
  auto exe = make_compiler(dev_->target())->compile(b.program());
  ASSERT_FALSE(exe.ok());
  EXPECT_EQ(exe.status().code(), absl::StatusCode::kUnimplemented) << exe.status();
  EXPECT_NE(exe.status().message().find("4294967297 elements"), std::string::npos) << exe.status();
  EXPECT_NE(exe.status().message().find("limit of 2^32 elements"), std::string::npos) << exe.status();
  expect_working(dev_.get());
}

TEST_F(ErrorsTest, GlslErrorReportsTheLogAndTheSource) {
  ProgramBuilder b;
  int out = b.output(64);
  b.raw("broken", glsl_preamble() + "void main() { float x = undefined_thing; }\n", 1, {});
  (void)out;
  auto exe = compile_and_load(dev_.get(), b.program(), b.rendered());
  ASSERT_FALSE(exe.ok());
  const std::string m(exe.status().message());
  EXPECT_NE(m.find("kernel 'broken'"), std::string::npos) << m;
  EXPECT_NE(m.find("undefined_thing"), std::string::npos) << m;      // the compiler's log
  EXPECT_NE(m.find("--- GLSL source ---"), std::string::npos) << m;   // and the numbered source
  EXPECT_NE(m.find("1| #version 460"), std::string::npos) << m;
  expect_working(dev_.get());
}

TEST_F(ErrorsTest, LaunchShapesBeyondTheDeviceAreErrors) {
  ProgramBuilder b;
  int in = b.input(64), out = b.output(64);
  b.map("copy", 64, out, {in}, "x0", {});
  b.rendered().kernels[0].block[0] = 1 << 20;
  auto exe = compile_and_load(dev_.get(), b.program(), b.rendered());
  ASSERT_FALSE(exe.ok());
  EXPECT_NE(exe.status().message().find("workgroup of 1048576 invocations"), std::string::npos) << exe.status();
}

TEST_F(ErrorsTest, MalformedProgramsAreErrors) {
  ProgramBuilder b;
  int in = b.input(64), out = b.output(64);
  b.map("copy", 64, out, {in}, "x0", {});
  b.program().steps[0].deps = {3};
  auto exe = compile_and_load(dev_.get(), b.program(), b.rendered());
  ASSERT_FALSE(exe.ok());
  EXPECT_EQ(exe.status().code(), absl::StatusCode::kInvalidArgument);
  b.program().steps[0].deps = {};
  b.program().buffers[in].index = 5;  // input 5 of a 1-input program
  exe = compile_and_load(dev_.get(), b.program(), b.rendered());
  ASSERT_FALSE(exe.ok());
  EXPECT_NE(exe.status().message().find("input 5 of 1"), std::string::npos) << exe.status();
  b.program().buffers[in].index = 0;
  b.rendered().kernels.clear();
  exe = compile_and_load(dev_.get(), b.program(), b.rendered());
  ASSERT_FALSE(exe.ok());
  EXPECT_NE(exe.status().message().find("0 rendered kernels for a program of 1"), std::string::npos) << exe.status();
}

}  // namespace
}  // namespace kiln::vktest

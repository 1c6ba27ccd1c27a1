// The SPIR-V disk cache (hits, corrupt files) and the pipeline cache file.
#include <gtest/gtest.h>

#include <dirent.h>

#include <fstream>
#include <sstream>

#include "runtime/stats.h"
#include "vulkan/vulkan_fixture.h"

namespace kiln::vktest {
namespace {

using CacheTest = VulkanTest;

struct Two {
  Two() {
    int in = b.input(100), out = b.output(100), out2 = b.output(100);
    b.map("square", 100, out, {in}, "x0 * x0", {});
    b.map("negate", 100, out2, {in}, "-x0", {});
  }
  ProgramBuilder b;
};

void expect_runs(runtime::Device* d, runtime::Executable* e) {
  auto in = upload(d, iota_floats(100, 1));
  auto o = d->alloc(400), o2 = d->alloc(400);
  ASSERT_TRUE(o.ok() && o2.ok());
  ASSERT_TRUE(e->run({in.get()}, {o->get(), o2->get()}, {}).ok());
  std::vector<float> r = download(d, o->get(), 100), r2 = download(d, o2->get(), 100);
  for (int i = 0; i < 100; ++i) {
    ASSERT_EQ(r[i], float((i + 1) * (i + 1)));
    ASSERT_EQ(r2[i], -float(i + 1));
  }
}

std::vector<std::string> files_in(const std::string& dir) {
  std::vector<std::string> r;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d))
      if (e->d_name[0] != '.') r.push_back(e->d_name);
    closedir(d);
  }
  return r;
}

TEST_F(CacheTest, SecondCompileLoadsSpirvFromDisk) {
  Two t;
  runtime::Counters& c = runtime::counters();
  int64_t compiled0 = c.kernels_compiled, hits0 = c.kernel_disk_cache_hits;
  auto first = compile_and_load(dev_.get(), t.b.program(), t.b.rendered());
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(c.kernels_compiled - compiled0, 2);
  EXPECT_EQ(c.kernel_disk_cache_hits - hits0, 0);
  expect_runs(dev_.get(), first->get());

  // A new device on the same cache directory (a warm start) compiles nothing.
  std::string why;
  auto warm = make_device(cache_dir_, &why);
  ASSERT_NE(warm, nullptr) << why;
  compiled0 = c.kernels_compiled, hits0 = c.kernel_disk_cache_hits;
  auto second = compile_and_load(warm.get(), t.b.program(), t.b.rendered());
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(c.kernels_compiled - compiled0, 0);
  EXPECT_EQ(c.kernel_disk_cache_hits - hits0, 2);
  expect_runs(warm.get(), second->get());
  EXPECT_TRUE(warm->validation_messages().empty());
}

TEST_F(CacheTest, CorruptCacheFileIsDetectedAndRecompiled) {
  Two t;
  auto first = compile_and_load(dev_.get(), t.b.program(), t.b.rendered());
  ASSERT_TRUE(first.ok()) << first.status();
  std::string path = make_compiler(dev_->target())->cache_path(t.b.rendered().kernels[0].source);
  ASSERT_FALSE(path.empty());
  std::string bytes;
  {
    std::ifstream f(path, std::ios::binary);
    ASSERT_TRUE(f.good()) << path;
    std::stringstream ss;
    ss << f.rdbuf();
    bytes = ss.str();
  }
  ASSERT_GT(bytes.size(), 64u);
  bytes[bytes.size() - 7] ^= 0x5a;  // flip bits inside the SPIR-V payload
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(bytes.data(), std::streamsize(bytes.size()));

  runtime::Counters& c = runtime::counters();
  int64_t compiled0 = c.kernels_compiled, hits0 = c.kernel_disk_cache_hits;
  ::testing::internal::CaptureStderr();
  auto second = compile_and_load(dev_.get(), t.b.program(), t.b.rendered());
  std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(c.kernels_compiled - compiled0, 1);      // the corrupt one
  EXPECT_EQ(c.kernel_disk_cache_hits - hits0, 1);    // the intact one
  EXPECT_NE(err.find("corrupted kernel cache file " + path), std::string::npos) << err;
  EXPECT_NE(err.find("checksum mismatch"), std::string::npos) << err;
  size_t warnings = 0;
  for (size_t p = err.find("kiln:"); p != std::string::npos; p = err.find("kiln:", p + 1)) ++warnings;
  EXPECT_EQ(warnings, 1u) << err;
  expect_runs(dev_.get(), second->get());

  // The file was rewritten: the next compile hits both.
  compiled0 = c.kernels_compiled, hits0 = c.kernel_disk_cache_hits;
  auto third = compile_and_load(dev_.get(), t.b.program(), t.b.rendered());
  ASSERT_TRUE(third.ok()) << third.status();
  EXPECT_EQ(c.kernels_compiled - compiled0, 0);
  EXPECT_EQ(c.kernel_disk_cache_hits - hits0, 2);
}

TEST_F(CacheTest, TruncatedCacheFileIsDetected) {
  Two t;
  ASSERT_TRUE(compile_and_load(dev_.get(), t.b.program(), t.b.rendered()).ok());
  std::string path = make_compiler(dev_->target())->cache_path(t.b.rendered().kernels[1].source);
  std::ofstream(path, std::ios::binary | std::ios::trunc).write("KILNSPV1", 8);
  runtime::Counters& c = runtime::counters();
  int64_t compiled0 = c.kernels_compiled;
  ::testing::internal::CaptureStderr();
  auto again = compile_and_load(dev_.get(), t.b.program(), t.b.rendered());
  std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(c.kernels_compiled - compiled0, 1);
  EXPECT_NE(err.find("truncated"), std::string::npos) << err;
  expect_runs(dev_.get(), again->get());
}

TEST_F(CacheTest, PipelineCacheIsSavedUnderTheCacheDirectory) {
  Two t;
  ASSERT_TRUE(compile_and_load(dev_.get(), t.b.program(), t.b.rendered()).ok());
  // Two SPIR-V modules and the pipeline cache, nothing else (no temporary files left).
  std::vector<std::string> files = files_in(cache_dir_ + "/vulkan");
  EXPECT_EQ(files.size(), 3u);
  auto compiler = make_compiler(dev_->target());
  std::string path0 = compiler->cache_path(t.b.rendered().kernels[0].source);
  std::string path1 = compiler->cache_path(t.b.rendered().kernels[1].source);
  int others = 0;
  for (const std::string& f : files) others += cache_dir_ + "/vulkan/" + f != path0 && cache_dir_ + "/vulkan/" + f != path1;
  EXPECT_EQ(others, 1);
  // A device opened on this directory loads it without complaint.
  std::string why;
  ::testing::internal::CaptureStderr();
  auto warm = make_device(cache_dir_, &why);
  std::string err = ::testing::internal::GetCapturedStderr();
  ASSERT_NE(warm, nullptr) << why;
  EXPECT_EQ(err.find("corrupt pipeline cache"), std::string::npos) << err;
}

}  // namespace
}  // namespace kiln::vktest

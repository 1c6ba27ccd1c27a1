// The kernel binary cache on disk: round trips, keys, corruption, locations.
#include "runtime/disk_cache.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

namespace kiln::runtime {
namespace {

std::string fresh_dir(const std::string& name) {
  std::string d = ::testing::TempDir() + "/kiln_disk_cache_" + name + "_" + std::to_string(::getpid());
  std::filesystem::remove_all(d);
  return d;
}

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const std::string& path, const std::string& data) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << data;
}

TEST(DiskCache, RoundTripsBinaryBlobs) {
  DiskCache c(fresh_dir("roundtrip"));
  std::string blob("\0\1\2cubin\xff", 9);
  EXPECT_FALSE(c.get("key").has_value());
  c.put("key", blob);
  auto got = c.get("key");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, blob);
  EXPECT_FALSE(c.get("other key").has_value());
  c.put("key", "replaced");
  EXPECT_EQ(c.get("key").value_or(""), "replaced");
}

TEST(DiskCache, EmptyBlobIsStored) {
  DiskCache c(fresh_dir("empty"));
  c.put("k", "");
  auto got = c.get("k");
  ASSERT_TRUE(got.has_value());
  EXPECT_EQ(*got, "");
}

TEST(DiskCache, TruncatedFileIsIgnoredWithOneWarningAndRewritten) {
  DiskCache c(fresh_dir("truncated"));
  c.put("source v1", std::string(1000, 'x'));
  const std::string path = c.path_for("source v1");
  std::string data = read_file(path);
  write_file(path, data.substr(0, data.size() / 2));
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(c.get("source v1").has_value());
  EXPECT_FALSE(c.get("source v1").has_value());  // the second read does not warn again
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("ignoring corrupted kernel cache file"), std::string::npos) << err;
  EXPECT_EQ(err.find("ignoring", err.find("ignoring") + 1), std::string::npos) << "warned twice: " << err;
  c.put("source v1", std::string(1000, 'y'));
  EXPECT_EQ(c.get("source v1").value_or(""), std::string(1000, 'y'));
}

TEST(DiskCache, FlippedByteFailsTheChecksum) {
  DiskCache c(fresh_dir("flipped"));
  c.put("k", std::string(256, 'a'));
  const std::string path = c.path_for("k");
  std::string data = read_file(path);
  data[data.size() - 10] ^= 0x20;
  write_file(path, data);
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(c.get("k").has_value());
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("checksum"), std::string::npos) << err;
}

TEST(DiskCache, GarbageFileIsIgnored) {
  DiskCache c(fresh_dir("garbage"));
  c.put("k", "v");
  write_file(c.path_for("k"), "not a cache file at all, but long enough to hold a header......");
  ::testing::internal::CaptureStderr();
  EXPECT_FALSE(c.get("k").has_value());
  EXPECT_NE(::testing::internal::GetCapturedStderr().find("bad magic"), std::string::npos);
}

TEST(DiskCache, KeyIsComparedInFull) {
  // A file that a different key wrote under this key's name (a digest collision) is not used.
  DiskCache c(fresh_dir("collision"));
  c.put("key A", "blob A");
  std::filesystem::copy_file(c.path_for("key A"), c.path_for("key B"));
  EXPECT_FALSE(c.get("key B").has_value());
  EXPECT_EQ(c.get("key A").value_or(""), "blob A");
}

TEST(DiskCache, DisabledCacheStoresNothing) {
  DiskCache c("");
  EXPECT_FALSE(c.enabled());
  c.put("k", "v");
  EXPECT_FALSE(c.get("k").has_value());
}

TEST(DiskCache, UnwritableFolderDoesNotFail) {
  DiskCache c("/proc/kiln-cannot-write-here");
  ::testing::internal::CaptureStderr();
  c.put("k", "v");
  c.put("k2", "v");
  std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_FALSE(c.get("k").has_value());
  EXPECT_NE(err.find("continuing without"), std::string::npos) << err;
}

TEST(DiskCache, LocationFollowsTheEnvironment) {
  ::setenv("KILN_CACHE_DIR", "/tmp/kiln-cache-test-root", 1);
  ::unsetenv("KILN_DISK_CACHE");
  EXPECT_EQ(DiskCache::for_backend("cuda").dir(), "/tmp/kiln-cache-test-root/cuda");
  ::setenv("KILN_DISK_CACHE", "0", 1);
  EXPECT_FALSE(DiskCache::for_backend("cuda").enabled());
  ::unsetenv("KILN_DISK_CACHE");
  ::unsetenv("KILN_CACHE_DIR");
  ::setenv("HOME", "/home/someone", 1);
  ::unsetenv("XDG_CACHE_HOME");
  EXPECT_EQ(DiskCache::for_backend("vulkan").dir(), "/home/someone/.cache/kiln/vulkan");
}

TEST(DiskCache, StableHashIsFixed) {
  // Cache file names must not change between builds or machines.
  EXPECT_EQ(stable_hash64(""), 0xcbf29ce484222325ull);
  EXPECT_EQ(stable_hash64("a"), 0xaf63dc4c8601ec8cull);
}

}  // namespace
}  // namespace kiln::runtime

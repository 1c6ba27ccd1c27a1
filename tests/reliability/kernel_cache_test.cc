// A corrupted or truncated kernel-cache file, end to end through the public API on every
// available backend that keeps compiled kernels on disk: the checksum catches it, the kernel is
// recompiled (and the file rewritten), one warning per bad file, and the results are right.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "kiln/kiln.h"
#include "replay/compile_or_replay.h"
#include "testing/reference.h"

namespace kiln {
namespace {

// Every test process gets a fresh cache folder, set before any device is created.
const std::string& cache_dir() {
  static const std::string dir = [] {
    std::string d = ::testing::TempDir() + "/kiln_kernel_cache_test_" + std::to_string(::getpid());
    std::filesystem::remove_all(d);
    ::setenv("KILN_CACHE_DIR", d.c_str(), 1);
    return d;
  }();
  return dir;
}
[[maybe_unused]] const std::string& kInit = cache_dir();

std::vector<std::string> cache_files(const std::string& device) {
  std::vector<std::string> r;
  std::error_code ec;
  for (const auto& e : std::filesystem::recursive_directory_iterator(cache_dir() + "/" + device, ec))
    if (e.is_regular_file() && e.path().extension() == ".bin") r.push_back(e.path().string());
  std::sort(r.begin(), r.end());
  return r;
}

std::string read_file(const std::string& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

void write_file(const std::string& p, const std::string& data) {
  std::ofstream(p, std::ios::binary | std::ios::trunc).write(data.data(), std::streamsize(data.size()));
}

int count(const std::string& haystack, const std::string& needle) {
  int n = 0;
  for (size_t p = haystack.find(needle); p != std::string::npos; p = haystack.find(needle, p + 1)) ++n;
  return n;
}

// Two kernels at least: a row normalization and a reduction over the other axis.
std::vector<Tensor> model(const Device& d, uint32_t seed) {
  std::vector<float> xs = testing::random_floats(24 * 40, seed);
  Tensor x = from_vector(xs, {24, 40}, d);
  Tensor y = softmax(x * 2.0 + 1.0, -1);
  return {y, x.max({0}) + y.sum({0})};
}

TEST(KernelCache, CorruptedFilesAreDetectedRecompiledAndRewritten) {
  int tested = 0;
  for (const std::string& name : available_devices()) {
    SCOPED_TRACE(name);
    Device d(name);
    replay::clear_executable_cache();
    reset_stats();
    realize(model(d, 1));
    int64_t kernels = stats().kernels_compiled + stats().kernel_disk_cache_hits;
    std::vector<std::string> files = cache_files(name);
    if (files.empty()) {  // this backend has its disk cache turned off
      EXPECT_NE(name, "cpu") << "the CPU keeps its compiled objects on disk";
      continue;
    }
    ++tested;
    ASSERT_GE(kernels, 2);
    // A file per kernel (Vulkan, which also keeps a pipeline cache there) or one per program
    // (CUDA compiles every kernel of a program in one NVRTC call, the CPU into one object file).
    ASSERT_GE(files.size(), 1u);
    const int64_t min_warnings = std::min<int64_t>(kernels, int64_t(files.size()));
    // Truncate the first file, flip one byte in the middle of every other one.
    for (size_t i = 0; i < files.size(); ++i) {
      std::string data = read_file(files[i]);
      ASSERT_GT(data.size(), 16u);
      if (i == 0) data.resize(data.size() / 2);
      else data[data.size() / 2] ^= 0x5a;
      write_file(files[i], data);
    }
    replay::clear_executable_cache();
    reset_stats();
    ::testing::internal::CaptureStderr();
    std::vector<Tensor> second = model(d, 2);
    EXPECT_MATCHES_REFERENCE(second);
    std::string err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(stats().kernel_disk_cache_hits, 0) << err;
    EXPECT_EQ(stats().kernels_compiled, kernels) << err;
    // One warning per corrupted file that was read (at least every kernel's), never two.
    int warnings = count(err, "ignoring corrupted kernel cache file");
    EXPECT_GE(warnings, min_warnings) << err;
    EXPECT_LE(warnings, int(files.size())) << err;
    int named = 0;
    for (const std::string& f : files) {
      EXPECT_LE(count(err, f + " "), 1) << "warned twice about " << f << ": " << err;
      named += count(err, f + " ");
    }
    EXPECT_EQ(named, warnings) << err;
    // The files were rewritten: a cold executable cache now loads every kernel from disk.
    replay::clear_executable_cache();
    reset_stats();
    ::testing::internal::CaptureStderr();
    EXPECT_MATCHES_REFERENCE(model(d, 3));
    err = ::testing::internal::GetCapturedStderr();
    EXPECT_EQ(stats().kernels_compiled, 0) << err;
    EXPECT_EQ(stats().kernel_disk_cache_hits, kernels) << err;
    EXPECT_EQ(count(err, "corrupted"), 0) << err;
  }
  if (tested == 0) GTEST_SKIP() << "no available backend keeps a kernel cache on disk (KILN_DISK_CACHE=0?)";
}

}  // namespace
}  // namespace kiln

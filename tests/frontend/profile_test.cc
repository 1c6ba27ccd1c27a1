// kiln::profile writes a Chrome trace: valid JSON (checked by Python's json module), host spans
// of the compile path on a first call and not on a replay, and on the CPU and Vulkan one kernel
// span per launched kernel on the device's track.
#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "kiln/kiln.h"
#include "testing/error_of.h"
#include "testing/reference.h"

namespace kiln {
namespace {

std::string slurp(const std::string& path) {
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

int count(const std::string& s, const std::string& what) {
  int n = 0;
  for (size_t at = s.find(what); at != std::string::npos; at = s.find(what, at + 1)) ++n;
  return n;
}

TEST(Profile, WritesAChromeTraceWithHostAndKernelSpans) {
  const std::string path = (std::filesystem::temp_directory_path() / "kiln_profile_test.json").string();
  Tensor x = testing::random_tensor({4096}, float32, 21), w = testing::random_tensor({4096}, float32, 22);
  auto model = [&](double s) { return softmax(((x * w + s).tanh() - x).reshape({64, 64}), -1).sum({0}); };
  int64_t launched = 0;
  profile(path, [&] {
    reset_stats();
    model(0.5).to_vector<float>();  // first call: compiles
    model(0.5).to_vector<float>();  // the same graph again: a cache hit
    launched = stats().kernels_launched;
  });
  std::string trace = slurp(path);
  ASSERT_FALSE(trace.empty());
  std::string cmd = "python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert isinstance(d[\"traceEvents\"], list)' " + path;
  EXPECT_EQ(std::system(cmd.c_str()), 0) << "not valid JSON:\n" << trace.substr(0, 2000);
  EXPECT_EQ(count(trace, "\"name\": \"realize\""), 2);
  EXPECT_EQ(count(trace, "\"name\": \"hash + executable cache lookup\""), 2);
  EXPECT_EQ(count(trace, "\"name\": \"passes\""), 1);  // the second call replays
  for (const char* pass : {"simplify", "fuse", "schedule (lowering)", "plan_memory", "insert_barriers", "verify"})
    EXPECT_EQ(count(trace, std::string("\"name\": \"") + pass + "\""), 1) << pass;
  EXPECT_EQ(count(trace, "\"name\": \"codegen + compiler\""), 1);
  EXPECT_EQ(count(trace, "\"name\": \"load\""), 1);
  EXPECT_EQ(count(trace, "\"name\": \"run (bind + launch)\""), 2);
  EXPECT_GE(count(trace, "\"name\": \"download (waits for the device)\""), 2);
  if (default_device().name() == "cpu" || default_device().name() == "vulkan") {
    EXPECT_EQ(count(trace, "\"cat\": \"kernel\""), launched);
    EXPECT_NE(trace.find("\"args\": {\"name\": \"device " + default_device().name() + "\"}"), std::string::npos);
  }
  // Nothing is recorded outside a profile, and one profile at a time.
  model(0.25).to_vector<float>();
  std::string err = testing::error_of([&] { profile(path, [&] { profile(path + ".2", [] {}); }); });
  EXPECT_NE(err.find("a profile is already being taken"), std::string::npos) << err;
  std::remove(path.c_str());
}

}  // namespace
}  // namespace kiln

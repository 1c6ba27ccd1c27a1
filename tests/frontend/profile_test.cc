// kiln::profile writes a Chrome trace: valid JSON (checked by Python's json module), host spans
// of the compile path on a first call and not on a replay, one kernel span per launched kernel on
// the device's track carrying its costs and roofline class; beside it the launch-overhead report
// (its counts equal kiln::stats()) and a picture of each graph compiled while profiling.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "kiln/kiln.h"
#include "testing/error_of.h"
#include "testing/reference.h"
#include "testing/temp_dir.h"

namespace kiln {
namespace {

// A path in this process's own new temporary directory (ctest runs the cpu and vulkan variants
// at once, and a pid may repeat one of an earlier run).
std::string temp_path(const std::string& name) {
  static const std::string dir = testing::unique_temp_dir("profile");
  return dir + "/" + name;
}

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
  const std::string path = temp_path("profile_test.json");
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
  // Both realizes look for a shortcut; only the first, finding none, builds and hashes a graph.
  EXPECT_EQ(count(trace, "\"name\": \"executable cache lookup (shortcut)\""), 2);
  EXPECT_EQ(count(trace, "\"name\": \"hash + executable cache lookup\""), 1);
  EXPECT_EQ(count(trace, "\"name\": \"passes\""), 1);  // the second call replays
  for (const char* pass : {"simplify", "fuse", "schedule (lowering)", "plan_memory", "insert_barriers", "verify"})
    EXPECT_EQ(count(trace, std::string("\"name\": \"") + pass + "\""), 1) << pass;
  EXPECT_EQ(count(trace, "\"name\": \"codegen + compiler\""), 1);
  EXPECT_EQ(count(trace, "\"name\": \"load\""), 1);
  EXPECT_EQ(count(trace, "\"name\": \"run (bind + launch)\""), 2);
  EXPECT_GE(count(trace, "\"name\": \"download (waits for the device)\""), 2);
  EXPECT_EQ(count(trace, "\"cat\": \"kernel\""), launched);
  EXPECT_NE(trace.find("\"args\": {\"name\": \"device " + default_device().name() + "\"}"), std::string::npos);
  // Every kernel span carries its costs, roofline class and the graph nodes it computes.
  EXPECT_EQ(count(trace, "\"roofline\": \""), launched);
  EXPECT_EQ(count(trace, "\"GB/s\": "), launched);
  EXPECT_EQ(count(trace, "\"peak GFLOP/s\": "), launched);
  EXPECT_GE(count(trace, "\"computes\": \"%"), launched);
  EXPECT_NE(trace.find("tanh"), std::string::npos);
  std::remove((path.substr(0, path.size() - 5) + ".report.txt").c_str());
  // Nothing is recorded outside a profile, and one profile at a time.
  model(0.25).to_vector<float>();
  std::string err = testing::error_of([&] { profile(path, [&] { profile(path + ".2", [] {}); }); });
  EXPECT_NE(err.find("a profile is already being taken"), std::string::npos) << err;
  std::remove(path.c_str());
}

// "totals: 2 runs (graphs realized), ..." -> the number before `what`.
int64_t number_before(const std::string& text, const std::string& what) {
  size_t at = text.find(what);
  if (at == std::string::npos || at < 2) return -1;
  size_t begin = text.rfind(' ', at - 2);
  return std::atoll(text.substr(begin + 1, at - begin - 2).c_str());
}

// Every device knows its peaks for the roofline: measured on the CPU and on Vulkan devices
// (Vulkan reports none), from driver attributes on CUDA; each span says where they came from.
TEST(Profile, KernelSpansCarryTheDevicesMeasuredOrReportedPeaks) {
  const std::string path = temp_path("peaks_test.json");
  Tensor x = testing::random_tensor({1 << 16}, float32, 31);
  profile(path, [&] { (x * 3.0 + 1.0).exp().to_vector<float>(); });
  const std::string trace = slurp(path);
  std::remove(path.c_str());
  std::remove((path.substr(0, path.size() - 5) + ".report.txt").c_str());
  auto number_after = [&](const std::string& key) {
    const size_t at = trace.find("\"" + key + "\": ");
    return at == std::string::npos ? -1.0 : std::atof(trace.c_str() + at + key.size() + 4);
  };
  EXPECT_GT(number_after("peak GB/s"), 0) << trace.substr(0, 3000);
  EXPECT_GT(number_after("peak GFLOP/s"), 0);
  const std::string device = default_device().name();
  const char* source = device == "cuda" ? "driver attributes" : device == "vulkan" ? "measured on the device" : "measured copy";
  EXPECT_NE(trace.find(source), std::string::npos) << device << "\n" << trace.substr(0, 3000);
}

TEST(Profile, ReportCountsMatchStatsAndThePictureColoursEachKernel) {
  const std::string path = temp_path("profile_report.json");
  const std::string stem = path.substr(0, path.size() - 5);
  Tensor x = testing::random_tensor({64, 96}, float32, 31), w = testing::random_tensor({96, 48}, float32, 32);
  Stats before, after;
  profile(path, [&] {
    before = stats();
    Tensor h = relu(matmul(x, w) + 1.0);
    Tensor y = softmax(h, -1).sum({0});  // a few kernels: matmul, softmax's reductions, the sum
    y.to_vector<float>();
    for (int i = 0; i < 3; ++i) (x * double(i)).to_vector<float>();  // three more graphs (each scalar compiles)
    (x * 2.0).to_vector<float>();  // a replay
    after = stats();
  });
  const std::string report = slurp(stem + ".report.txt");
  ASSERT_FALSE(report.empty());
  EXPECT_EQ(number_before(report, "runs (graphs realized)"), after.graphs_realized - before.graphs_realized) << report;
  EXPECT_EQ(number_before(report, "executables compiled"), after.executables_built - before.executables_built) << report;
  EXPECT_EQ(number_before(report, "kernels launched"), after.kernels_launched - before.kernels_launched) << report;
  EXPECT_NE(report.find("recommendations:"), std::string::npos) << report;
  // One picture per graph compiled here (<stem>.graph<N>.dot for the report's "graph #N"), kernels
  // as clusters labelled with their share of the time; the first is the matmul + softmax graph.
  std::vector<std::string> dots;
  for (const auto& f : std::filesystem::directory_iterator(std::filesystem::path(stem).parent_path()))
    if (f.path().string().rfind(stem + ".graph", 0) == 0) dots.push_back(f.path().string());
  std::sort(dots.begin(), dots.end());
  EXPECT_EQ(std::count_if(dots.begin(), dots.end(), [](const std::string& d) { return d.size() > 4 && d.substr(d.size() - 4) == ".dot"; }),
            4);  // four graphs compiled
  const size_t first = report.find("graph #");
  ASSERT_NE(first, std::string::npos);
  const std::string id = report.substr(first + 7, report.find(' ', first + 7) - first - 7);
  const std::string dot = slurp(stem + ".graph" + id + ".dot");
  ASSERT_FALSE(dot.empty());
  EXPECT_GE(count(dot, "subgraph cluster_k"), 2) << dot;
  EXPECT_GE(count(dot, "% of device time"), 2) << dot;
  EXPECT_NE(dot.find("fillcolor=\"#ff"), std::string::npos) << dot;
  if (std::system("command -v dot >/dev/null 2>&1") == 0) {
    EXPECT_TRUE(std::filesystem::exists(stem + ".graph" + id + ".svg"));
  }
  for (const char* suffix : {".json", ".report.txt"}) std::remove((stem + suffix).c_str());
  for (const std::string& d : dots) std::remove(d.c_str());
}

TEST(Profile, ReportRecommendsJitForALoopOfSmallRealizes) {
  const std::string path = temp_path("profile_loop.json");
  const std::string stem = path.substr(0, path.size() - 5);
  Tensor x = testing::random_tensor({256}, float32, 41);
  (x + 1.0).exp().to_vector<float>();  // compiled before the profile: the loop below replays
  profile(path, [&] {
    for (int i = 0; i < 32; ++i) (x + 1.0).exp().to_vector<float>();
  });
  const std::string report = slurp(stem + ".report.txt");
  EXPECT_NE(report.find("32 realizes ran graphs of at most 2 kernels each"), std::string::npos) << report;
  EXPECT_NE(report.find("kiln::jit"), std::string::npos) << report;
  EXPECT_NE(report.find("compiled before the profile began"), std::string::npos) << report;
  for (const char* suffix : {".json", ".report.txt"}) std::remove((stem + suffix).c_str());
}

}  // namespace
}  // namespace kiln

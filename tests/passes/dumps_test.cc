// KILN_DEBUG and KILN_DUMP_DIR: what a user debugging a fused kernel sees.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "kiln/kiln.h"
#include "testing/reference.h"
#include "testing/temp_dir.h"

namespace kiln {
namespace {

namespace fs = std::filesystem;

std::string slurp(const fs::path& p) {
  std::ifstream f(p);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

TEST(Dumps, DumpDirHoldsEveryStage) {
  fs::path dir = testing::unique_temp_dir("dump");
  setenv("KILN_DUMP_DIR", dir.c_str(), 1);
  Tensor x = testing::random_tensor({16, 24}, float32, 1);
  Tensor y = softmax(x * 1.5, -1);  // 1.5: a structure no other test compiles
  y.realize();
  unsetenv("KILN_DUMP_DIR");
  std::vector<std::string> names;
  for (auto& e : fs::directory_iterator(dir)) names.push_back(e.path().filename().string());
  auto find = [&](const std::string& suffix) -> fs::path {
    for (const std::string& n : names)
      if (n.size() >= suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0) return dir / n;
    return {};
  };
  fs::path input = find("_00_input.txt"), simp = find("_01_simplify.txt"), fusion = find("_fusion.txt");
  std::string dev = x.device().name();
  fs::path dot = find("_graph.dot"), program = find("_program.txt"), src = find("kernel0." + dev + ".txt");
  ASSERT_FALSE(input.empty());
  ASSERT_FALSE(simp.empty());
  ASSERT_FALSE(fusion.empty());
  ASSERT_FALSE(dot.empty());
  ASSERT_FALSE(program.empty());
  ASSERT_FALSE(src.empty());
  EXPECT_NE(slurp(input).find("reduce_max"), std::string::npos);
  EXPECT_NE(slurp(fusion).find("fuse"), std::string::npos);
  EXPECT_NE(slurp(dot).find("subgraph cluster_k0"), std::string::npos);
  EXPECT_NE(slurp(program).find("step 0:"), std::string::npos);
  // The generated source in the device's language: LLVM IR, CUDA C or GLSL.
  const char* marker = dev == "cpu" ? "define void @kiln_" : dev == "cuda" ? "__global__" : "#version 460";
  EXPECT_NE(slurp(src).find(marker), std::string::npos) << src;
  if (std::system("command -v dot >/dev/null 2>&1") == 0) {
    EXPECT_FALSE(find("_graph.svg").empty());
  }
  fs::remove_all(dir);
}

TEST(Dumps, DebugLevelsPrintKernelsDecisionsAndIr) {
  Tensor x = testing::random_tensor({8, 40}, float32, 2);
  setenv("KILN_DEBUG", "3", 1);
  ::testing::internal::CaptureStderr();
  log_softmax(x * 2.5, -1).realize();
  std::string err = ::testing::internal::GetCapturedStderr();
  unsetenv("KILN_DEBUG");
  std::string dev = x.device().name();
  EXPECT_NE(err.find("kiln: compiled 1 kernel(s) for " + dev + " in"), std::string::npos) << err;
  EXPECT_NE(err.find("kiln: realize on " + dev + ": 1 kernel(s), run"), std::string::npos) << err;
  EXPECT_NE(err.find("fusion decisions:"), std::string::npos) << err;
  EXPECT_NE(err.find("--- after simplify ---"), std::string::npos) << err;
}

TEST(Dumps, InnerLoopsVectorizeInTheEmittedIr) {
  if (Device().name() != "cpu") GTEST_SKIP() << "LLVM IR vectorization is the CPU backend's";
  fs::path dir = testing::unique_temp_dir("vec");
  setenv("KILN_DUMP_DIR", dir.c_str(), 1);
  Tensor a = testing::random_tensor({4096}, float32, 3), b = testing::random_tensor({4096}, float32, 4);
  (a * b + 0.75).realize();
  unsetenv("KILN_DUMP_DIR");
  std::string ir;
  for (auto& e : fs::directory_iterator(dir)) {
    if (e.path().string().find("kernel0.cpu") != std::string::npos) ir = slurp(e.path());
  }
  EXPECT_NE(ir.find("x float>"), std::string::npos) << ir;  // <8 x float> (AVX2) or wider
  fs::remove_all(dir);
}

}  // namespace
}  // namespace kiln

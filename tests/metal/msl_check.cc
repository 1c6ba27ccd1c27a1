#include "metal/msl_check.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>
#include <regex>
#include <set>

#include "gtest/gtest.h"

#ifndef KILN_CLANGXX
#define KILN_CLANGXX "/usr/bin/clang++-14"
#endif

namespace kiln::testing_msl {
namespace {

// The MSL attributes kiln's kernels may use (Metal Shading Language Specification, "Attributes
// for Kernel Function Input Arguments" and "Kernel Functions").
const std::set<std::string> kAttributes = {"buffer",
                                           "thread_position_in_threadgroup",
                                           "threadgroup_position_in_grid",
                                           "threadgroups_per_grid",
                                           "thread_index_in_simdgroup",
                                           "simdgroup_index_in_threadgroup",
                                           "max_total_threads_per_threadgroup"};

}  // namespace

bool available() {
  struct stat st;
  return ::stat(KILN_CLANGXX, &st) == 0;
}

bool check(const std::string& source, std::string* log) {
  log->clear();
  static const std::regex attribute(R"(\[\[\s*([A-Za-z_][A-Za-z_0-9]*))");
  for (std::sregex_iterator it(source.begin(), source.end(), attribute), end; it != end; ++it)
    if (!kAttributes.count((*it)[1].str())) {
      *log = "[[" + (*it)[1].str() + "]] is not an MSL attribute kiln's kernels use";
      return false;
    }
  static std::atomic<int> counter{0};
  const std::string path = ::testing::TempDir() + "/kiln_msl_" + std::to_string(::getpid()) + "_" +
                           std::to_string(counter.fetch_add(1)) + ".metal";
  {
    std::ofstream out(path, std::ios::binary);
    out << source;
  }
  const std::string cmd = std::string(KILN_CLANGXX) +
                          " -x c++ -std=c++17 -fsyntax-only -ffreestanding -nostdinc -nostdinc++ -I" KILN_METAL_SHIM_DIR
                          " -Werror -Wall -Wno-unknown-attributes -Wno-unused-variable -Wno-unused-but-set-variable"
                          " -Wno-unused-function -Wimplicit-float-conversion -Wdouble-promotion -ferror-limit=20 " +
                          path + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) {
    *log = "cannot run " + cmd;
    return false;
  }
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) log->append(buf, n);
  const int status = ::pclose(p);
  std::remove(path.c_str());
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace kiln::testing_msl

#include "cuda/ptxas.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <fstream>

#include "gtest/gtest.h"

#ifndef KILN_PTXAS
#define KILN_PTXAS "/usr/local/cuda/bin/ptxas"
#endif

namespace kiln::testing_ptxas {

bool available() {
  struct stat st;
  return ::stat(KILN_PTXAS, &st) == 0;
}

bool assemble(const std::string& ptx, const std::string& arch, std::string* log) {
  static std::atomic<int> counter{0};
  const std::string base = ::testing::TempDir() + "/kiln_ptxas_" + std::to_string(::getpid()) + "_" +
                           std::to_string(counter.fetch_add(1));
  const std::string in = base + ".ptx";
  {
    std::ofstream out(in, std::ios::binary);
    out << ptx;
  }
  const std::string cmd = std::string(KILN_PTXAS) + " -arch=" + arch + " -o " + base + ".cubin " + in + " 2>&1";
  log->clear();
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) {
    *log = "cannot run " + cmd;
    return false;
  }
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof(buf), p)) > 0) log->append(buf, n);
  int status = ::pclose(p);
  std::remove(in.c_str());
  std::remove((base + ".cubin").c_str());
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

}  // namespace kiln::testing_ptxas

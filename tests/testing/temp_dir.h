// A new, empty temporary directory for one test: mkdtemp under the test temp dir, so no other
// process (ctest runs tests in parallel) and no earlier run that happened to have the same pid
// can have put files in it.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <string>
#include <vector>

namespace kiln::testing {

inline std::string unique_temp_dir(const std::string& tag) {
  std::string base = ::testing::TempDir();
  if (base.empty()) base = "/tmp/";
  if (base.back() != '/') base += '/';
  std::string pattern = base + "kiln_" + tag + "_XXXXXX";
  std::vector<char> buf(pattern.begin(), pattern.end());
  buf.push_back('\0');
  if (::mkdtemp(buf.data()) == nullptr) {
    ADD_FAILURE() << "mkdtemp(" << pattern << ") failed";
    return pattern;
  }
  return std::string(buf.data());
}

}  // namespace kiln::testing

// Environment variables set (or, given "", unset) for one scope, the previous values restored
// after it. The renderer reads its knobs at each compile, so the executable cache is emptied on
// both edges: the next realize compiles under the new values, and nothing compiled under them
// is replayed after the scope.
#pragma once

#include <stdlib.h>

#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "kiln/kiln.h"

namespace kiln::testing {

class ScopedEnv {
 public:
  explicit ScopedEnv(std::initializer_list<std::pair<std::string, std::string>> vars) {
    for (const auto& [k, v] : vars) {
      const char* old = std::getenv(k.c_str());
      saved_.emplace_back(k, old ? std::optional<std::string>(old) : std::nullopt);
      v.empty() ? ::unsetenv(k.c_str()) : ::setenv(k.c_str(), v.c_str(), 1);
    }
    flush();
  }
  ~ScopedEnv() {
    for (const auto& [k, v] : saved_) v ? ::setenv(k.c_str(), v->c_str(), 1) : ::unsetenv(k.c_str());
    flush();
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  static void flush() {
    const int64_t budget = executable_cache_budget();
    set_executable_cache_budget(0);
    set_executable_cache_budget(budget);
  }
  std::vector<std::pair<std::string, std::optional<std::string>>> saved_;
};

}  // namespace kiln::testing

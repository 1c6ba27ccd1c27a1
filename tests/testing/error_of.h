// The message of the kiln::Error that `f` throws, or "no error": tests assert messages with it.
#pragma once

#include <functional>
#include <string>

#include "kiln/kiln.h"

namespace kiln::testing {

inline std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "no error";
}

}  // namespace kiln::testing

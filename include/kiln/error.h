// kiln::Error: the one exception type the tensor API throws.
//
// Functions that can fail for reasons a caller may want to handle (finding a device, compiling,
// parsing) return absl::Status / absl::StatusOr. Tensor operators cannot return a status, so
// record-time shape/dtype errors and realization failures are thrown as kiln::Error, which
// carries the same absl::Status.
#pragma once

#include <stdexcept>
#include <string>

#include "absl/status/status.h"

namespace kiln {

class Error : public std::runtime_error {
 public:
  explicit Error(absl::Status status)
      : std::runtime_error(std::string(status.message())), status_(std::move(status)) {}
  const absl::Status& status() const { return status_; }

 private:
  absl::Status status_;
};

// Throws kiln::Error when `s` is not OK.
inline void throw_if_error(const absl::Status& s) {
  if (!s.ok()) throw Error(s);
}

}  // namespace kiln

// Objects shared while anyone holds them, found by a key: the loaded form of a binary that several
// executables load (the sizes of a symbolic dimension load one program's code once per size).
// Holds them weakly: the last holder destroys one, and the next request for its key makes it anew.
#pragma once

#include <algorithm>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"

namespace kiln::support {

template <typename T>
class SharedByKey {
 public:
  // The object for `key` while some holder keeps it, else make() (StatusOr<shared_ptr<T>>), kept.
  template <typename Make>
  absl::StatusOr<std::shared_ptr<T>> get(const std::string& key, const Make& make) {
    std::lock_guard<std::mutex> lock(mu_);
    std::erase_if(held_, [](const auto& e) { return e.second.expired(); });
    for (const auto& [k, weak] : held_)
      if (k == key)
        if (std::shared_ptr<T> p = weak.lock()) return p;
    absl::StatusOr<std::shared_ptr<T>> made = make();
    if (made.ok()) held_.emplace_back(key, *made);
    return made;
  }

 private:
  std::mutex mu_;
  std::vector<std::pair<std::string, std::weak_ptr<T>>> held_;
};

}  // namespace kiln::support

// Compile through the kernel cache on disk: the one path by which every backend's Compiler turns
// source into a binary (runtime/disk_cache.h stores the files).
//
// The key is a string holding everything that decides the binary: the source, the target, the
// compiler's version and options (a backend builds it; the cache compares it in full on every
// read). A hit counts stats().kernel_disk_cache_hits, a miss compiles, counts kernels_compiled
// and stores the result. A blob that is on disk but that `valid` rejects (written by another
// kiln version) is compiled afresh and overwritten; failing to write never fails a compile.
#pragma once

#include <functional>
#include <string>
#include <string_view>

#include "absl/status/statusor.h"
#include "runtime/disk_cache.h"

namespace kiln::runtime {

// Binaries kept in memory for the sizes of a symbolic dimension (passes/symbolic.h): while a
// RememberBinaries scope is alive (in any thread), what get_or_compile compiles or reads from disk
// is also kept in this process (up to 256 MiB, oldest dropped first), and every lookup finds it
// there before the disk (counted in stats().kernels_reused): a new size whose code equals an
// earlier size's compiles nothing and reads nothing, with or without a disk cache.
class RememberBinaries {
 public:
  RememberBinaries();
  ~RememberBinaries();
  RememberBinaries(const RememberBinaries&) = delete;
  RememberBinaries& operator=(const RememberBinaries&) = delete;
};
// Drops the binaries kept in memory (tests).
void forget_binaries();

class CompileCache {
 public:
  // The cache folder of `backend` at the location support::options() names (off when disabled).
  static CompileCache for_backend(const std::string& backend);
  explicit CompileCache(DiskCache disk) : disk_(std::move(disk)) {}

  // The binary for `key`; `kernels` is how many kernels it holds (for the counters).
  absl::StatusOr<std::string> get_or_compile(
      std::string_view key, int kernels, const std::function<absl::StatusOr<std::string>()>& compile,
      const std::function<bool(std::string_view)>& valid = [](std::string_view b) { return !b.empty(); }) const;

  // The file `key` is stored in ("" when the cache is off).
  std::string path_for(std::string_view key) const { return disk_.enabled() ? disk_.path_for(key) : ""; }
  const DiskCache& disk() const { return disk_; }

 private:
  // The disk, then the compiler (get_or_compile's part after memory).
  absl::StatusOr<std::string> lookup_or_compile(std::string_view key, int kernels,
                                                const std::function<absl::StatusOr<std::string>()>& compile,
                                                const std::function<bool(std::string_view)>& valid) const;

  DiskCache disk_;
};

}  // namespace kiln::runtime

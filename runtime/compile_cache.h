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
#include <map>
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

// Binaries found by what decides them apart from the toolchain (get_or_compile's `portable`:
// the source and the target): stable_hash64 of it -> the binary. A .kiln artifact with symbolic
// dimensions carries the binaries of its template code this way, so that planning a new size on
// another machine (another NVRTC, another LLVM) finds them instead of compiling.
struct PortableBinary {
  uint64_t size = 0;  // of the portable text (a second check beside its hash)
  std::string blob;
};
using PortableBinaries = std::map<uint64_t, PortableBinary>;
// While alive (in any thread), every binary get_or_compile returns for a call with a portable
// text is also put into `*into` (kilnc compile).
class RecordBinaries {
 public:
  explicit RecordBinaries(PortableBinaries* into);
  ~RecordBinaries();
  RecordBinaries(const RecordBinaries&) = delete;
  RecordBinaries& operator=(const RecordBinaries&) = delete;

 private:
  PortableBinaries* into_;
};
// While alive (in any thread), get_or_compile looks a call's portable text up in `*from` first
// (a hit that `valid` accepts counts stats().kernels_reused, compiles and reads nothing).
class ProvideBinaries {
 public:
  explicit ProvideBinaries(const PortableBinaries* from);
  ~ProvideBinaries();
  ProvideBinaries(const ProvideBinaries&) = delete;
  ProvideBinaries& operator=(const ProvideBinaries&) = delete;

 private:
  const PortableBinaries* from_;
};

class CompileCache {
 public:
  // The cache folder of `backend` at the location support::options() names (off when disabled).
  static CompileCache for_backend(const std::string& backend);
  explicit CompileCache(DiskCache disk) : disk_(std::move(disk)) {}

  // The binary for `key`; `kernels` is how many kernels it holds (for the counters). `portable`
  // is the part of the key that decides the binary apart from the toolchain's version (the source,
  // the target and kiln's own options): provided and recorded binaries go by it.
  absl::StatusOr<std::string> get_or_compile(
      std::string_view key, int kernels, const std::function<absl::StatusOr<std::string>()>& compile,
      const std::function<bool(std::string_view)>& valid = [](std::string_view b) { return !b.empty(); },
      std::string_view portable = {}) const;

  // The file `key` is stored in ("" when the cache is off).
  std::string path_for(std::string_view key) const { return disk_.enabled() ? disk_.path_for(key) : ""; }
  const DiskCache& disk() const { return disk_; }

 private:
  // The disk, then the compiler (get_or_compile's part after memory).
  absl::StatusOr<std::string> remembered_or_compile(std::string_view key, int kernels,
                                                    const std::function<absl::StatusOr<std::string>()>& compile,
                                                    const std::function<bool(std::string_view)>& valid) const;
  absl::StatusOr<std::string> lookup_or_compile(std::string_view key, int kernels,
                                                const std::function<absl::StatusOr<std::string>()>& compile,
                                                const std::function<bool(std::string_view)>& valid) const;

  DiskCache disk_;
};

}  // namespace kiln::runtime

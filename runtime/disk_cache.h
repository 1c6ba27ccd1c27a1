// The kernel binary cache on disk, shared by the backends that compile kernels at run time.
//
// A blob (a cubin, a SPIR-V module, ...) is stored under a key string that the backend builds
// from everything that decides the binary: the source, the target (e.g. compute capability), the
// compiler's version and its options. Each file holds a header, the whole key (compared on every
// read, so a digest collision can never return the wrong binary), the blob, and a checksum. A
// truncated or corrupted file is reported once on stderr, ignored, and rewritten by the next put.
//
// Location: support::options().cache_dir ($KILN_CACHE_DIR, else $XDG_CACHE_HOME/kiln, else
// $HOME/.cache/kiln), with one folder per backend. KILN_DISK_CACHE=0 turns the cache off. Failing to write never fails a compile.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace kiln::runtime {

class DiskCache {
 public:
  // The cache of one backend ("cuda", "vulkan", ...) at the location the environment selects.
  static DiskCache for_backend(const std::string& backend);
  // A cache in `dir` (created on the first put). An empty dir means disabled.
  explicit DiskCache(std::string dir) : dir_(std::move(dir)) {}

  bool enabled() const { return !dir_.empty(); }
  const std::string& dir() const { return dir_; }
  // The blob stored under `key`, or nullopt when absent, unreadable or corrupted.
  std::optional<std::string> get(std::string_view key) const;
  // Stores `blob` under `key`, replacing any earlier file; atomic (write + rename).
  void put(std::string_view key, std::string_view blob) const;
  // The file that holds `key`.
  std::string path_for(std::string_view key) const;

 private:
  std::string dir_;
};

// A stable 64-bit hash (FNV-1a) of bytes: the same on every machine and in every process.
uint64_t stable_hash64(std::string_view bytes, uint64_t seed = 0xcbf29ce484222325ull);

}  // namespace kiln::runtime

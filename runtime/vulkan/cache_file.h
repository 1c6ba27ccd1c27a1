// kiln's on-disk cache files: a small header (magic, 128-bit key, size, checksum) before the
// payload, written atomically (temp file + rename), so a torn or corrupt file is detected.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"

namespace kiln::runtime::vk {

struct CacheKey {
  uint64_t a = 0, b = 0;
  std::string hex() const;
};
// Stable across processes and machines (unlike absl::Hash).
uint64_t fnv1a64(const void* data, size_t n, uint64_t seed = 0xcbf29ce484222325ull);
CacheKey cache_key(const std::string& material);

// $KILN_CACHE_DIR, else $HOME/.cache/kiln; "" when neither is set.
std::string default_cache_dir();
// mkdir -p; false when the directory cannot be made.
bool make_dirs(const std::string& dir);

// NotFound when absent; DataLoss naming what is wrong when the file is corrupt.
absl::StatusOr<std::string> read_cache_file(const std::string& path, const char magic[8], const CacheKey& key);
absl::Status write_cache_file(const std::string& path, const char magic[8], const CacheKey& key, const void* data, size_t n);

}  // namespace kiln::runtime::vk

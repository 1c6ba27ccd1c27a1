#include "runtime/compile_cache.h"

#include "runtime/stats.h"

namespace kiln::runtime {

CompileCache CompileCache::for_backend(const std::string& backend) { return CompileCache(DiskCache::for_backend(backend)); }

absl::StatusOr<std::string> CompileCache::get_or_compile(
    std::string_view key, int kernels, const std::function<absl::StatusOr<std::string>()>& compile,
    const std::function<bool(std::string_view)>& valid) const {
  // DiskCache checks the checksum and the whole key; a corrupt file reads as absent (with one
  // warning) and is rewritten below.
  if (std::optional<std::string> blob = disk_.get(key); blob && valid(*blob)) {
    counters().kernel_disk_cache_hits += kernels;
    return *std::move(blob);
  }
  auto bin = compile();
  if (!bin.ok()) return bin.status();
  counters().kernels_compiled += kernels;
  disk_.put(key, *bin);
  return bin;
}

}  // namespace kiln::runtime

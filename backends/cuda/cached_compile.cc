#include "backends/cuda/cached_compile.h"

#include <cstdint>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "runtime/stats.h"

namespace kiln::runtime::cuda {
namespace {

// Blob layout: u64 cubin size, the cubin, then the PTX (kept so that a later dump can show it).
std::string pack(const CudaBinary& b) {
  uint64_t n = b.cubin.size();
  std::string blob(reinterpret_cast<const char*>(&n), sizeof(n));
  blob += b.cubin;
  blob += b.ptx;
  return blob;
}

bool unpack(const std::string& blob, bool keep_ptx, CudaBinary* b) {
  uint64_t n = 0;
  if (blob.size() < sizeof(n)) return false;
  std::memcpy(&n, blob.data(), sizeof(n));
  if (n == 0 || n > blob.size() - sizeof(n)) return false;
  b->cubin = blob.substr(sizeof(n), size_t(n));
  if (keep_ptx) b->ptx = blob.substr(sizeof(n) + size_t(n));
  return true;
}

}  // namespace

std::string binary_cache_key(const std::string& source, int cc) {
  return absl::StrCat("kiln cuda module v1\nnvrtc ", nvrtc_version(), "\nsm_", cc, "\n",
                      absl::StrJoin(nvrtc_options(cc), " "), "\n", source);
}

absl::StatusOr<CudaBinary> cached_compile(const std::string& source, int cc, int num_kernels, bool keep_ptx,
                                          const DiskCache& cache) {
  const std::string key = binary_cache_key(source, cc);
  if (std::optional<std::string> blob = cache.get(key)) {
    CudaBinary b;
    if (unpack(*blob, keep_ptx, &b)) {
      counters().kernel_disk_cache_hits += num_kernels;
      return b;
    }
    // The file's checksum held, so this is a blob another kiln version wrote: compile afresh.
  }
  auto b = nvrtc_compile(source, cc, /*keep_ptx=*/true);
  if (!b.ok()) return b.status();
  counters().kernels_compiled += num_kernels;
  cache.put(key, pack(*b));
  if (!keep_ptx) b->ptx.clear();
  return b;
}

}  // namespace kiln::runtime::cuda

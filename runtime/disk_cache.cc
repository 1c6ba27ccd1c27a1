#include "runtime/disk_cache.h"

#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <set>
#include <sstream>

#include "absl/strings/str_format.h"
#include "support/options.h"

namespace kiln::runtime {
namespace {

// File layout: header, key bytes, blob bytes. All integers little-endian (the hosts kiln runs on).
constexpr char kMagic[8] = {'K', 'I', 'L', 'N', 'B', 'L', 'O', 'B'};
constexpr uint32_t kFormatVersion = 1;

struct Header {
  char magic[8];
  uint32_t version;
  uint32_t reserved;
  uint64_t key_bytes;
  uint64_t blob_bytes;
  uint64_t checksum;  // stable_hash64 of key + blob
};
static_assert(sizeof(Header) == 40);

uint64_t checksum_of(std::string_view key, std::string_view blob) {
  return stable_hash64(blob, stable_hash64(key));
}

// Reports a problem with `what` on stderr once per process and key (path or directory).
void warn_once(const std::string& what, const std::string& message) {
  static std::mutex mu;
  static std::set<std::string> seen;
  std::lock_guard<std::mutex> lock(mu);
  if (!seen.insert(what).second) return;
  std::fprintf(stderr, "kiln: %s\n", message.c_str());
}

}  // namespace

uint64_t stable_hash64(std::string_view bytes, uint64_t seed) {
  uint64_t h = seed;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

DiskCache DiskCache::for_backend(const std::string& backend) {
  std::string root = support::options().cache_dir;  // "" when disabled or no location is known
  if (root.empty()) return DiskCache("");
  return DiskCache(root + "/" + backend);
}

std::string DiskCache::path_for(std::string_view key) const {
  // Two differently seeded hashes: 128 bits of file name. The key itself is checked on read.
  return absl::StrFormat("%s/%016x%016x.bin", dir_, stable_hash64(key), stable_hash64(key, 0x84222325cbf29ce4ull));
}

std::optional<std::string> DiskCache::get(std::string_view key) const {
  if (!enabled()) return std::nullopt;
  const std::string path = path_for(key);
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;  // not cached yet
  std::stringstream ss;
  ss << in.rdbuf();
  const std::string data = ss.str();
  auto corrupted = [&](const char* why) -> std::optional<std::string> {
    warn_once(path, absl::StrFormat("ignoring corrupted kernel cache file %s (%s); it will be rewritten", path, why));
    return std::nullopt;
  };
  Header h;
  if (data.size() < sizeof(Header)) return corrupted("truncated header");
  std::memcpy(&h, data.data(), sizeof(Header));
  if (std::memcmp(h.magic, kMagic, sizeof(kMagic)) != 0) return corrupted("bad magic");
  if (h.version != kFormatVersion) return corrupted("unknown format version");
  if (h.key_bytes > data.size() || h.blob_bytes > data.size() ||
      sizeof(Header) + h.key_bytes + h.blob_bytes != data.size())
    return corrupted("size mismatch (truncated?)");
  std::string_view stored_key(data.data() + sizeof(Header), size_t(h.key_bytes));
  std::string_view blob(data.data() + sizeof(Header) + h.key_bytes, size_t(h.blob_bytes));
  if (checksum_of(stored_key, blob) != h.checksum) return corrupted("checksum mismatch");
  if (stored_key != key) return std::nullopt;  // a digest collision: a different key owns this file
  return std::string(blob);
}

void DiskCache::put(std::string_view key, std::string_view blob) const {
  if (!enabled()) return;
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  if (ec) {
    warn_once(dir_, absl::StrFormat("cannot create the kernel cache folder %s (%s); continuing without it", dir_,
                                    ec.message()));
    return;
  }
  Header h;
  std::memcpy(h.magic, kMagic, sizeof(kMagic));
  h.version = kFormatVersion;
  h.reserved = 0;
  h.key_bytes = key.size();
  h.blob_bytes = blob.size();
  h.checksum = checksum_of(key, blob);
  const std::string path = path_for(key);
  // A unique temporary name per writer, renamed over the final name: readers never see a partial
  // file, and concurrent writers of the same key each publish a complete one.
  static std::atomic<uint64_t> counter{0};
  const std::string tmp = absl::StrFormat("%s.tmp%d_%d", path, int(::getpid()), counter.fetch_add(1));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(&h), sizeof(h));
    out.write(key.data(), std::streamsize(key.size()));
    out.write(blob.data(), std::streamsize(blob.size()));
    out.close();
    if (!out) {
      std::filesystem::remove(tmp, ec);
      warn_once(dir_, absl::StrFormat("cannot write the kernel cache file %s; continuing without the cache", tmp));
      return;
    }
  }
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    warn_once(dir_, absl::StrFormat("cannot write the kernel cache file %s; continuing without the cache", path));
  }
}

}  // namespace kiln::runtime

#include "runtime/vulkan/cache_file.h"

#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace kiln::runtime::vk {
namespace {

struct Header {
  char magic[8];
  uint64_t key_a, key_b;
  uint64_t size;
  uint64_t checksum;
};

}  // namespace

std::string CacheKey::hex() const { return absl::StrFormat("%016x%016x", a, b); }

uint64_t fnv1a64(const void* data, size_t n, uint64_t seed) {
  const unsigned char* p = static_cast<const unsigned char*>(data);
  uint64_t h = seed;
  for (size_t i = 0; i < n; ++i) {
    h ^= p[i];
    h *= 0x100000001b3ull;
  }
  return h;
}

CacheKey cache_key(const std::string& material) {
  // Two independent 64-bit hashes (different seeds, the second over a mixed length prefix).
  CacheKey k;
  k.a = fnv1a64(material.data(), material.size());
  uint64_t n = material.size() * 0x9e3779b97f4a7c15ull;
  k.b = fnv1a64(material.data(), material.size(), fnv1a64(&n, sizeof(n), 0x84222325cbf29ce4ull));
  return k;
}

std::string default_cache_dir() {
  if (const char* d = std::getenv("KILN_CACHE_DIR"); d && *d) return d;
  if (const char* h = std::getenv("HOME"); h && *h) return absl::StrCat(h, "/.cache/kiln");
  return "";
}

bool make_dirs(const std::string& dir) {
  if (dir.empty()) return false;
  for (size_t i = 1; i <= dir.size(); ++i) {
    if (i != dir.size() && dir[i] != '/') continue;
    std::string part = dir.substr(0, i);
    if (::mkdir(part.c_str(), 0755) != 0 && errno != EEXIST) return false;
  }
  struct stat st;
  return ::stat(dir.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

absl::StatusOr<std::string> read_cache_file(const std::string& path, const char magic[8], const CacheKey& key) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return absl::NotFoundError(path);
  std::stringstream ss;
  ss << f.rdbuf();
  std::string all = ss.str();
  Header h;
  if (all.size() < sizeof(h)) return absl::DataLossError("truncated header");
  std::memcpy(&h, all.data(), sizeof(h));
  if (std::memcmp(h.magic, magic, 8) != 0) return absl::DataLossError("bad magic");
  if (h.key_a != key.a || h.key_b != key.b) return absl::DataLossError("key mismatch");
  if (h.size != all.size() - sizeof(h)) return absl::DataLossError(absl::StrCat("size ", all.size() - sizeof(h), " != recorded ", h.size));
  std::string payload = all.substr(sizeof(h));
  if (fnv1a64(payload.data(), payload.size()) != h.checksum) return absl::DataLossError("checksum mismatch");
  return payload;
}

absl::Status write_cache_file(const std::string& path, const char magic[8], const CacheKey& key, const void* data, size_t n) {
  static std::atomic<uint64_t> counter{0};
  Header h;
  std::memcpy(h.magic, magic, 8);
  h.key_a = key.a;
  h.key_b = key.b;
  h.size = n;
  h.checksum = fnv1a64(data, n);
  std::string tmp = absl::StrCat(path, ".tmp.", ::getpid(), ".", counter++);
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f.write(reinterpret_cast<const char*>(&h), sizeof(h));
    f.write(static_cast<const char*>(data), std::streamsize(n));
    if (!f) {
      std::remove(tmp.c_str());
      return absl::InternalError(absl::StrCat("cannot write ", tmp));
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return absl::InternalError(absl::StrCat("cannot rename ", tmp, " to ", path));
  }
  return absl::OkStatus();
}

}  // namespace kiln::runtime::vk

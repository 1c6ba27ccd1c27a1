#include "runtime/compile_cache.h"

#include <atomic>
#include <deque>
#include <future>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "runtime/stats.h"

namespace kiln::runtime {
namespace {

constexpr size_t kRememberedBytes = size_t(256) << 20;

struct Remembered {
  std::mutex mu;
  std::atomic<int> scopes{0};
  // Keys being compiled now (while remembering): a second thread asking for one waits for the
  // first's result instead of compiling it again.
  std::unordered_map<std::string, std::shared_future<absl::StatusOr<std::string>>> inflight;
  std::unordered_map<std::string, std::string> blobs;  // key -> binary
  std::deque<std::string> order;                       // keys, oldest first
  size_t bytes = 0;
};

Remembered& remembered() {
  static Remembered* r = new Remembered();  // never destroyed: compiles may run during teardown
  return *r;
}

std::optional<std::string> recall(std::string_view key) {
  Remembered& r = remembered();
  std::lock_guard<std::mutex> lock(r.mu);
  auto it = r.blobs.find(std::string(key));
  if (it == r.blobs.end()) return std::nullopt;
  return it->second;
}

void remember(std::string_view key, const std::string& blob) {
  Remembered& r = remembered();
  if (r.scopes.load() == 0) return;
  std::lock_guard<std::mutex> lock(r.mu);
  auto [it, fresh] = r.blobs.emplace(std::string(key), blob);
  if (!fresh) return;
  r.order.push_back(it->first);
  r.bytes += key.size() + blob.size();
  while (r.bytes > kRememberedBytes && r.order.size() > 1) {
    auto old = r.blobs.find(r.order.front());
    r.bytes -= old->first.size() + old->second.size();
    r.blobs.erase(old);
    r.order.pop_front();
  }
}

// The scopes of RecordBinaries and ProvideBinaries.
struct Portable {
  std::mutex mu;
  std::atomic<int> scopes{0};
  std::vector<PortableBinaries*> recorders;
  std::vector<const PortableBinaries*> providers;
};

Portable& portable_scopes() {
  static Portable* p = new Portable();
  return *p;
}

std::optional<std::string> provided(std::string_view portable, const std::function<bool(std::string_view)>& valid) {
  Portable& p = portable_scopes();
  if (portable.empty() || p.scopes.load() == 0) return std::nullopt;
  const uint64_t h = stable_hash64(portable);
  std::lock_guard<std::mutex> lock(p.mu);
  for (const PortableBinaries* from : p.providers)
    if (auto it = from->find(h); it != from->end() && it->second.size == portable.size() && valid(it->second.blob))
      return it->second.blob;
  return std::nullopt;
}

void record(std::string_view portable, const std::string& blob) {
  Portable& p = portable_scopes();
  if (portable.empty() || p.scopes.load() == 0) return;
  const uint64_t h = stable_hash64(portable);
  std::lock_guard<std::mutex> lock(p.mu);
  for (PortableBinaries* into : p.recorders) (*into)[h] = {portable.size(), blob};
}

// A scope's table joins (`enter`) or leaves `list` (Portable::recorders or providers).
template <class T>
void scope_of(std::vector<T*> Portable::*list, T* table, bool enter) {
  Portable& p = portable_scopes();
  std::lock_guard<std::mutex> lock(p.mu);
  if (enter) (p.*list).push_back(table), p.scopes++;
  else std::erase(p.*list, table), p.scopes--;
}

}  // namespace

RecordBinaries::RecordBinaries(PortableBinaries* into) : into_(into) { scope_of(&Portable::recorders, into_, true); }
RecordBinaries::~RecordBinaries() { scope_of(&Portable::recorders, into_, false); }
ProvideBinaries::ProvideBinaries(const PortableBinaries* from) : from_(from) { scope_of(&Portable::providers, from_, true); }
ProvideBinaries::~ProvideBinaries() { scope_of(&Portable::providers, from_, false); }

RememberBinaries::RememberBinaries() { remembered().scopes++; }
RememberBinaries::~RememberBinaries() { remembered().scopes--; }

void forget_binaries() {
  Remembered& r = remembered();
  std::lock_guard<std::mutex> lock(r.mu);
  r.blobs.clear();
  r.order.clear();
  r.bytes = 0;
}

CompileCache CompileCache::for_backend(const std::string& backend) { return CompileCache(DiskCache::for_backend(backend)); }

absl::StatusOr<std::string> CompileCache::get_or_compile(
    std::string_view key, int kernels, const std::function<absl::StatusOr<std::string>()>& compile,
    const std::function<bool(std::string_view)>& valid, std::string_view portable) const {
  if (std::optional<std::string> blob = provided(portable, valid)) {
    counters().kernels_reused += kernels;
    return *std::move(blob);
  }
  absl::StatusOr<std::string> got = remembered_or_compile(key, kernels, compile, valid);
  if (got.ok()) record(portable, *got);
  return got;
}

absl::StatusOr<std::string> CompileCache::remembered_or_compile(
    std::string_view key, int kernels, const std::function<absl::StatusOr<std::string>()>& compile,
    const std::function<bool(std::string_view)>& valid) const {
  if (std::optional<std::string> blob = recall(key)) {
    counters().kernels_reused += kernels;
    return *std::move(blob);
  }
  Remembered& r = remembered();
  if (r.scopes.load() > 0) {
    std::promise<absl::StatusOr<std::string>> mine;
    std::shared_future<absl::StatusOr<std::string>> theirs;
    {
      std::lock_guard<std::mutex> lock(r.mu);
      if (auto done = r.blobs.find(std::string(key)); done != r.blobs.end()) {  // finished meanwhile
        counters().kernels_reused += kernels;
        return done->second;
      }
      if (auto it = r.inflight.find(std::string(key)); it != r.inflight.end()) theirs = it->second;
      else r.inflight.emplace(std::string(key), mine.get_future().share());
    }
    if (theirs.valid()) {
      absl::StatusOr<std::string> got = theirs.get();
      if (got.ok()) counters().kernels_reused += kernels;
      return got;
    }
    absl::StatusOr<std::string> got = lookup_or_compile(key, kernels, compile, valid);
    mine.set_value(got);
    std::lock_guard<std::mutex> lock(r.mu);
    r.inflight.erase(std::string(key));
    return got;
  }
  return lookup_or_compile(key, kernels, compile, valid);
}

absl::StatusOr<std::string> CompileCache::lookup_or_compile(
    std::string_view key, int kernels, const std::function<absl::StatusOr<std::string>()>& compile,
    const std::function<bool(std::string_view)>& valid) const {
  // DiskCache checks the checksum and the whole key; a corrupt file reads as absent (with one
  // warning) and is rewritten below.
  if (std::optional<std::string> blob = disk_.get(key); blob && valid(*blob)) {
    counters().kernel_disk_cache_hits += kernels;
    remember(key, *blob);
    return *std::move(blob);
  }
  auto bin = compile();
  if (!bin.ok()) return bin.status();
  counters().kernels_compiled += kernels;
  disk_.put(key, *bin);
  remember(key, *bin);
  return bin;
}

}  // namespace kiln::runtime

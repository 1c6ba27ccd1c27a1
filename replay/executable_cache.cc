#include "replay/executable_cache.h"

#include <atomic>
#include <cstdio>
#include <mutex>
#include <unordered_map>

#include "runtime/stats.h"
#include "support/options.h"

namespace kiln::replay {

uint64_t new_executable_id() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

namespace {

struct Cache {
  std::mutex mu;
  std::unordered_multimap<uint64_t, std::shared_ptr<const CompiledGraph>> entries;
  std::atomic<uint64_t> tick{0};
  // Bumped (under mu) whenever an entry leaves: a generation a caller saw still current means
  // every executable it saw cached then is cached now.
  std::atomic<uint64_t> generation{1};
  int64_t bytes = 0;
  int64_t budget = support::options().cache_bytes;
};

Cache& cache() {
  static Cache* c = new Cache();  // never destroyed: executables may outlive static teardown
  return *c;
}

uint64_t key(const ir::Graph& g, bool fusion) { return g.structural_hash() ^ (uint64_t(fusion) << 63); }

const std::shared_ptr<const CompiledGraph>* find_locked(Cache& c, runtime::Device* d, const ir::Graph& g, bool fusion,
                                                        const std::string& variant) {
  auto range = c.entries.equal_range(key(g, fusion));
  for (auto it = range.first; it != range.second; ++it) {
    const CompiledGraph& e = *it->second;
    if (e.device == d && e.fusion == fusion && e.variant == variant && e.graph == g) return &it->second;
  }
  return nullptr;
}

// Drops least recently used entries (never `keep`) until the cache fits its budget. A linear
// scan per eviction: caches hold tens to thousands of entries and evictions are rare.
void evict_locked(Cache& c, const CompiledGraph* keep) {
  while (c.bytes > c.budget) {
    auto victim = c.entries.end();
    for (auto it = c.entries.begin(); it != c.entries.end(); ++it)
      if (it->second.get() != keep &&
          (victim == c.entries.end() || it->second->last_used < victim->second->last_used))
        victim = it;
    if (victim == c.entries.end()) return;
    c.bytes -= victim->second->bytes;
    if (support::debug_level() >= 1)
      std::fprintf(stderr, "kiln: executable cache: evicted an executable of %lld bytes (%lld of %lld bytes in use)\n",
                   (long long)victim->second->bytes, (long long)c.bytes, (long long)c.budget);
    c.entries.erase(victim);
    c.generation++;
    runtime::counters().executables_evicted++;
  }
}

}  // namespace

std::shared_ptr<const CompiledGraph> cache_lookup(runtime::Device* device, const ir::Graph& graph, bool fusion,
                                                  const std::string& variant) {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  const auto* e = find_locked(c, device, graph, fusion, variant);
  if (!e) return nullptr;
  (*e)->last_used = ++c.tick;
  return *e;
}

std::shared_ptr<const CompiledGraph> cache_insert(std::shared_ptr<const CompiledGraph> e) {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  if (const auto* existing = find_locked(c, e->device, e->graph, e->fusion, e->variant)) {
    (*existing)->last_used = ++c.tick;
    return *existing;
  }
  if (e->bytes > c.budget) {
    if (support::debug_level() >= 1)
      std::fprintf(stderr, "kiln: executable cache: an executable of %lld bytes exceeds the budget of %lld bytes; it runs uncached\n",
                   (long long)e->bytes, (long long)c.budget);
    return e;
  }
  e->last_used = ++c.tick;
  c.entries.emplace(key(e->graph, e->fusion), e);
  c.bytes += e->bytes;
  evict_locked(c, e.get());
  return e;
}

bool cache_reuse(const CompiledGraph& e, uint64_t* generation) {
  Cache& c = cache();
  if (*generation != c.generation.load(std::memory_order_acquire)) {
    std::lock_guard<std::mutex> lock(c.mu);
    auto range = c.entries.equal_range(key(e.graph, e.fusion));
    bool cached = false;
    for (auto it = range.first; it != range.second; ++it) cached = cached || it->second.get() == &e;
    if (!cached) return false;
    *generation = c.generation.load(std::memory_order_relaxed);
  }
  e.last_used.store(++c.tick, std::memory_order_relaxed);
  runtime::counters().executable_cache_hits++;
  return true;
}

void cache_clear() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  c.generation++;
  c.entries.clear();
  c.bytes = 0;
}

void cache_drop_if(const std::function<bool(const CompiledGraph&)>& drop) {
  std::vector<std::shared_ptr<const CompiledGraph>> gone;  // destroyed after the lock is released
  {
    Cache& c = cache();
    std::lock_guard<std::mutex> lock(c.mu);
    for (auto it = c.entries.begin(); it != c.entries.end();) {
      if (!drop(*it->second)) {
        ++it;
        continue;
      }
      c.bytes -= it->second->bytes;
      gone.push_back(std::move(it->second));
      it = c.entries.erase(it);
    }
    if (!gone.empty()) c.generation++;
  }
}

void cache_set_budget(int64_t bytes) {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  c.budget = bytes;
  evict_locked(c, nullptr);
}

int64_t cache_budget() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  return c.budget;
}

int64_t cache_bytes() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  return c.bytes;
}

}  // namespace kiln::replay

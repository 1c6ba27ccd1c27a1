#include "replay/executable_cache.h"

#include <mutex>
#include <unordered_map>

namespace kiln::replay {
namespace {

struct Cache {
  std::mutex mu;
  std::unordered_multimap<uint64_t, std::shared_ptr<const CompiledGraph>> entries;
};

Cache& cache() {
  static Cache* c = new Cache();  // never destroyed: executables may outlive static teardown
  return *c;
}

uint64_t key(const ir::Graph& g, bool fusion) { return g.structural_hash() ^ (uint64_t(fusion) << 63); }

std::shared_ptr<const CompiledGraph> find_locked(Cache& c, runtime::Device* d, const ir::Graph& g, bool fusion) {
  auto range = c.entries.equal_range(key(g, fusion));
  for (auto it = range.first; it != range.second; ++it)
    if (it->second->device == d && it->second->fusion == fusion && it->second->graph == g) return it->second;
  return nullptr;
}

}  // namespace

std::shared_ptr<const CompiledGraph> cache_lookup(runtime::Device* device, const ir::Graph& graph, bool fusion) {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  return find_locked(c, device, graph, fusion);
}

std::shared_ptr<const CompiledGraph> cache_insert(std::shared_ptr<const CompiledGraph> e) {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  if (auto existing = find_locked(c, e->device, e->graph, e->fusion)) return existing;
  c.entries.emplace(key(e->graph, e->fusion), e);
  return e;
}

void cache_clear() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  c.entries.clear();
}

}  // namespace kiln::replay

// The in-memory cache of compiled graphs: one entry per (device, graph structure, pass options),
// looked up by the graph's structural hash and confirmed by comparing the whole graph, so a hash
// collision never runs the wrong code. The cache holds at most a budget of device bytes (each
// entry counts its arena, at least kMinEntryBytes): inserting beyond it drops the least recently
// used entries (counters().executables_evicted); an entry larger than the budget is not cached.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ir/graph.h"
#include "runtime/device.h"

namespace kiln::replay {

// A graph compiled and loaded on one device: what a replay needs.
// A process-unique number for each executable (profiles tell executables apart by it).
uint64_t new_executable_id();

struct CompiledGraph {
  uint64_t id = new_executable_id();
  runtime::Device* device = nullptr;
  ir::Graph graph;  // compared in full on lookup
  bool fusion = true;  // the pass option it was compiled with
  std::string variant;  // "" or the symbolic template it was marked by (compile_or_replay.h)
  std::shared_ptr<runtime::Executable> exe;
  std::vector<ir::BufferDesc> buffers;
  std::vector<int> outputs;  // buffer of each graph output
  std::vector<ir::ParamDesc> params;  // how each param value is passed (ir/params.h)
  int64_t bytes = 0;         // what it counts against the cache's budget
  mutable std::atomic<uint64_t> last_used{0};  // the cache's clock at its latest use (LRU)
};

inline constexpr int64_t kMinEntryBytes = 64 << 10;

// The entry for `graph` on `device` compiled with `fusion`, or nullptr.
std::shared_ptr<const CompiledGraph> cache_lookup(runtime::Device* device, const ir::Graph& graph, bool fusion,
                                                  const std::string& variant = "");
// Adds an entry; returns the one now cached (an equal entry added meanwhile by another thread
// wins, so every caller shares one executable).
std::shared_ptr<const CompiledGraph> cache_insert(std::shared_ptr<const CompiledGraph> e);
// For a caller that kept an executable from an earlier lookup (the frontend's realize shortcut,
// which recognizes a repeated graph without rebuilding it): true when `e` is still cached, in
// which case it counts as a cache hit and as used. `generation` is the caller's note of the
// cache's state when it last checked (start at 0): while nothing was evicted or cleared since,
// the answer costs two atomic operations and no lock.
bool cache_reuse(const CompiledGraph& e, uint64_t* generation);
// Drops every entry (tests use it to force recompiles).
void cache_clear();
// Drops the entries `drop` selects (those of a process group that is gone: nothing can run them).
void cache_drop_if(const std::function<bool(const CompiledGraph&)>& drop);
// The budget (initially support::options().cache_bytes); setting it evicts down to it.
void cache_set_budget(int64_t bytes);
int64_t cache_budget();
int64_t cache_bytes();  // bytes the entries count now

}  // namespace kiln::replay

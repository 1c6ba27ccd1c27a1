#include "runtime/engine.h"

#include <chrono>
#include <cstdio>
#include <mutex>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "passes/pipeline.h"
#include "runtime/stats.h"

namespace kiln::runtime {
namespace {

struct Cache {
  std::mutex mu;
  std::unordered_multimap<uint64_t, std::shared_ptr<const CompiledGraph>> entries;
};

Cache& cache() {
  static Cache* c = new Cache();  // never destroyed: executables may outlive static teardown
  return *c;
}

std::shared_ptr<const CompiledGraph> lookup(Device* d, uint64_t h, const ir::Graph& g) {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  auto range = c.entries.equal_range(h);
  for (auto it = range.first; it != range.second; ++it)
    if (it->second->device == d && it->second->graph == g) return it->second;
  return nullptr;
}

double ms_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t).count();
}

int debug_level() {
  const char* d = std::getenv("KILN_DEBUG");
  return d ? std::atoi(d) : 0;
}

}  // namespace

void clear_executable_cache() {
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  c.entries.clear();
}

absl::StatusOr<std::shared_ptr<const CompiledGraph>> compile_graph(Device* device, const ir::Graph& graph) {
  if (!device) return absl::FailedPreconditionError("no device");
  passes::Options opts = passes::Options::from_env();
  auto t0 = std::chrono::steady_clock::now();
  uint64_t h = graph.structural_hash() ^ (uint64_t(opts.fusion) << 63);
  if (auto e = lookup(device, h, graph)) {
    counters().executable_cache_hits++;
    return e;
  }
  auto compiled = passes::compile_graph(graph, device->target(), opts);
  if (!compiled.ok()) return compiled.status();
  auto exe = device->compile(compiled->program);
  if (!exe.ok()) return exe.status();
  if (!compiled->dump_prefix.empty()) {
    std::vector<std::string> src = (*exe)->sources();
    for (size_t i = 0; i < src.size(); ++i)
      passes::write_dump(absl::StrCat(compiled->dump_prefix, "kernel", i, ".", device->name(), ".txt"), src[i]);
  }
  if (opts.debug >= 4)
    for (const std::string& s : (*exe)->sources()) std::fprintf(stderr, "kiln: --- source ---\n%s\n", s.c_str());
  auto e = std::make_shared<CompiledGraph>();
  e->device = device;
  e->graph = graph;
  e->exe = std::move(*exe);
  e->buffers = compiled->program.buffers;
  e->outputs = compiled->program.outputs;
  counters().executables_built++;
  if (opts.debug >= 1)
    std::fprintf(stderr, "kiln: compiled %d kernel(s) for %s in %.3f ms\n", e->exe->kernels_per_run(),
                 device->name().c_str(), ms_since(t0));
  Cache& c = cache();
  std::lock_guard<std::mutex> lock(c.mu);
  c.entries.emplace(h, e);
  return std::shared_ptr<const CompiledGraph>(e);
}

absl::StatusOr<std::vector<std::shared_ptr<Buffer>>> run_compiled(const CompiledGraph& g,
                                                                  const std::vector<std::shared_ptr<Buffer>>& inputs) {
  auto t1 = std::chrono::steady_clock::now();
  // Fresh output storage on every run: results a caller holds are never overwritten.
  std::vector<std::shared_ptr<Buffer>> out_bufs;
  std::vector<Buffer*> out_raw, in_raw;
  for (const ir::BufferDesc& b : g.buffers) {
    if (b.kind != ir::BufferKind::kOutput) continue;
    auto buf = g.device->alloc(b.bytes());
    if (!buf.ok()) return buf.status();
    out_raw.push_back(buf->get());
    out_bufs.push_back(*std::move(buf));
  }
  in_raw.reserve(inputs.size());
  for (const auto& b : inputs) in_raw.push_back(b.get());
  if (absl::Status s = g.exe->run(in_raw, out_raw); !s.ok()) return s;
  counters().graphs_realized++;
  counters().kernels_launched += g.exe->kernels_per_run();
  if (debug_level() >= 1)
    std::fprintf(stderr, "kiln: realize on %s: %d kernel(s), run %.3f ms\n", g.device->name().c_str(),
                 g.exe->kernels_per_run(), ms_since(t1));
  std::vector<std::shared_ptr<Buffer>> result;
  result.reserve(g.outputs.size());
  for (int b : g.outputs) {
    const ir::BufferDesc& d = g.buffers[b];
    result.push_back(d.kind == ir::BufferKind::kInput ? inputs[d.index] : out_bufs[d.index]);
  }
  return result;
}

absl::StatusOr<std::vector<std::shared_ptr<Buffer>>> run_graph(Device* device, const ir::Graph& graph,
                                                               const std::vector<std::shared_ptr<Buffer>>& inputs) {
  auto g = compile_graph(device, graph);
  if (!g.ok()) return g.status();
  return run_compiled(**g, inputs);
}

}  // namespace kiln::runtime

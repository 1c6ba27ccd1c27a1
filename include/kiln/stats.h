// Process-wide counters that tests and benchmarks read.
#pragma once

#include <cstdint>
#include <string>

namespace kiln {

struct Stats {
  int64_t graphs_realized = 0;        // realize() calls that ran a graph
  int64_t executables_built = 0;      // graphs compiled into an executable (cache misses)
  int64_t executable_cache_hits = 0;  // graphs served from the in-memory executable cache
  int64_t kernels_compiled = 0;       // kernels turned into device code by a compiler
  int64_t kernel_disk_cache_hits = 0; // kernels loaded from the on-disk binary cache
  int64_t kernels_launched = 0;       // kernel launches (dispatches) executed
  int64_t bytes_allocated = 0;        // device bytes allocated (buffers and arenas)
  std::string to_string() const;
};

Stats stats();
void reset_stats();

}  // namespace kiln

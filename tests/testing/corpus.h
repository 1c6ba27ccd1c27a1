// The graphs the op, fusion and convolution suites capture (ctest's cuda_corpus fixture runs them
// with KILN_DUMP_DIR set and passes the folders, ':'-separated, in $KILN_CUDA_CORPUS): every
// gNNN_00_input.txt under them, in name order, parsed. Compile tests for targets without a
// device here (CUDA, HIP) go through all of them.
#pragma once

#include <string>
#include <vector>

#include "ir/graph.h"

namespace kiln::testing {

struct CorpusGraph {
  std::string path;
  ir::Graph graph;
};

// The parsed graphs under `dirs`; a file that does not parse is added to `failures`.
std::vector<CorpusGraph> corpus_graphs(const std::string& dirs, std::vector<std::string>* failures);

}  // namespace kiln::testing

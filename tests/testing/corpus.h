// The graphs the op, fusion and convolution suites capture (ctest's cuda_corpus fixture runs them
// with KILN_DUMP_DIR set and passes the folders, ':'-separated, in $KILN_CUDA_CORPUS): every
// gNNN_00_input.txt under them, in name order, parsed. Compile tests for targets without a
// device here (CUDA, HIP) go through all of them.
#pragma once

#include <cstdint>
#include <functional>
#include <set>
#include <string>
#include <vector>

#include "codegen/c_family/gpu_program.h"
#include "ir/graph.h"
#include "ir/program.h"
#include "ir/target_info.h"

namespace kiln::testing {

struct CorpusGraph {
  std::string path;
  ir::Graph graph;
};

// The parsed graphs under `dirs`; a file that does not parse is added to `failures`.
std::vector<CorpusGraph> corpus_graphs(const std::string& dirs, std::vector<std::string>* failures);

// Every graph under `dirs` planned on `target`, fused and unfused: fn(what, program), `what`
// naming the file and the mode; a graph that does not parse or plan goes to `failures`. Returns
// how many graphs there were.
int for_each_planned(const std::string& dirs, const ir::TargetInfo& target, std::vector<std::string>* failures,
                     const std::function<void(const std::string& what, const ir::Program& p)>& fn);

// What of a rendered CUDA/HIP module is worth compiling: its preamble followed by the kernels whose
// text (codegen::gpu::canonical_text) is not in `seen`, which receives them; empty when
// every kernel was seen. The suites render the same kernel in many graphs, and a long chain
// unfused renders one kernel per op: compiling each distinct kernel once covers the corpus in a
// fraction of the compiler's time.
std::string unseen_kernels(const codegen::gpu::RenderedProgram& r, std::set<uint64_t>* seen);

}  // namespace kiln::testing

#include "testing/corpus.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "passes/pipeline.h"
#include "runtime/disk_cache.h"

namespace kiln::testing {

std::vector<CorpusGraph> corpus_graphs(const std::string& dirs, std::vector<std::string>* failures) {
  std::vector<CorpusGraph> out;
  for (absl::string_view dir : absl::StrSplit(dirs, ':', absl::SkipEmpty())) {
    std::error_code ec;
    std::vector<std::filesystem::path> inputs;
    for (const auto& e : std::filesystem::directory_iterator(std::string(dir), ec)) {
      const std::string name = e.path().filename().string();
      if (name.size() > 13 && name.compare(name.size() - 13, 13, "_00_input.txt") == 0) inputs.push_back(e.path());
    }
    std::sort(inputs.begin(), inputs.end());
    for (const auto& path : inputs) {
      std::ifstream in(path);
      std::stringstream ss;
      ss << in.rdbuf();
      auto g = ir::parse(ss.str());
      if (!g.ok()) {
        failures->push_back(absl::StrCat(path.string(), ": does not parse: ", g.status().message()));
        continue;
      }
      out.push_back({path.string(), *std::move(g)});
    }
  }
  return out;
}

int for_each_planned(const std::string& dirs, const ir::TargetInfo& target, std::vector<std::string>* failures,
                     const std::function<void(const std::string& what, const ir::Program& p)>& fn) {
  int graphs = 0;
  for (const CorpusGraph& c : corpus_graphs(dirs, failures)) {
    ++graphs;
    for (bool fusion : {true, false}) {
      passes::Options opts;
      opts.fusion = fusion;
      const std::string what = absl::StrCat(c.path, fusion ? " (fused)" : " (unfused)");
      auto planned = passes::compile_graph(c.graph, target, opts);
      if (!planned.ok()) {
        failures->push_back(absl::StrCat(what, ": passes failed: ", planned.status().message()));
        continue;
      }
      fn(what, planned->program);
    }
  }
  return graphs;
}

std::string unseen_kernels(const codegen::gpu::RenderedProgram& r, std::set<uint64_t>* seen) {
  // Kernels with text of their own (not twins), in module order: each runs to the next one's start.
  std::vector<const codegen::gpu::KernelSource*> own;
  for (const codegen::gpu::KernelSource& k : r.kernels)
    if (k.twin < 0) own.push_back(&k);
  if (own.empty()) return "";
  const std::string& m = r.module_source;
  std::string out = m.substr(0, own[0]->offset);
  bool any = false;
  for (size_t i = 0; i < own.size(); ++i) {
    const size_t begin = own[i]->offset, end = i + 1 < own.size() ? own[i + 1]->offset : m.size();
    const std::string text = m.substr(begin, end - begin);
    if (!seen->insert(runtime::stable_hash64(codegen::gpu::canonical_text(text, *own[i]))).second) continue;
    out += text;
    any = true;
  }
  return any ? out : "";
}

}  // namespace kiln::testing

#include "testing/corpus.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

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

}  // namespace kiln::testing

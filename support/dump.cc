#include "support/dump.h"

#include <sys/stat.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include "support/options.h"

namespace kiln::support {

void write_dump(const std::string& path, const std::string& text) {
  std::ofstream f(path);
  f << text;
  if (!f) {
    static std::atomic<bool> warned{false};
    if (!warned.exchange(true)) std::fprintf(stderr, "kiln: cannot write dump file %s\n", path.c_str());
  }
}

bool make_dump_dir(const std::string& dir) {
  return ::mkdir(dir.c_str(), 0755) == 0 || errno == EEXIST;
}

bool write_graph(const std::string& dot_path, const std::string& dot, size_t nodes, bool verbose) {
  constexpr size_t kMaxRenderedNodes = 400;
  write_dump(dot_path, dot);
  if (nodes > kMaxRenderedNodes) {
    if (verbose) std::fprintf(stderr, "kiln: %s: %zu nodes, not rendered to SVG (run dot -Tsvg on it)\n", dot_path.c_str(), nodes);
    return false;
  }
  if (!options().dump_svg || std::system("command -v dot >/dev/null 2>&1") != 0) return false;
  const std::string svg = dot_path.size() > 4 && dot_path.substr(dot_path.size() - 4) == ".dot"
                              ? dot_path.substr(0, dot_path.size() - 4) + ".svg"
                              : dot_path + ".svg";
  const std::string cmd = "dot -Tsvg '" + dot_path + "' -o '" + svg + "' 2>/dev/null";
  if (std::system(cmd.c_str()) != 0) {
    std::fprintf(stderr, "kiln: dot failed for %s\n", dot_path.c_str());
    return false;
  }
  return true;
}

}  // namespace kiln::support

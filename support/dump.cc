#include "support/dump.h"

#include <sys/stat.h>

#include <atomic>
#include <cerrno>
#include <cstdio>
#include <fstream>

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

}  // namespace kiln::support

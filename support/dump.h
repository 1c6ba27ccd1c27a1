// Writing debug dumps (KILN_DUMP_DIR): every layer that has something to show writes through here.
#pragma once

#include <string>

namespace kiln::support {

// Writes `text` to `path`; a failure is reported on stderr once per process (dumps never fail a
// compile or a realize).
void write_dump(const std::string& path, const std::string& text);

// Creates `dir` when missing (one level); false when it cannot be made.
bool make_dump_dir(const std::string& dir);

}  // namespace kiln::support

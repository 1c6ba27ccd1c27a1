// Writing debug dumps (KILN_DUMP_DIR): every layer that has something to show writes through here.
#pragma once

#include <string>

namespace kiln::support {

// Writes `text` to `path`; a failure is reported on stderr once per process (dumps never fail a
// compile or a realize).
void write_dump(const std::string& path, const std::string& text);

// Writes Graphviz text to `dot_path` and renders it beside it as SVG (same name, .svg) with
// Graphviz's `dot` when installed. Graphs of more than 400 nodes keep only their .dot (Graphviz
// takes minutes on thousands of nodes): said on stderr when `verbose`. True when an SVG was made.
bool write_graph(const std::string& dot_path, const std::string& dot, size_t nodes, bool verbose);

// Creates `dir` when missing (one level); false when it cannot be made.
bool make_dump_dir(const std::string& dir);

}  // namespace kiln::support

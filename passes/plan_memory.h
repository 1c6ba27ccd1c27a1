// plan_memory: gives every intermediate buffer an offset in one arena, reusing the bytes of
// buffers whose last reader has run, and writing in place over a buffer that dies in the very
// elementwise kernel that defines the new one when that kernel reads each element exactly where
// it writes it. Sets Program::arena_bytes (the planned peak) and Program::unplanned_bytes (the
// sum without reuse).
#pragma once

#include "ir/program.h"

namespace kiln::passes {

inline constexpr int64_t kArenaAlignment = 256;

void plan_memory(ir::Program* p);

}  // namespace kiln::passes

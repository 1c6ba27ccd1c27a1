// Builds the Program that realizing some tensors would run, without running it.
#pragma once

#include <gtest/gtest.h>

#include "frontend/capture.h"
#include "ir/program.h"
#include "kiln/kiln.h"
#include "passes/pipeline.h"

namespace kiln::testing {

inline ir::TargetInfo cpu_target() {
  ir::TargetInfo t;
  t.parallelism = 2;
  t.max_fused_row = int64_t(1) << 40;
  return t;
}

inline ir::TargetInfo gpu_target() {
  ir::TargetInfo t;
  t.name = "gpu";
  t.parallelism = 132;
  t.is_gpu = true;
  t.max_workgroup = 1024;
  t.subgroup_size = 32;
  t.max_fused_row = 16384;
  return t;
}

inline ir::Program program_of(const std::vector<Tensor>& outs, const ir::TargetInfo& t = cpu_target(),
                              bool fusion = true) {
  ir::Graph g = detail::capture(outs, nullptr);
  passes::Options o;
  o.fusion = fusion;
  auto c = passes::compile_graph(g, t, o);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? c->program : ir::Program{};
}

}  // namespace kiln::testing

// For tests of what the renderers make of a computation, without running it: the Program some
// tensors plan into on a given target, and a fixture for tests that need a default device only to
// hold their inputs (any device will do: nothing runs).
#pragma once

#include <gtest/gtest.h>

#include <memory>
#include <vector>

#include "frontend/capture.h"
#include "kiln/kiln.h"
#include "passes/pipeline.h"

namespace kiln::testing {

// The Program realizing `outs` on `target` would run (with fusion, unless `fusion` is false).
inline ir::Program planned(const std::vector<Tensor>& outs, const ir::TargetInfo& target, bool fusion = true) {
  std::vector<std::shared_ptr<runtime::Buffer>> bufs;
  passes::Options opts;
  opts.fusion = fusion;
  auto c = passes::compile_graph(detail::capture(outs, &bufs), target, opts);
  EXPECT_TRUE(c.ok()) << c.status();
  return c.ok() ? c->program : ir::Program{};
}

class NeedsDefaultDevice : public ::testing::Test {
 protected:
  void SetUp() override {
    try {
      (void)default_device();
    } catch (const Error& e) {
      GTEST_SKIP() << "no default device to hold the inputs: " << e.what();
    }
  }
};

}  // namespace kiln::testing

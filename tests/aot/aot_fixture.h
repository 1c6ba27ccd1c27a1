// Shared by the ahead-of-time tests: two exported models (an MLP with a captured weight, and a
// softmax), a scratch folder, and running kilnc as a child process (a fresh process: nothing
// compiled or cached in memory).
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "artifact/artifact.h"
#include "artifact/compile.h"
#include "kiln/kiln.h"

namespace kiln::testing {

struct Example {
  std::string name;
  Jit::Fn fn;
  std::vector<Tensor> inputs;
  ExportNames names;
};

// mlp: relu(x @ w1 + b) @ w2 -> softmax, w1 captured (a constant), x, b, w2 arguments.
// softmax: softmax over the last axis of a [64, 100] tensor.
std::vector<Example> examples();

// A fresh folder under the test's temporary directory.
std::string scratch_dir(const std::string& name);

// Compiles `e` for `targets` and writes it to `path`.
artifact::Artifact compile_to(const Example& e, const std::string& targets, const std::string& path);

// Runs `kilnc <args>` with stderr folded into stdout; returns the exit status, fills `out`.
int run_kilnc(const std::string& args, std::string* out);

// Raw bytes of a realized tensor.
std::string bytes_of(const Tensor& t);

}  // namespace kiln::testing

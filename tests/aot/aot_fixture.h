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
  InputDims dims = {};  // symbolic dimensions (empty: every dim fixed)
};

// mlp: relu(x @ w1 + b) @ w2 -> softmax, w1 captured (a constant), x, b, w2 arguments.
// softmax: softmax over the last axis of a [64, 100] tensor.
std::vector<Example> examples();

// A fresh folder under the test's temporary directory.
std::string scratch_dir(const std::string& name);

// Compiles `e` for `targets` and writes it to `path`.
artifact::Artifact compile_to(const Example& e, const std::string& targets, const std::string& path);

// Where kilnc is: beside this test binary (the GPU bundle's bin/ holds every executable), else
// $KILN_KILNC, else the build tree's kilnc (KILNC_PATH). Empty when none of them exists.
std::string kilnc_path();

// Runs `kilnc <args>` with stderr folded into stdout; returns the exit status, fills `out`
// (-1 and the places looked in when no kilnc is found).
int run_kilnc(const std::string& args, std::string* out);

// Why no kiln device is available on this machine (each known backend's reason), or "" when
// default_device() is one. Tests that realize tensors skip with it (KILN_AOT_REQUIRE_DEVICE):
// the GPU bundle has no CPU backend, and a machine without a GPU may have no device at all.
std::string no_device_reason();

#define KILN_AOT_REQUIRE_DEVICE()                                      \
  do {                                                                 \
    std::string kiln_no_device_ = ::kiln::testing::no_device_reason(); \
    if (!kiln_no_device_.empty()) GTEST_SKIP() << kiln_no_device_;    \
  } while (0)

// Raw bytes of a realized tensor.
std::string bytes_of(const Tensor& t);

}  // namespace kiln::testing

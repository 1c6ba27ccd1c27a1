// Differential checking of a device against the reference interpreter, a minimizer for failing
// graphs, and the fuzzing loop that kiln_fuzz and the ctest entries run.
//
// A Case is a graph plus concrete input values. The checker evaluates every node with the
// interpreter, derives from those values a bound on the error a correct device may make at
// each node (error_bounds: per op and dtype, from the magnitudes the node and its operands
// reach), runs the graph on the device through the same path realize() uses
// (replay::run_graph), and compares each output element with that bound.
#pragma once

#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "fuzz/graph_gen.h"
#include "ir/graph.h"
#include "ir/interpreter.h"

namespace kiln::runtime {
class Device;
}

namespace kiln::fuzz {

struct Case {
  ir::Graph graph;
  std::vector<ir::HostTensor> inputs;  // by input position
};

// How far a correct device may stray from the correctly rounded result of each op.
struct DevicePrecision {
  double transcendental_ulps = 16;  // exp, log, tanh, erf, sigmoid, pow, sin, cos (compute dtype)
  double divide_ulps = 1;           // division, reciprocal, sqrt
  double sincos_abs = 0;            // extra absolute error of sin/cos (Vulkan allows 2^-11)
  bool flushes_denormals = false;   // subnormal results may read as zero
  bool f64_transcendentals_in_f32 = false;  // f64 exp/log/sin/... computed in f32 (GLSL)
  double safety = 4;                // the bound is multiplied by this before comparing
  // The CPU computes with LLVM's correctly rounded arithmetic and kiln's polynomial
  // approximations; GPU APIs document looser transcendental and division precision.
  static DevicePrecision for_device(const std::string& name);
};

enum class Outcome { kPass, kMismatch, kDeviceError, kHarnessError };
const char* outcome_name(Outcome o);

struct CheckResult {
  Outcome outcome = Outcome::kPass;
  std::string detail;         // what differed, or the error
  int outputs_checked = 0;
  int outputs_unbounded = 0;  // outputs whose error could not be bounded (not compared)
  double worst_ratio = 0;     // largest |error| / allowed over the compared elements
};

// Runs a case on a device and returns its outputs as host tensors.
using Runner = std::function<absl::StatusOr<std::vector<ir::HostTensor>>(const Case&)>;
Runner device_runner(runtime::Device* device);

// The value of every node of `c` (index = node id), from the interpreter.
absl::StatusOr<std::vector<ir::HostTensor>> interpret_all(const Case& c);

// Absolute error bound of every node, given the values of all nodes (infinity = unbounded).
// The documented reasons a bound may be infinite, for which an output is reported but not
// compared: a discontinuous op (comparison, floor, ceil, argmax/argmin, not/and/or, a float to
// integer cast) or a `where` condition over inexact operands; an integer result that rounding may
// move; a singularity within the allowed error (a divisor, log or sqrt argument, pow base whose
// interval reaches zero); an infinity times a factor whose interval straddles zero; a result
// whose allowed error reaches the dtype's largest value. Any other infinite bound is a hole in
// the error model: `unmodeled` (when given) marks the nodes that depend on an op the model does
// not know, and check_case fails such an output instead of skipping it.
//
// `relative` (when given) receives, per node, the part of its bound that scales with the node's
// own magnitude: bound = rest + relative * max|value|, where the terms in `relative` (the
// rounding of the stored result, a function's own error, exp's and pow's propagation) hold for
// each element with that element's magnitude. check_case allows element k
// rest + relative * |value_k| (times the safety factor), so a small element of an output with a
// large one is checked at its own scale.
std::vector<double> error_bounds(const ir::Graph& g, const std::vector<ir::HostTensor>& values,
                                 const DevicePrecision& prec, std::vector<char>* unmodeled = nullptr,
                                 std::vector<double>* relative = nullptr);

CheckResult check_case(const Case& c, const Runner& run, const DevicePrecision& prec);

// The graph behind `outputs` with the current values of its inputs.
absl::StatusOr<Case> capture_case(const std::vector<Tensor>& outputs);

struct MinimizeOptions {
  int max_checks = 400;      // device runs the minimizer may spend
  double max_seconds = 120;  // and wall time
};

// Shrinks a case that fails with `outcome` while it keeps failing the same way: keeps one
// output, replaces subgraphs by inputs that hold the interpreter's values, bypasses ops whose
// operand has the result's shape and dtype, and shrinks dimension sizes (with new data).
// `log` (optional) receives one line per accepted step.
Case minimize(const Case& c, Outcome outcome, const Runner& run, const DevicePrecision& prec,
              const MinimizeOptions& opts, std::string* log = nullptr);

// A float rounded to the precision of `t` (integers unchanged).
double round_to_dtype(DType t, double v);
// Random values of `dtype` (floats in [-2, 2), integers in [-9, 9]), never all zeros.
ir::HostTensor random_host(DType dtype, const Shape& shape, std::mt19937_64& rng);

// The IR text of the case's graph followed by its inputs (values in full when small).
std::string describe_case(const Case& c, int64_t max_values = 64);

struct FuzzOptions {
  uint64_t seed = 0;
  int64_t count = 500;
  int64_t only_index = -1;  // run just this graph of the run
  GenOptions gen;
  bool minimize = true;
  MinimizeOptions min;
  int max_failures = 3;     // stop the run after this many failing graphs
  bool verbose = false;     // one line per graph
  std::string dump_dir;     // when set, each graph's IR text is written to <dir>/graph_<i>.ir
  // Called before each graph is checked with a description of it (crash handlers print it).
  std::function<void(const std::string&)> on_case;
};

struct FuzzStats {
  int64_t graphs = 0;
  int64_t failures = 0;
  int64_t nodes = 0;
  int64_t outputs_checked = 0;
  int64_t outputs_unbounded = 0;
  double worst_ratio = 0;
  double seconds = 0;
};

// Generates, checks and (on failure) minimizes `opts.count` graphs on `device`, printing
// failures and a summary to `out`.
FuzzStats run_fuzz(runtime::Device* device, const FuzzOptions& opts, std::FILE* out);

}  // namespace kiln::fuzz

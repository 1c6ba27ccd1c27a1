// Device-side control flow: loops and branches recorded like any other op.
//
// `while_loop` and `cond` call their functions once, on placeholder tensors, and record what
// they compute as the regions of one graph node; nothing runs then. When a result is needed the
// whole loop compiles with the rest of the graph and runs on the device: on CUDA an entire loop of
// any trip count is one conditional node of the executable's CUDA graph (no host round trip per
// trip), on Vulkan the body is recorded once and its dispatches are skipped by the device once the
// condition fails, on the CPU it is a native loop.
//
// Tensors the functions read that are not their arguments (weights, biases, any outer value) are
// captured: computed once before the loop, then read by every trip; so is work a loop body records
// that does not depend on the carried values (it is the same on every trip). Constants stay compiled into
// the regions (unlike the top level, where float constants are run-time params).
//
//   // Newton's method for sqrt(a), until the step is below 1e-6 (at most 100 trips):
//   auto r = kiln::while_loop(
//       [](const std::vector<kiln::Tensor>& v) { return kiln::abs(v[0] * v[0] - v[1]).max() > 1e-6f; },
//       [](const std::vector<kiln::Tensor>& v) { return std::vector<kiln::Tensor>{(v[0] + v[1] / v[0]) * 0.5, v[1]}; },
//       {x0, a}, {.max_trips = 100});
//
// Errors (kiln::Error, InvalidArgument, naming "while_loop" or "cond" and the name given, if any): a body returning another
// number of values than it carries, or a value of another dtype or shape than its carried value
// (the shapes of carried values cannot change between trips); a condition or predicate that is
// not a bool of one element; branches returning different dtypes or shapes; a function reading a
// value on the host (`to_vector`) while it is traced. At run time, a loop whose condition still
// holds after max_trips trips fails the realize with OutOfRange ("... maximum of N trips").
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "kiln/tensor.h"

namespace kiln {

using Values = std::vector<Tensor>;

struct WhileOptions {
  // At most this many trips of the body (0: no limit); a loop still going after them is an error.
  int64_t max_trips = 0;
};

// Runs `body` while `cond` holds, starting from `init`; returns the carried values after the
// last trip (`init` itself, unchanged, when cond fails at once). `name`, when given, is named in
// record-time errors ("while_loop 'newton': ..."), for programs with several loops.
Values while_loop(const std::function<Tensor(const Values&)>& cond, const std::function<Values(const Values&)>& body,
                  const Values& init, WhileOptions options = {}, const std::string& name = "");

// then_fn(operands) where pred (a bool of one element) holds, else else_fn(operands); both must
// return values of the same dtypes and shapes. Only the branch taken runs: everything a branch
// function records belongs to it (what it reads from outside that was recorded before the call
// is computed once, before the branch).
// `name`, when given, is named in record-time errors ("cond 'clip': ...").
Values cond(const Tensor& pred, const std::function<Values(const Values&)>& then_fn,
            const std::function<Values(const Values&)>& else_fn, const Values& operands, const std::string& name = "");

}  // namespace kiln

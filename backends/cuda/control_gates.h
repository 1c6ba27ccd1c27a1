// The two kernels a CUDA graph with loops and branches uses to steer its conditional nodes
// (ir/program.h's kWhile / kIf steps). They are compiled into the program's module with its own
// kernels (compiler.cc), so loading a program compiles nothing, and they set the nodes' values
// on the device with cudaGraphSetConditional, which the driver resolves when it loads the module
// (a device-runtime call that needs no separate device linking).
//
//   kiln_loop_gate(handle, flag, trips, status, max_trips, first): the loop goes on while *flag;
//     `first` (before the loop) zeroes the trip count, the gate at the body's end counts a trip;
//     a flag still true after max_trips trips (max_trips > 0) stops the loop and sets *status to
//     max_trips, which the executable reads after the launch (an OutOfRange error).
//   kiln_branch_gate(then_handle, else_handle, flag, has_else): the then node runs when *flag,
//     the else node (a second IF node after it) when not.
#pragma once

namespace kiln::runtime::cuda {

inline constexpr const char* kLoopGate = "kiln_loop_gate";
inline constexpr const char* kBranchGate = "kiln_branch_gate";

// CUDA C of both kernels, appended to a module whose program has control steps.
inline constexpr const char* kControlGatesSource = R"(
extern "C" __device__ void cudaGraphSetConditional(unsigned long long handle, unsigned int value);
extern "C" __global__ void kiln_loop_gate(unsigned long long handle, const unsigned char* flag, unsigned long long* trips,
                                          unsigned long long* status, long long max_trips, int first) {
  bool go = flag[0] != 0;
  const unsigned long long t = first ? 0ull : trips[0] + 1ull;
  trips[0] = t;
  if (go && max_trips > 0 && t >= (unsigned long long)max_trips) {
    status[0] = (unsigned long long)max_trips;
    go = false;
  }
  cudaGraphSetConditional(handle, go ? 1u : 0u);
}
extern "C" __global__ void kiln_branch_gate(unsigned long long then_handle, unsigned long long else_handle,
                                            const unsigned char* flag, int has_else) {
  const bool go = flag[0] != 0;
  cudaGraphSetConditional(then_handle, go ? 1u : 0u);
  if (has_else) cudaGraphSetConditional(else_handle, go ? 0u : 1u);
}
)";

}  // namespace kiln::runtime::cuda

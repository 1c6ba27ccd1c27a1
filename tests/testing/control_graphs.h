// Graphs with loops shared by the tests of several layers (IR, AOT): kept once so that they
// agree on what the loop computes.
#pragma once

namespace kiln::testing {

// x = 2x + w while sum(x) < 100 (x carried, w captured). From x = [1,1,1,1], w = [0,1,0,1]:
// [2,3,2,3] (10), [4,7,4,7] (22), [8,15,8,15] (46), [16,31,16,31] (94), [32,63,32,63].
inline constexpr const char* kDoublingLoop = R"(graph {
  %0 = input 0 : f32[4]
  %1 = input 1 : f32[4]
  %2 = while %0, %1 carried=1 max_trips=0 : bool[]
    cond graph {
      %0 = input 0 : f32[4]
      %1 = input 1 : f32[4]
      %2 = reduce_sum %0 axes=[0] : f32[1]
      %3 = reshape %2 : f32[]
      %4 = const 1e+02 : f32[]
      %5 = lt %3, %4 : bool[]
      output %5
    }
    body graph {
      %0 = input 0 : f32[4]
      %1 = input 1 : f32[4]
      %2 = const 2 : f32[4]
      %3 = mul %0, %2 : f32[4]
      %4 = add %3, %1 : f32[4]
      output %4
    }
  %3 = result %2 index=0 : f32[4]
  output %3
}
)";

}  // namespace kiln::testing

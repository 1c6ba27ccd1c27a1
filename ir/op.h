// The primitive operations of the graph IR (and the extra ones of the kernel IR).
#pragma once

#include <cstdint>
#include <string>

namespace kiln::ir {

enum class OpClass : uint8_t {
  kSource,    // input, const, iota, rand, randn, param
  kUnary,     // elementwise, one operand
  kBinary,    // elementwise, two operands of equal shape
  kTernary,   // where
  kReduce,    // reduce over axes, keeps reduced dims as size 1
  kMovement,  // reshape, permute, expand, slice, pad, concat, window
  kContract,  // dot, attention
  kKernel,    // kernel-IR only: load, valid, axis index
  kIndex,     // gather, scatter, segment_reduce: read / write positions held by an index operand
  kControl,   // while, if (nested regions), result (one value of either)
  kCollective,  // all_reduce, all_gather, ...: values exchanged between the ranks of a process group
};

// X(name, text, class, arity). Arity -1 = variadic (concat; attention takes 3 or 4).
// int_div / int_rem: integer division truncating toward zero and its remainder (the dividend's
// sign), as C's / and %; integer dtypes only (not bool). Every device defines the cases C leaves
// undefined: x / 0 = 0 and x % 0 = 0; MIN / -1 = MIN (wrapping) and MIN % -1 = 0.
#define KILN_IR_OPS(X)                          \
  X(Input, "input", kSource, 0)                 \
  X(Const, "const", kSource, 0)                 \
  X(Iota, "iota", kSource, 0)                   \
  X(Rand, "rand", kSource, 0)                   \
  X(Randn, "randn", kSource, 0)                 \
  X(Param, "param", kSource, 0)                 \
  X(Neg, "neg", kUnary, 1)                      \
  X(Exp, "exp", kUnary, 1)                      \
  X(Log, "log", kUnary, 1)                      \
  X(Sqrt, "sqrt", kUnary, 1)                    \
  X(Rsqrt, "rsqrt", kUnary, 1)                  \
  X(Abs, "abs", kUnary, 1)                      \
  X(Sin, "sin", kUnary, 1)                      \
  X(Cos, "cos", kUnary, 1)                      \
  X(Tanh, "tanh", kUnary, 1)                    \
  X(Sigmoid, "sigmoid", kUnary, 1)              \
  X(Erf, "erf", kUnary, 1)                      \
  X(Floor, "floor", kUnary, 1)                  \
  X(Ceil, "ceil", kUnary, 1)                    \
  X(Recip, "recip", kUnary, 1)                  \
  X(Not, "not", kUnary, 1)                      \
  X(Cast, "cast", kUnary, 1)                    \
  X(Add, "add", kBinary, 2)                     \
  X(Sub, "sub", kBinary, 2)                     \
  X(Mul, "mul", kBinary, 2)                     \
  X(Div, "div", kBinary, 2)                     \
  X(Pow, "pow", kBinary, 2)                     \
  X(Max, "max", kBinary, 2)                     \
  X(Min, "min", kBinary, 2)                     \
  X(Lt, "lt", kBinary, 2)                       \
  X(Le, "le", kBinary, 2)                       \
  X(Eq, "eq", kBinary, 2)                       \
  X(Ne, "ne", kBinary, 2)                       \
  X(And, "and", kBinary, 2)                     \
  X(Or, "or", kBinary, 2)                       \
  X(Where, "where", kTernary, 3)                \
  X(ReduceSum, "reduce_sum", kReduce, 1)        \
  X(ReduceMax, "reduce_max", kReduce, 1)        \
  X(ReduceMin, "reduce_min", kReduce, 1)        \
  X(ReduceProd, "reduce_prod", kReduce, 1)      \
  X(ArgMax, "argmax", kReduce, 1)               \
  X(ArgMin, "argmin", kReduce, 1)               \
  X(Reshape, "reshape", kMovement, 1)           \
  X(Permute, "permute", kMovement, 1)           \
  X(Expand, "expand", kMovement, 1)             \
  X(Slice, "slice", kMovement, 1)               \
  X(Pad, "pad", kMovement, 1)                   \
  X(Concat, "concat", kMovement, -1)            \
  X(Window, "window", kMovement, 1)             \
  X(Dot, "dot", kContract, 2)                   \
  X(Attention, "attention", kContract, -1)      \
  X(Load, "load", kKernel, 0)                   \
  X(Valid, "valid", kKernel, 0)                 \
  X(AxisIndex, "axis_index", kKernel, 0)         \
  X(Gather, "gather", kIndex, 2)                \
  X(Scatter, "scatter", kIndex, 3)              \
  X(While, "while", kControl, -1)               \
  X(If, "if", kControl, -1)                     \
  X(Result, "result", kControl, 1)               \
  X(SegmentReduce, "segment_reduce", kIndex, 2) \
  X(SegmentPos, "segment_pos", kKernel, 0)     \
  X(Collective, "collective", kCollective, 1)   \
  X(IntDiv, "int_div", kBinary, 2)              \
  X(IntRem, "int_rem", kBinary, 2)

enum class Op : uint8_t {
#define KILN_X(name, text, cls, arity) k##name,
  KILN_IR_OPS(KILN_X)
#undef KILN_X
};

const char* op_name(Op op);
OpClass op_class(Op op);
int op_arity(Op op);
bool op_from_name(const std::string& name, Op* out);

inline bool is_elementwise(Op op) {
  OpClass c = op_class(op);
  return c == OpClass::kUnary || c == OpClass::kBinary || c == OpClass::kTernary;
}
inline bool is_reduce(Op op) { return op_class(op) == OpClass::kReduce; }
inline bool is_movement(Op op) { return op_class(op) == OpClass::kMovement; }
inline bool is_comparison(Op op) {
  return op == Op::kLt || op == Op::kLe || op == Op::kEq || op == Op::kNe;
}
inline bool is_arg_reduce(Op op) { return op == Op::kArgMax || op == Op::kArgMin; }
inline bool is_gather(Op op) { return op == Op::kGather; }
inline bool is_segment(Op op) { return op == Op::kSegmentReduce; }
// A node with regions (while, if): its values are read through `result` nodes.
inline bool is_control(Op op) { return op == Op::kWhile || op == Op::kIf; }

// How a scatter combines an update with the value it lands on (graph ints[1]); how a
// segment_reduce folds a segment's rows (graph ints[0]: add, mul, max or min).
enum class ScatterMode : int64_t { kNone, kAdd, kMul, kMax, kMin };

// What a collective node does (graph ints[0]; ir/collective.h has the rest of its attributes).
enum class Collective : int64_t { kAllReduce, kAllGather, kReduceScatter, kBroadcast, kAllToAll };
inline bool is_collective(Op op) { return op == Op::kCollective; }

}  // namespace kiln::ir

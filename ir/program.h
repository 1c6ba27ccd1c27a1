// The kernel IR: what the scheduler produces and every backend consumes.
//
// A Program has buffers (inputs, outputs, arena-planned intermediates), kernels, and steps with
// explicit dependency edges. A Kernel iterates over `shape`; axes marked in `reduce` are the
// inner (reduction) axes, the rest are outer axes that backends parallelize over. Each expression
// node is evaluated either once per outer index ("outer level": it does not depend on reduce
// axes, e.g. a finished reduction) or once per full index ("inner level"). Reduce nodes fold an
// inner-level operand over the reduce axes into an outer-level value. A kernel with several
// reduce nodes (softmax, layer_norm) evaluates them in node order, one pass each.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/collective.h"
#include "ir/op.h"
#include "ir/params.h"
#include "ir/view.h"
#include "kiln/dtype.h"

namespace kiln::ir {

using KNodeId = int32_t;

// Kernel expression node. `op` reuses the graph ops:
//   load       buffer + map: the element at map(index) of buffer (0 where the map is masked)
//   load with an index operand (a gather; is_indexed_load): inputs = {j}, an i64 value in
//     [0, extent) (lowering clamps it); ints = {split, axis, extent}. map.views[split..] address
//     the gather's result G from the loop index; their flat result is unflattened over G (the
//     shape of map.views[split - 1] with dim `axis` = G's own extent there), coordinate `axis` is
//     replaced by j, and map.views[..split) map those coordinates to the source buffer.
//   valid      map: bool, whether map(index) is inside every mask
//   const      scalar
//   param      ints = {slot}: the value the host passes for param `slot` (Program::params; an
//     rng_key slot is read only as a rand/randn operand)
//   iota       map: the flat index map(index) as a value
//   rand/randn map + seed (ints[0]): the random value of flat index map(index); with an operand
//     (a param of kind rng_key), the keys are that param's value instead of the seed's
//   axis_index ints = {axis}: the loop index along a kernel axis (i64)
//   elementwise ops and cast: as in the graph IR
//   reduce_* / argmax / argmin: fold the operand over the kernel's reduce axes (argmax/argmin
//     return the position along the single reduce axis)
//   attention  inputs q, k, v[, bias] over kernel axes [B..., Sq, Dv, Sk, D] (reduce: Sk, D),
//     read at (b, sq, d), (b, sk, d), (b, sk, dv), (b, sq, sk); ints = {causal}, scalar = scale;
//     the graph op's value at (b, sq, dv), an outer-level value (only a fused-attention kernel
//     renders it: passes/attention.h decides where one exists)
//   segment_reduce  inputs lo, hi (i64), value; ints = {mode (ScatterMode), rows}: the fold of
//     `value` over the rows i of [clamp(lo, 0, rows), clamp(hi, that, rows)) in order, where value
//     is evaluated with every segment_pos node beneath it reading i (the identity when the range
//     is empty; ir/graph.h). Its value is an indexed load whose index is segment_pos. Renderers
//     emit the loop where the node is evaluated; a strategy may split it over threads.
//   segment_pos  i64: the row of the enclosing segment_reduce's loop (only beneath one)
struct KNode {
  Op op = Op::kConst;
  DType dtype = DType::kFloat32;
  std::vector<KNodeId> inputs;
  Scalar scalar;
  std::vector<int64_t> ints;
  int buffer = -1;
  IndexMap map;
  bool inner = false;  // depends on the reduce axes (computed by Kernel::finalize)

  bool operator==(const KNode& o) const {
    return op == o.op && dtype == o.dtype && inputs == o.inputs && scalar == o.scalar &&
           ints == o.ints && buffer == o.buffer && map == o.map;
  }
};

inline bool is_indexed_load(const KNode& n) { return n.op == Op::kLoad && !n.inputs.empty(); }
// The reduction a segment_reduce node folds with (its mode as reduce_sum / prod / max / min),
// and the elementwise op that combines two of its values.
inline Op segment_fold_op(const KNode& n) {
  switch (ScatterMode(n.ints[0])) {
    case ScatterMode::kMul: return Op::kReduceProd;
    case ScatterMode::kMax: return Op::kReduceMax;
    case ScatterMode::kMin: return Op::kReduceMin;
    default: return Op::kReduceSum;
  }
}
inline Op segment_combine_op(const KNode& n) {
  switch (segment_fold_op(n)) {
    case Op::kReduceProd: return Op::kMul;
    case Op::kReduceMax: return Op::kMax;
    case Op::kReduceMin: return Op::kMin;
    default: return Op::kAdd;
  }
}
// The shape over which an indexed access (load or store) with map `m` and ints {split, axis,
// extent} unflattens its position (see KNode).
Shape indexed_space(const IndexMap& m, const std::vector<int64_t>& ints);

// A store writes `value` at map(index). An indexed store (a scatter: index >= 0) addresses like
// an indexed load, with index and ints = {split, axis, extent} in place of the load's operand
// and ints; a kernel with one runs its reduce axes in order in one thread per outer index
// (Kernel::serial), so its read-modify-writes never race.
struct Store {
  int buffer = -1;
  IndexMap map;  // over the kernel shape; stride 0 on reduce axes for outer-level values
  KNodeId value = -1;
  KNodeId index = -1;
  std::vector<int64_t> ints;
  bool indexed() const { return index >= 0; }
};

// A matmul-shaped reduction: sum over k of lhs(.., m, k) * rhs(.., k, n). Backends may emit a
// tiled kernel for it; the generic loop nest is always a correct fallback.
struct Contraction {
  KNodeId reduce = -1;  // the reduce_sum node
  KNodeId lhs = -1, rhs = -1;  // the two factors (lhs independent of n_axis, rhs of m_axis)
  int m_axis = -1, n_axis = -1, k_axis = -1;
  bool tf32 = false;  // the dot allows TF32 operands (f32 only; see graph.h)
};

// A kernel axis whose extent is a multiple of a symbolic dimension (passes/symbolic.h): its code
// reads the dimension from param `slot` (an i64, Program::params) and multiplies it by `coef`
// wherever it needs the extent, so the same code serves every size; `Kernel::shape` holds the
// extent of the size the Program was planned for (coef * that size).
struct SymExtent {
  int slot = -1;  // -1: a fixed extent
  int64_t coef = 0;
  bool symbolic() const { return slot >= 0; }
  bool operator==(const SymExtent& o) const { return slot == o.slot && coef == o.coef; }
};

// How each kernel axis of a family of Programs scales with its symbols (passes/symbolic.h derives
// it; .kiln artifacts carry it).
struct SymbolicTemplate {
  int symbols = 0;
  // [kernel][axis] = {symbol, coefficient}: the axis extent is coefficient * the symbol's value;
  // symbol -1 for a fixed axis.
  std::vector<std::vector<std::pair<int, int64_t>>> axes;
  int marked() const;  // symbolic axes in all
};

struct Kernel {
  std::string name;
  Shape shape;
  std::vector<SymExtent> sym;  // per axis, or empty: every extent fixed
  std::vector<bool> reduce;  // per axis
  std::vector<KNode> nodes;  // topological
  std::vector<Store> stores;
  Contraction contraction;  // reduce < 0 when absent
  bool serial = false;  // reduce axes run in order, in one thread per outer index (a scatter)
  std::vector<std::string> notes;  // fusion decisions, for dumps
  // A code generator's variant for this kernel ("" = its own heuristic), set by autotuning
  // (replay/autotune.h) from the compiler's tuning candidates; e.g. "bn=128 schedule=pingpong"
  // for the CUDA Hopper contraction. Part of the kernel's identity (twins, compiled source).
  std::string config;
  // The graph nodes (of the graph the passes compiled) whose values this kernel computes, its
  // own and those it inlines, ascending; and the same as text ("%3 exp, %4 add"), for profiles
  // and dumps.
  std::vector<int32_t> sources;
  std::string computes;
  // A chained finish (passes/chain_reduce.h): zero or one kernel that the last workgroup to
  // finish each group of this kernel's partial results runs, in the same launch. `finish[0]`
  // reduces, along its one reduce axis (its last, of extent P), the P partials that this kernel
  // stores, contiguous, into an intermediate; its outer index f reads partials [f * P, f * P + P).
  // `tickets` is a zeroed intermediate of uint32 (BufferDesc::zeroed), one per finish output:
  // whoever stores a partial counts it there, and the one that brings f's count to P computes
  // f and sets its ticket back to zero, so that every launch finds them zero. Backends that do
  // not chain run the two as one step: this kernel, then its finish.
  std::vector<Kernel> finish;
  int tickets = -1;
  bool chained() const { return !finish.empty(); }
  // What one launch of this kernel runs: itself, then its finish where it has one.
  std::vector<const Kernel*> launched() const {
    return chained() ? std::vector<const Kernel*>{this, &finish[0]} : std::vector<const Kernel*>{this};
  }

  bool has_reduce() const;
  // Whether axis `a` has a symbolic extent (sym above).
  bool symbolic(int a) const { return size_t(a) < sym.size() && sym[size_t(a)].symbolic(); }
  bool any_symbolic() const;
  int64_t outer_count() const;  // product of outer axes
  int64_t reduce_count() const;  // product of reduce axes
  // Computes KNode::inner and checks that the kernel is well formed.
  std::string finalize();
};

enum class BufferKind : uint8_t { kInput, kOutput, kIntermediate };

struct BufferDesc {
  BufferKind kind = BufferKind::kIntermediate;
  int index = 0;  // position among inputs / outputs
  DType dtype = DType::kFloat32;
  Shape shape;
  int64_t offset = -1;  // arena offset in bytes (intermediates), set by plan_memory
  // An intermediate that must read zero when the program starts (a chained kernel's tickets,
  // ir::Kernel::finish): backends zero it when they allocate the arena, the planner never gives
  // its bytes to another buffer, and the kernels that use it leave it zero at every exit.
  bool zeroed = false;
  int64_t bytes() const { return shape_numel(shape) * dtype_size(dtype); }
};

// Steps are a flat list with structured blocks (device-side control flow, passes/control.h):
//   kKernel  runs `kernel` once its `deps` (earlier steps of the same run) have finished.
//   kWhile   the head of a loop: while buffer `flag` (an intermediate bool of one element) holds true, run the
//            steps up to the matching kEnd, then come back here; the steps before the head
//            compute the first flag and the body's last steps the next. With max_trips > 0, the
//            flag still true after that many trips is a run-time error (OutOfRange), the loop's
//            results unspecified.
//   kIf      run the steps up to the matching kElse (or kEnd) when `flag` holds true, else the
//            steps between kElse and kEnd.
//   kElse, kEnd  close a branch or a block.
//   kCollective  exchanges values with the other ranks of a process group (ir/collective.h):
//            reads buffer `in` (the operand, dense) and writes buffer `out`, like a kernel with
//            `deps`; backends run it through their collective library (the CPU: the group's
//            Communicator; CUDA: NCCL). Not a marker.
// Every marker (kWhile, kIf, kElse, kEnd) is a full barrier: it waits for all steps before it, all steps after it wait for
// it, and `deps` only name steps after the latest marker (a straight-line run).
enum class StepKind : uint8_t { kKernel, kWhile, kIf, kElse, kEnd, kCollective };

struct Step {
  int kernel = -1;
  std::vector<int> deps;  // indices of earlier steps this one must wait for
  StepKind kind = StepKind::kKernel;
  int flag = -1;          // kWhile, kIf
  int64_t max_trips = 0;  // kWhile; 0 = none
  CollectiveAttrs collective{};  // kCollective
  int in = -1, out = -1;       // kCollective: operand and result buffers
  bool is_kernel() const { return kind == StepKind::kKernel; }
  bool is_collective() const { return kind == StepKind::kCollective; }
  // A structured-control marker: kWhile, kIf, kElse, kEnd.
  bool is_marker() const { return !is_kernel() && !is_collective(); }
};

const char* step_kind_name(StepKind k);

struct Program {
  std::vector<BufferDesc> buffers;
  std::vector<Kernel> kernels;
  std::vector<Step> steps;
  int64_t arena_bytes = 0;         // size of the intermediate arena
  int64_t unplanned_bytes = 0;     // sum of all intermediates (no reuse), for comparison
  int num_inputs = 0;   // input buffers are buffers [0, num_inputs), by input position
  int num_outputs = 0;  // output buffers (kind kOutput), by BufferDesc::index
  // Buffer holding each graph output, in output order. It may be an input buffer (the output is
  // an input, unchanged) or the same output buffer twice (the same node listed twice).
  std::vector<int> outputs;
  // Scalars passed at run time, by slot (ir/params.h): what each kernel's `param` nodes read.
  std::vector<ParamDesc> params;

  std::string to_string() const;
  bool has_control() const;  // any marker step
};

// The call a collective step makes: its attributes, its operand's dtype and element count.
CollectiveCall collective_call(const Step& s, const std::vector<BufferDesc>& buffers);
// Whether a collective step reads an input or writes an output (buffers bound per run).
bool collective_touches_io(const Step& s, const std::vector<BufferDesc>& buffers);

// The buffers step `s` reads and writes (sorted, distinct): a kernel's loads and stores, a
// collective's operand and result; a marker reads its flag (if any) and writes nothing.
void step_buffers(const Program& p, size_t s, std::vector<int>* reads, std::vector<int>* writes);

// How the markers of a structured step list pair up (-1 where a step has no such partner):
// end[i] of a kWhile/kIf/kElse is its kEnd; head[i] of a kElse/kEnd is its block's kWhile/kIf;
// otherwise[i] of a kIf is its kElse. Assumes a list verify_plan accepted.
struct BlockLinks {
  std::vector<int> end, head, otherwise;
};
BlockLinks block_links(const std::vector<Step>& steps);

// The error a run reports when a loop's condition still holds after max_trips trips.
std::string max_trips_message(int64_t max_trips);

// Where a walk over a structured step list goes from marker `i` (host-driven backends: the CPU,
// Vulkan): `flag` is the value of step i's flag (read by the caller for kWhile / kIf only);
// `trips` counts each loop's trips (one entry per step, zero at first). OutOfRange with
// max_trips_message when a loop's condition holds after its limit.
absl::StatusOr<size_t> step_after_marker(const std::vector<Step>& steps, const BlockLinks& links, size_t i, bool flag,
                                         std::vector<int64_t>* trips);

// Whether buffers a and b (different) share arena bytes: two intermediates whose planned ranges
// intersect. Within one kernel only an in-place pair does (plan_memory: the same range, an
// elementwise kernel reading each element where it writes it), and code generation must not
// declare such a pair non-aliasing (__restrict__, LLVM noalias); the Program verifier refuses
// any other overlap inside a kernel.
bool share_bytes(const Program& p, int a, int b);

// Text form of one kernel (used in dumps and error reports).
std::string kernel_to_string(const Kernel& k);

}  // namespace kiln::ir

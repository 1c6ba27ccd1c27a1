// Collectives: values exchanged between the ranks of a process group (several GPUs, several
// processes). A graph records one as a `collective` node over one operand, ints = {kind
// (Collective), reduce (ScatterMode add/mul/max/min; kNone where nothing is folded), root
// (broadcast), world (the group's size), comm (the process-wide id of this rank's Communicator)}.
// Every rank of a group runs the same collectives in the same order (SPMD), as with MPI and NCCL;
// a rank that does not join is reported after the group's timeout, never waited for forever.
//
// Meaning, along axis 0, over ranks r = 0..W-1 whose operands are x_0..x_{W-1}:
//   all_reduce      [n, ...]   -> [n, ...]    the fold of x_0..x_{W-1}, element by element
//   all_gather      [n, ...]   -> [W*n, ...]  x_0, x_1, ... one after the other
//   reduce_scatter  [W*n, ...] -> [n, ...]    chunk r of the fold, on rank r
//   broadcast       [n, ...]   -> [n, ...]    x_root, on every rank
//   all_to_all      [W*n, ...] -> [W*n, ...]  chunk j of rank r's result is chunk r of x_j
// A Communicator is one rank's host end of a group (threads of one process, MPI ranks): the
// reference interpreter and the CPU backend run collectives through it, and GPU backends set up
// their own libraries through it (NCCL's unique id). Implementations live in dist/.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/op.h"
#include "kiln/dtype.h"

namespace kiln::ir {

class Graph;

struct CollectiveAttrs {
  Collective kind = Collective::kAllReduce;
  ScatterMode reduce = ScatterMode::kNone;
  int root = 0;
  int world = 1;
  int64_t comm = -1;

  std::vector<int64_t> ints() const;
  static CollectiveAttrs from_ints(const std::vector<int64_t>& ints);  // ints of a verified node
  bool operator==(const CollectiveAttrs& o) const = default;
};

const char* collective_name(Collective kind);
// "all_reduce(sum)", "broadcast(root 1)", "all_gather": for messages and dumps.
std::string describe(const CollectiveAttrs& a);
// The result's shape for an operand of shape `in`; InvalidArgument naming what is wrong.
absl::StatusOr<Shape> collective_shape(const CollectiveAttrs& a, const Shape& in);

// One collective as a backend runs it: `in` holds in_elems elements of dtype.
struct CollectiveCall {
  CollectiveAttrs attrs;
  DType dtype = DType::kFloat32;
  int64_t in_elems = 0;
  int64_t out_elems() const;
  bool operator==(const CollectiveCall& o) const = default;
};
// Every rank's call (by rank) agrees; else InvalidArgument naming the op and the ranks that differ.
absl::Status check_same_call(const std::vector<CollectiveCall>& by_rank);

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual std::string name() const = 0;  // "threads", "mpi"
  // Every rank's `bytes` bytes into out, in rank order (size() * bytes).
  virtual absl::Status all_gather_bytes(const void* in, int64_t bytes, void* out) = 0;
  // Runs `c` on host memory: `in` has c.in_elems elements, `out` room for c.out_elems(). Checks
  // first that every rank makes the same call (check_same_call). DeadlineExceeded when a rank
  // does not join within the group's timeout.
  virtual absl::Status run(const CollectiveCall& c, const void* in, void* out) = 0;
};

// The process-wide table of communicators that collective nodes name by id.
int64_t add_communicator(std::shared_ptr<Communicator> c);
// Removes `id` (its group's last handle is gone), then calls every release hook with it.
void remove_communicator(int64_t id);
// `hook(id)` runs each time a group leaves the table, on the thread that removed it: backends
// release what they keep per group (NCCL communicators). Hooks stay for the process's life.
void add_release_hook(std::function<void(int64_t)> hook);
// nullptr when `id` was never added or has been removed.
std::shared_ptr<Communicator> find_communicator(int64_t id);
// The communicator of a collective node or step, or FailedPrecondition naming the id.
absl::StatusOr<std::shared_ptr<Communicator>> communicator_for(const CollectiveAttrs& a);

// True when `g` (or a region of its loops and branches) has a collective on group `comm`.
bool uses_group(const Graph& g, int64_t comm);

// Element by element, acc[i] = fold(acc[i], x[i]) in dtype `t` (float max/min propagate NaN):
// the host fold of the implementations that reduce on the host.
void fold_into(ScatterMode m, DType t, const void* x, void* acc, int64_t n);

// For communicators built on an all-gather of bytes (`gather(in, bytes, out)`, every rank's bytes
// in rank order): every rank's call gathered and compared (check_same_call) ...
using GatherBytes = std::function<absl::Status(const void* in, int64_t bytes, void* out)>;
absl::Status agree_on_call(const CollectiveCall& c, int world, const GatherBytes& gather);
// ... and this rank's result computed on the host from every rank's operand (collective_from_all).
absl::Status run_on_host(const CollectiveCall& c, int rank, const void* in, void* out, const GatherBytes& gather);

// A collective computed on the host from every rank's operand bytes (in rank order, each
// c.in_elems elements): what rank `rank`'s result is. For communicators that move whole operands.
void collective_from_all(const CollectiveCall& c, int rank, const std::vector<const void*>& operands, void* out);

}  // namespace kiln::ir

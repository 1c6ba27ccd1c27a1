// Collectives on CUDA through NCCL, loaded at run time (dlopen libnccl.so.2: the CUDA toolkit's
// or a pip wheel's, on the library path, or KILN_NCCL_LIBRARY), so one build runs everywhere and
// a machine without NCCL runs single-GPU kiln unaffected.
//
// A collective step of a program becomes a child graph of the executable's CUDA graph: the NCCL
// call captured from a stream of its own (cuStreamBeginCapture ... cuStreamEndCapture), so a
// replay of a sharded step is still one cuGraphLaunch per GPU. NCCL's work descriptors hold the
// buffer addresses, so a program whose collective reads an input or writes an output builds its
// graph at the first run (over real addresses), and a run whose operand or result moved swaps in
// the child graph captured over the new pair (cuGraphExecChildGraphNodeSetParams): captured now,
// or kept from an earlier run (the last 8 pairs per collective; outputs come from a recycling
// pool, so their addresses repeat). Peers connect when the communicator is made
// (NCCL_RUNTIME_CONNECT=0 unless the user set it): connecting inside a capture is not allowed.
//
// Communicators: one per (process group, CUDA context), made the first time an executable of
// that group loads on that GPU and released when the group is gone and no executable holds it:
// rank 0's ncclUniqueId reaches the others through the group's host Communicator
// (ir/collective.h: threads, MPI or TCP), which times out instead of waiting for ever for a rank
// that never comes. At that load the ranks also compare the collectives their
// programs run (InvalidArgument naming the ranks that differ). NVLink multicast (NVLS) stays
// off: NCCL_NVLS_ENABLE=0 is set before the first communicator unless the user set it.
#pragma once

#include <cuda.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "ir/collective.h"
#include "ir/program.h"

namespace kiln::runtime::cuda {

struct Context;
class Event;
struct ncclComm;

// Whether a communicator may still be used: `aborted` is why the watchdog aborted it (its
// launches' results are lost), `released` why no new launch may use it (its group is gone).
// Shared with the outcomes of the runs that used it, which outlive it.
struct CommHealth {
  std::mutex mu;
  absl::Status aborted;
  absl::Status released;
};

// One rank's NCCL communicator on one GPU. The executables whose graphs captured its calls hold
// it, and the table of communicators holds it while its group exists; when the last of them lets
// go (an executable waits for its launches before it goes), nothing of it runs any more and it is
// released (ncclCommDestroy).
struct Comm {
  ncclComm* raw = nullptr;
  std::shared_ptr<CommHealth> health = std::make_shared<CommHealth>();
  ~Comm();
};
using NcclComm = std::shared_ptr<Comm>;

// The communicator of `attrs`'s group on the GPU of `ctx` (which must be current), made on first
// use; Unavailable when NCCL cannot be loaded.
absl::StatusOr<NcclComm> nccl_comm(Context* ctx, const ir::CollectiveAttrs& attrs);

// OK, or why `comm` may not be used: aborted (a watched launch ran past its timeout) or released
// (its process group was destroyed).
absl::Status comm_status(const Comm& comm);

// Every rank of each group the program's collective steps use runs the same collectives
// (gathered over the group's host communicator at load).
absl::Status check_ranks_agree(const std::vector<ir::Step>& steps, const std::vector<ir::BufferDesc>& buffers);

// Enqueues collective `c` on `stream`: `in` holds the operand, `out` receives the result.
absl::Status enqueue_collective(const Comm& comm, const ir::CollectiveCall& c, CUdeviceptr in, CUdeviceptr out, CUstream stream);

// OK when NCCL loads on this machine, else Unavailable saying why.
absl::Status nccl_status();

// What became of the collectives of one run: OK, or why their results are not to be trusted
// (shared by the run's outputs, CudaBuffer::failure).
struct CollectiveOutcome {
  std::vector<std::shared_ptr<CommHealth>> comms;  // those of the run's communicators
  std::mutex mu;
  absl::Status status;
  // The failure set by the watchdog, or that of an aborted communicator of the run (a launch
  // that ended because its communicator was aborted lost its values too; one that ended just
  // before the abort is reported as lost as well: never a silent wrong value).
  absl::Status get();
};

// Watches a launch whose collectives run on `comms`: `done` completes when it has finished.
// When it has not after `timeout_s` seconds (a rank that stopped coming, or died), a watchdog
// thread aborts those communicators (ncclCommAbort: the waiting kernels return, so nothing
// hangs), `outcome` gets DeadlineExceeded naming `what`, and every later use of the
// communicators fails at once (nccl_comm).
void watch(const std::vector<NcclComm>& comms, std::shared_ptr<Event> done, std::shared_ptr<CollectiveOutcome> outcome,
           std::string what, int timeout_s);

// The NCCL version loaded ("2.21.5"), or why none is.
std::string nccl_version();

}  // namespace kiln::runtime::cuda

// Distributed kiln: process groups and collectives recorded like any other op.
//
// A ProcessGroup is one rank's handle on a group of ranks that compute together (SPMD: every
// rank records the same ops, each on its own data). Collectives are lazy ops like the rest: they
// become nodes of the graph, the fuser puts the kernels around them, and they run inside the
// captured program (the CPU's task list; on CUDA an NCCL call inside the rank's CUDA graph, so a
// sharded step is one graph launch per GPU) between the kernels that produce and consume them.
//
//   // mpirun -np 2 ./train            (or: one process, ranks on threads, local_group(2))
//   kiln::dist::ProcessGroup g = *kiln::dist::init();
//   kiln::Tensor grad = ...;                                  // this rank's gradient
//   kiln::Tensor mean = kiln::dist::all_reduce(grad, g, kiln::dist::ReduceOp::kMean);
//
// Groups: `init()` joins the group the launcher made: Open MPI's mpirun (one rank per process;
// the MPI library is opened at run time, so programs that never call init() need none), or
// torchrun-style variables RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT (a TCP group; LOCAL_RANK
// names the process's GPU on its host);
// `local_group(n)` makes n ranks inside this process, one per thread, each thread recording
// and realizing with its own handle (the single-process form; on GPUs each rank uses its own,
// Device("cuda:" + std::to_string(rank))).
//
// Meaning, along `axis` (0 unless given), over ranks r = 0..W-1 with operands x_r:
//   all_reduce      same shape            the sum / prod / max / min / mean of x_0..x_{W-1}
//   all_gather      axis grows W times    x_0, x_1, ... one after the other along axis
//   reduce_scatter  axis shrinks W times  rank r keeps chunk r of the reduction
//   broadcast       same shape            x_root on every rank
//   all_to_all      same shape            chunk j of rank r's result is chunk r of x_j
//
// Every rank must realize the same collectives in the same order, as with MPI and NCCL. Errors:
// at record time (kiln::Error, InvalidArgument, naming the op): an axis that does not split into
// W chunks, a bad root, mean of an integer tensor, a device that cannot run collectives (they run
// on "cpu" and on "cuda" where NCCL loads; the message says why not). At run time (the realize fails):
// ranks calling different collectives or different shapes or dtypes (InvalidArgument naming the
// op and the ranks); a rank that does not join within KILN_DIST_TIMEOUT seconds (300 by default:
// DeadlineExceeded naming the missing ranks where the group knows them); a group whose handles
// were all destroyed (FailedPrecondition).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kiln/tensor.h"

namespace kiln::dist {

enum class ReduceOp { kSum, kProd, kMax, kMin, kMean };

class ProcessGroup {
 public:
  ProcessGroup() = default;  // not a group: collectives on it throw
  int rank() const;
  int size() const;
  // This rank's number among the ranks on its host (LOCAL_RANK, OMPI_COMM_WORLD_LOCAL_RANK; the
  // rank itself for threads): the GPU to use, Device("cuda:" + std::to_string(local_rank())).
  int local_rank() const;
  std::string backend() const;  // "threads", "mpi" or "tcp"
  bool valid() const { return impl_ != nullptr; }

  struct Impl;  // (frontend/dist.cc)

 private:
  friend struct Access;
  explicit ProcessGroup(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}
  std::shared_ptr<const Impl> impl_;
};

// The group this process was launched into: under Open MPI's mpirun, MPI_COMM_WORLD (MPI is
// initialized here and finalized at exit); else with RANK, WORLD_SIZE, MASTER_ADDR and
// MASTER_PORT set, a TCP group (rank 0 listens on MASTER_PORT). FailedPrecondition when neither
// is found; Unavailable when the MPI library is missing; DeadlineExceeded when the ranks do not
// all meet within KILN_DIST_TIMEOUT seconds.
absl::StatusOr<ProcessGroup> init();
// A TCP group given explicitly (dist/tcp.h: rank 0 listens, the others connect; collectives are
// computed on the host from every rank's operand, so it is for the CPU and for setting up NCCL,
// not for moving large tensors).
absl::StatusOr<ProcessGroup> init_tcp(int rank, int world_size, const std::string& master_addr, int master_port);
// The same through MPI explicitly, launched by mpirun or not (a lone process is a group of one).
absl::StatusOr<ProcessGroup> init_mpi();
// `size` ranks in this process: element r is rank r's handle, to be used from one thread per
// rank (the ranks wait for each other inside collectives). InvalidArgument when size < 1.
absl::StatusOr<std::vector<ProcessGroup>> local_group(int size);

Tensor all_reduce(const Tensor& x, const ProcessGroup& group, ReduceOp op = ReduceOp::kSum);
Tensor all_gather(const Tensor& x, const ProcessGroup& group, int64_t axis = 0);
Tensor reduce_scatter(const Tensor& x, const ProcessGroup& group, ReduceOp op = ReduceOp::kSum, int64_t axis = 0);
Tensor broadcast(const Tensor& x, const ProcessGroup& group, int root = 0);
Tensor all_to_all(const Tensor& x, const ProcessGroup& group, int64_t axis = 0);

}  // namespace kiln::dist

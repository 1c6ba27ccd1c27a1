// A process group over TCP, for programs launched the way torchrun launches them: RANK,
// WORLD_SIZE, MASTER_ADDR and MASTER_PORT in each process's environment, no MPI needed. Rank 0
// listens on MASTER_PORT; the others connect to MASTER_ADDR (retrying until the group's timeout,
// so they may start first) and introduce themselves. Every exchange goes through rank 0 (a star):
// each rank sends its bytes, rank 0 answers everyone with all of them (or with an error frame
// when their sizes differ). Collectives are computed on the host from every rank's operand
// (ir::collective_from_all), after the ranks' calls are compared: right for the CPU and for
// setting up NCCL, not meant to move large tensors fast. A peer that does not answer within the
// timeout is DeadlineExceeded naming it; one that goes away is Unavailable naming it.
#pragma once

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "ir/collective.h"

namespace kiln::dist {

absl::StatusOr<std::shared_ptr<ir::Communicator>> tcp_group(int rank, int world, const std::string& master_addr, int master_port,
                                                            int timeout_s);

}  // namespace kiln::dist

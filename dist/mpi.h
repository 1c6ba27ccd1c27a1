// A process group of MPI ranks (one process each, started by mpirun), through Open MPI's
// libmpi.so.40 opened at run time by dlopen (KILN_MPI_LIBRARY names another), so kiln links
// against no MPI and a machine without one runs single-process kiln unaffected. The handles
// (MPI_COMM_WORLD, MPI_FLOAT, MPI_SUM, ...) are Open MPI's exported globals, looked up by name:
// this is Open MPI's ABI, not MPICH's, and the error says so where the symbols are missing.
//
// Each collective first gathers every rank's call with a nonblocking MPI_Iallgather polled up
// to the group's timeout (so a missing rank is a DeadlineExceeded error, not a hang, and a
// mismatch between ranks is an error naming them), then runs MPI's own collective where MPI has
// the dtype and the fold (f32, f64, i8, u8, i32, i64), else gathers every operand's bytes and
// computes the result on the host (f16, bf16, bool).
#pragma once

#include <memory>

#include "absl/status/statusor.h"
#include "ir/collective.h"

namespace kiln::dist {

// Whether this process was started by Open MPI's mpirun (OMPI_COMM_WORLD_SIZE is set).
bool launched_by_mpirun();

// MPI_COMM_WORLD's communicator, initializing MPI (MPI_THREAD_MULTIPLE) on first use; MPI is
// finalized at exit. Unavailable when the library cannot be opened or lacks Open MPI's symbols.
absl::StatusOr<std::shared_ptr<ir::Communicator>> mpi_world(int timeout_s);

}  // namespace kiln::dist

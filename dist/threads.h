// A process group of threads: W ranks in one process, one thread each (the single-process form
// of kiln::dist, which drives several local devices from threads). The ranks meet in shared
// memory: each posts its operand's address and its call, all wait for all (a barrier with the
// group's timeout), each reads what its result needs straight from the others' memory, and a
// second barrier keeps every operand alive until all have read. A rank that does not come
// within the timeout fails the collective for everyone with DeadlineExceeded naming it, and the
// group stays failed (later collectives report the same error at once).
#pragma once

#include <memory>
#include <vector>

#include "ir/collective.h"

namespace kiln::dist {

// One Communicator per rank, in rank order, sharing their meeting place.
std::vector<std::shared_ptr<ir::Communicator>> make_thread_group(int size, int timeout_s);

}  // namespace kiln::dist

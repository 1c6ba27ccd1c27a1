// An in-process fake of Metal behind the MetalApi table (backends/metal/metal_api.h), so the Metal
// runtime's tests run on machines without Metal. Buffers are host memory whose GPU address is
// their host address (filled with 0xCD when made, so memory nobody cleared shows). Committed
// command buffers "execute" in commit order, at once or, with `hold`, when the host waits for
// one: each executed ICB command checks that its argument buffer and every buffer address in its
// argument block are resident in its pass, records the block, and runs the host stand-in of its
// kernel (FakeKernel) on it. Misuse (a dead handle, a non-resident buffer, a run started before
// the event it waits for) is recorded in `violations`. One fake at a time per process: the table's
// functions reach it through a global.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "backends/metal/metal_api.h"

namespace kiln::testing {

using runtime::metal::Id;
using runtime::metal::MetalApi;
using runtime::metal::MtlSize;

// What a kernel of the fake's libraries is: how many of its argument block's slots are buffer
// addresses and how many are params, and (optionally) what it computes from the block.
struct FakeKernel {
  int buffers = 0, params = 0;
  std::function<void(const uint64_t* args, MtlSize grid, MtlSize block)> body;
};

class FakeMetal {
 public:
  // One command of an indirect command buffer as last encoded.
  struct Command {
    std::string function;
    Id args = nullptr;
    size_t offset = 0;
    MtlSize grid, block;
    bool barrier = false;
    int encodings = 0;  // times this command was encoded
  };
  // One executed command: its function and the words of its argument block.
  struct Executed {
    std::string function;
    std::vector<uint64_t> args;
  };
  // One compute pass: what was made resident (true: with write access) and the ICB ranges run.
  struct Pass {
    std::map<Id, bool> resident;
    std::vector<std::pair<size_t, size_t>> executions;  // (first, count)
    int memory_barriers = 0;
  };
  // One committed command buffer.
  struct Submission {
    uint64_t wait = 0, signal = 0;  // the event values it waits for and signals (0: none)
    std::vector<Pass> passes;
    bool executed = false;
  };

  FakeMetal();
  ~FakeMetal();
  FakeMetal(const FakeMetal&) = delete;
  FakeMetal& operator=(const FakeMetal&) = delete;

  const MetalApi* api() const { return &api_; }

  // What the fake device is and does.
  bool has_device = true;
  bool metal3 = true;
  std::string device_name = "Apple M2 Max";
  unsigned long execution_width = 32, max_threads = 1024;
  std::string compile_error;          // non-empty: every library fails to compile with this log
  bool out_of_memory = false;         // new buffers are nil
  bool hold = false;                  // commits execute only when the host waits for one
  std::set<size_t> failing_commits;   // these commits (0-based) fail on the "GPU"
  std::map<std::string, FakeKernel> kernels;

  // What the runtime did.
  std::vector<std::string> libraries;  // sources compiled
  std::vector<Submission> submissions;
  std::vector<Executed> executed;
  std::vector<std::string> violations;
  // The commands of every indirect command buffer made, in creation order.
  std::vector<std::vector<Command>> icbs() const;
  // The buffer holding GPU address `address`: its base address and length; {0, 0} if none.
  std::pair<uint64_t, size_t> buffer_at(uint64_t address) const;
  int live_objects() const;
  // Executes every committed command buffer not executed yet.
  void run_pending();

  struct Object;  // fake_metal.cc

 private:
  MetalApi api_;
};

}  // namespace kiln::testing

// The Metal device's one command queue and the runs in flight on it. Every run is one command
// buffer numbered by a tick (1, 2, ...) that waits on the GPU, through a shared event, for the
// tick before it and then signals its own: runs share arenas and feed each other, and this way
// their order does not rest on Metal's hazard tracking of memory reached only through argument
// blocks. The host learns that a tick is done from its command buffer's status, so a download
// waits for the one run that wrote its buffer. A run that fails on the GPU is reported by every
// wait for it or a later run (what those wrote is not valid), and its tick is signalled from the
// CPU so that the runs after it do not wait for it forever. Objects that runs in flight still use
// (buffers, an executable's arena, argument blocks and pipelines) are released once those runs
// are done.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "backends/metal/metal_api.h"

namespace kiln::runtime::metal {

class Queue {
 public:
  // The queue and its event on `device` (which the caller keeps alive longer).
  static absl::StatusOr<std::shared_ptr<Queue>> create(const MetalApi& api, Id device);
  ~Queue();  // waits for every run, then releases what is left
  Queue(const Queue&) = delete;
  Queue& operator=(const Queue&) = delete;

  const MetalApi& api() const { return api_; }

  // Makes a command buffer that runs after every earlier tick, lets `encode` fill it, signals and
  // commits it: its tick. Submissions are serialized (ticks are committed in order).
  absl::StatusOr<uint64_t> submit(const std::function<absl::Status(Id command_buffer)>& encode);
  // Whether tick `t` has completed (0 always has), without waiting.
  bool done(uint64_t t);
  // Waits until tick `t` has completed. Internal when a run failed on the GPU.
  absl::Status wait(uint64_t t);
  absl::Status wait_all();
  // Releases `object` once tick `t` has completed (now if it has).
  void release_after(Id object, uint64_t t);

 private:
  struct Run {
    uint64_t tick;
    std::shared_ptr<void> command_buffer;  // released when the last holder (a waiter) drops it
  };
  Queue(const MetalApi& api, Id queue, Id event) : api_(api), queue_(queue), event_(event) {}
  // Retires the completed runs at the front and releases what waited for them (mu_ held).
  void reap_locked();
  // Internal when tick `t` is at or after a run that failed (mu_ held).
  absl::Status failure_at(uint64_t t) const;

  const MetalApi& api_;
  Id queue_;
  Id event_;
  std::mutex mu_;
  std::mutex submit_mu_;      // one submission at a time, in tick order
  uint64_t submitted_ = 0;    // the latest tick committed
  uint64_t completed_ = 0;    // every tick up to this one is done
  std::deque<Run> in_flight_;  // ascending ticks after completed_
  std::vector<std::pair<uint64_t, Id>> deferred_;  // objects to release after a tick
  uint64_t failed_tick_ = 0;   // the first run that failed on the GPU (0: none)
  std::string failed_;         // ... and why
};

}  // namespace kiln::runtime::metal

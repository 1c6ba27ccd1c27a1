// The Metal command queue and its runs in flight (queue.h).
#include "backends/metal/queue.h"

#include "absl/strings/str_cat.h"

namespace kiln::runtime::metal {

absl::StatusOr<std::shared_ptr<Queue>> Queue::create(const MetalApi& api, Id device) {
  Id queue = api.new_command_queue(device);
  if (!queue) return absl::InternalError("metal: the device made no command queue (newCommandQueue)");
  Id event = api.new_shared_event(device);
  if (!event) {
    api.release(queue);
    return absl::InternalError("metal: the device made no shared event (newSharedEvent)");
  }
  return std::shared_ptr<Queue>(new Queue(api, queue, event));
}

Queue::~Queue() {
  (void)wait_all();
  std::lock_guard<std::mutex> lock(mu_);
  in_flight_.clear();
  for (const auto& [tick, object] : deferred_) api_.release(object);
  deferred_.clear();
  api_.release(event_);
  api_.release(queue_);
}

absl::StatusOr<uint64_t> Queue::submit(const std::function<absl::Status(Id)>& encode) {
  std::lock_guard<std::mutex> order(submit_mu_);
  uint64_t previous = 0;
  bool previous_done = false;
  {
    std::lock_guard<std::mutex> lock(mu_);
    reap_locked();
    previous = submitted_;
    previous_done = previous <= completed_;
  }
  Id raw = api_.new_command_buffer(queue_);
  if (!raw) return absl::InternalError("metal: the queue made no command buffer (commandBuffer)");
  std::shared_ptr<void> cb(raw, [api = &api_](void* p) { api->release(p); });
  if (!previous_done) api_.encode_wait(raw, event_, previous);
  if (absl::Status s = encode(raw); !s.ok()) return s;
  const uint64_t tick = previous + 1;
  api_.encode_signal(raw, event_, tick);
  api_.commit(raw);
  std::lock_guard<std::mutex> lock(mu_);
  submitted_ = tick;
  in_flight_.push_back(Run{tick, std::move(cb)});
  return tick;
}

void Queue::reap_locked() {
  while (!in_flight_.empty()) {
    const Run& run = in_flight_.front();
    const unsigned long status = api_.status(run.command_buffer.get());
    if (status < kCommandBufferCompleted) break;
    if (status == kCommandBufferError && failed_tick_ == 0) {
      failed_tick_ = run.tick;
      const std::string why = api_.error_text(run.command_buffer.get());
      failed_ = absl::StrCat("metal: a run failed on the GPU (", why.empty() ? "no description" : why,
                             "); its results and those of the runs after it are not valid");
    }
    // A failed command buffer may not have signalled its tick: the runs after it wait for it.
    if (status == kCommandBufferError) api_.set_signaled_value(event_, run.tick);
    completed_ = run.tick;
    in_flight_.pop_front();
  }
  size_t kept = 0;
  for (size_t i = 0; i < deferred_.size(); ++i) {
    if (deferred_[i].first <= completed_)
      api_.release(deferred_[i].second);
    else
      deferred_[kept++] = deferred_[i];
  }
  deferred_.resize(kept);
}

absl::Status Queue::failure_at(uint64_t t) const {
  if (failed_tick_ == 0 || t < failed_tick_) return absl::OkStatus();
  return absl::InternalError(failed_);
}

bool Queue::done(uint64_t t) {
  std::lock_guard<std::mutex> lock(mu_);
  reap_locked();
  return t <= completed_;
}

absl::Status Queue::wait(uint64_t t) {
  for (;;) {
    std::shared_ptr<void> cb;
    {
      std::lock_guard<std::mutex> lock(mu_);
      reap_locked();
      if (t <= completed_) return failure_at(t);
      if (in_flight_.empty())
        return absl::InternalError(absl::StrCat("metal: waiting for run ", t, ", which was never submitted"));
      // The oldest run first: a failed one is noticed (and its successors released) in order.
      cb = in_flight_.front().command_buffer;
    }
    api_.wait_until_completed(cb.get());
  }
}

absl::Status Queue::wait_all() {
  uint64_t last = 0;
  {
    std::lock_guard<std::mutex> lock(mu_);
    last = submitted_;
  }
  return wait(last);
}

void Queue::release_after(Id object, uint64_t t) {
  if (!object) return;
  std::lock_guard<std::mutex> lock(mu_);
  reap_locked();
  if (t <= completed_)
    api_.release(object);
  else
    deferred_.emplace_back(t, object);
}

}  // namespace kiln::runtime::metal

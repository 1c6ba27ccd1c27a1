// Events and the context binding of context.h.
#include "backends/cuda/context.h"

#include <algorithm>
#include <cstring>

#include "backends/cuda/driver_api.h"
#include "support/copy_bytes.h"

namespace kiln::runtime::cuda {

absl::StatusOr<std::shared_ptr<Event>> Event::create(bool timing) {
  CUevent e = nullptr;
  if (absl::Status s = cu_check(api().cuEventCreate(&e, timing ? CU_EVENT_DEFAULT : CU_EVENT_DISABLE_TIMING), "cuEventCreate");
      !s.ok())
    return s;
  return std::make_shared<Event>(e);
}

Event::~Event() {
  if (!process_exiting()) api().cuEventDestroy(e_);
}

absl::Status Event::record(CUstream s) const { return cu_check(api().cuEventRecord(e_, s), "cuEventRecord"); }

absl::Status Event::wait() const {
  return cu_check(api().cuEventSynchronize(e_), "waiting for the GPU (cuEventSynchronize)");
}

bool Event::complete() const { return api().cuEventQuery(e_) == CUDA_SUCCESS; }

absl::Status Event::make_wait(CUstream stream) const {
  return cu_check(api().cuStreamWaitEvent(stream, e_, 0), "cuStreamWaitEvent");
}

absl::StatusOr<double> Event::elapsed_ms(const Event& start) const {
  float ms = 0;
  if (absl::Status s = cu_check(api().cuEventElapsedTime(&ms, start.e_, e_), "cuEventElapsedTime"); !s.ok()) return s;
  return double(ms);
}

absl::Status Context::make_current() const { return cu_check(api().cuCtxSetCurrent(ctx), "cuCtxSetCurrent"); }

absl::StatusOr<std::shared_ptr<Event>> Context::tick() {
  std::lock_guard<std::mutex> lock(tick_mu_);
  if (ticks_.empty()) {
    for (int i = 0; i < kTicks; ++i) {
      auto e = Event::create();
      if (!e.ok()) {
        ticks_.clear();
        return e.status();
      }
      ticks_.push_back(*std::move(e));
    }
  }
  const uint64_t seq = compute_seq.load(std::memory_order_relaxed) + 1;
  const std::shared_ptr<Event>& e = ticks_[seq % kTicks];
  if (absl::Status s = e->record(stream); !s.ok()) return s;
  compute_seq.store(seq, std::memory_order_release);
  return e;
}

absl::Status Context::copy_waits_for_compute(uint64_t seq) {
  if (seq == 0) return absl::OkStatus();
  std::shared_ptr<Event> e;
  {
    std::lock_guard<std::mutex> lock(tick_mu_);
    if (ticks_.empty()) return absl::OkStatus();  // no run was ever queued
    e = ticks_[seq % kTicks];
  }
  return e->make_wait(copy_stream);
}

StagingRing::~StagingRing() {
  if (process_exiting()) return;
  for (Slot& s : slots_) {
    if (s.done) (void)s.done->wait();
    if (s.host) api().cuMemFreeHost(s.host);
  }
}

absl::Status StagingRing::ensure(Slot& s) {
  if (s.host) return absl::OkStatus();
  if (absl::Status st = cu_check(api().cuMemHostAlloc(&s.host, size_t(kBytes), 0), "cuMemHostAlloc (transfer staging)");
      !st.ok())
    return st;
  auto e = Event::create();
  if (!e.ok()) return e.status();
  s.done = *std::move(e);
  return absl::OkStatus();
}

absl::Status StagingRing::copy_back(const std::vector<Piece>& pieces, CUstream stream) {
  // Pack the pieces into staging-buffer fills, in order, splitting a piece across fills.
  struct Part {
    char* dst;
    CUdeviceptr src;
    int64_t at, bytes;  // offset in the staging buffer, length
  };
  std::vector<std::vector<Part>> fills(1);
  int64_t used = 0;
  for (const Piece& p : pieces) {
    for (int64_t off = 0; off < p.bytes;) {
      if (used == kBytes) {
        fills.emplace_back();
        used = 0;
      }
      const int64_t n = std::min(kBytes - used, p.bytes - off);
      fills.back().push_back({static_cast<char*>(p.dst) + off, p.src + CUdeviceptr(off), used, n});
      used += n;
      off += n;
    }
  }
  const int64_t count = int64_t(fills.size());
  // Keep up to kBuffers fills in flight; copy each out once its event has passed.
  int64_t issued = 0;
  for (int64_t c = 0; c < count; ++c) {
    while (issued < count && issued < c + kBuffers) {
      Slot& s = slots_[issued % kBuffers];
      if (absl::Status st = ensure(s); !st.ok()) return st;
      if (absl::Status st = s.done->wait(); !st.ok()) return st;
      for (const Part& part : fills[size_t(issued)]) {
        CUresult r = api().cuMemcpyDtoHAsync(static_cast<char*>(s.host) + part.at, part.src, size_t(part.bytes), stream);
        if (absl::Status st = cu_check(r, "download (cuMemcpyDtoHAsync)"); !st.ok()) return st;
      }
      if (absl::Status st = s.done->record(stream); !st.ok()) return st;
      ++issued;
    }
    Slot& s = slots_[c % kBuffers];
    if (absl::Status st = s.done->wait(); !st.ok()) return st;
    for (const Part& part : fills[size_t(c)])
      support::copy_bytes(part.dst, static_cast<const char*>(s.host) + part.at, size_t(part.bytes));
  }
  next_ = 0;
  return absl::OkStatus();
}

absl::Status StagingRing::copy(CUdeviceptr dst, const void* src, int64_t bytes, CUstream stream) {
  const char* from = static_cast<const char*>(src);
  for (int64_t off = 0; off < bytes; off += kBytes) {
    Slot& s = slots_[next_];
    next_ = (next_ + 1) % kBuffers;
    if (absl::Status st = ensure(s); !st.ok()) return st;
    if (absl::Status st = s.done->wait(); !st.ok()) return st;  // its previous chunk may still be in flight
    const int64_t n = std::min(kBytes, bytes - off);
    support::copy_bytes(s.host, from + off, size_t(n));
    if (absl::Status st = cu_check(api().cuMemcpyHtoDAsync(dst + CUdeviceptr(off), s.host, size_t(n), stream),
                                   "upload (cuMemcpyHtoDAsync)");
        !st.ok())
      return st;
    if (absl::Status st = s.done->record(stream); !st.ok()) return st;
  }
  return absl::OkStatus();
}

}  // namespace kiln::runtime::cuda

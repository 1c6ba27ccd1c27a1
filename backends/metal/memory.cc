// Metal buffers (memory.h).
#include "backends/metal/memory.h"

#include <algorithm>

namespace kiln::runtime::metal {

Id new_shared_buffer(const MetalApi& api, Id device, int64_t bytes) {
  return api.new_buffer(device, size_t(std::max<int64_t>(bytes, 1)));  // Metal has no empty buffers
}

MetalBuffer::MetalBuffer(Device* d, std::shared_ptr<Queue> queue, Id buffer, int64_t bytes)
    : Buffer(d, bytes),
      queue_(std::move(queue)),
      buffer_(buffer),
      contents_(queue_->api().contents(buffer)),
      address_(queue_->api().gpu_address(buffer)) {}

MetalBuffer::~MetalBuffer() { queue_->release_after(buffer_, last_use_.load()); }

namespace {

void raise(std::atomic<uint64_t>& a, uint64_t v) {
  uint64_t seen = a.load();
  while (seen < v && !a.compare_exchange_weak(seen, v)) {
  }
}

}  // namespace

void MetalBuffer::note_run(uint64_t tick, bool write) {
  raise(last_use_, tick);
  if (write) raise(last_write_, tick);
}

}  // namespace kiln::runtime::metal

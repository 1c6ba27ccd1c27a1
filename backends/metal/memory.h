// Metal memory: a MetalBuffer is one MTLBuffer in shared storage, which on Apple GPUs is the one
// unified memory both processors address, so uploads and downloads are memcpys through its CPU
// address (no staging) and kernels reach it by its GPU address written into argument blocks
// (executable.h). A buffer remembers the last run that wrote it (downloads wait for that one) and
// the last that used it (uploads wait for that one; its memory is released after it, so a buffer
// dropped while a run still reads it is released safely, without a wait).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include "backends/metal/metal_api.h"
#include "backends/metal/queue.h"
#include "runtime/device.h"

namespace kiln::runtime::metal {

// A shared-storage MTLBuffer of at least `bytes` (nil when the device is out of memory).
Id new_shared_buffer(const MetalApi& api, Id device, int64_t bytes);

class MetalBuffer : public Buffer {
 public:
  // Takes ownership of `buffer` (+1).
  MetalBuffer(Device* d, std::shared_ptr<Queue> queue, Id buffer, int64_t bytes);
  ~MetalBuffer() override;  // releases the MTLBuffer after its last use
  MetalBuffer(const MetalBuffer&) = delete;
  MetalBuffer& operator=(const MetalBuffer&) = delete;

  Id buffer() const { return buffer_; }
  void* contents() const { return contents_; }
  uint64_t address() const { return address_; }
  uint64_t last_write() const { return last_write_.load(); }
  uint64_t last_use() const { return last_use_.load(); }
  // Run `tick` reads it (and writes it, with `write`).
  void note_run(uint64_t tick, bool write);

 private:
  std::shared_ptr<Queue> queue_;
  Id buffer_;
  void* contents_;
  uint64_t address_;
  std::atomic<uint64_t> last_write_{0}, last_use_{0};
};

}  // namespace kiln::runtime::metal

// The CPU device: host memory, LLVM-JIT'd kernels, a task list replayed on a thread pool.
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "codegen/llvm/compile.h"
#include "backends/cpu/thread_pool.h"
#include "runtime/device.h"
#include "runtime/stats.h"

namespace kiln::runtime {
namespace {

void* aligned_alloc_bytes(int64_t bytes) {
  size_t n = size_t((bytes + 63) / 64 * 64);
  if (n == 0) n = 64;
  return std::aligned_alloc(64, n);
}

// Large blocks freed by buffers are kept for reuse: every realize allocates fresh outputs, and
// handing the same pages back avoids the kernel zeroing and faulting them in again each time.
class BlockPool {
 public:
  ~BlockPool() {
    for (auto& [bytes, p] : free_) std::free(p);
  }
  void* take(int64_t bytes) {
    if (bytes >= kMinPooled) {
      std::lock_guard<std::mutex> lock(mu_);
      auto it = free_.find(bytes);
      if (it != free_.end()) {
        void* p = it->second;
        free_.erase(it);
        cached_ -= bytes;
        return p;
      }
    }
    return aligned_alloc_bytes(bytes);
  }
  void give(void* p, int64_t bytes) {
    if (bytes >= kMinPooled) {
      std::lock_guard<std::mutex> lock(mu_);
      if (cached_ + bytes <= kMaxCached) {
        free_.emplace(bytes, p);
        cached_ += bytes;
        return;
      }
    }
    std::free(p);
  }

 private:
  static constexpr int64_t kMinPooled = 1 << 16;
  static constexpr int64_t kMaxCached = int64_t(1) << 31;
  std::mutex mu_;
  std::multimap<int64_t, void*> free_;
  int64_t cached_ = 0;
};

class HostBuffer : public Buffer {
 public:
  HostBuffer(Device* d, int64_t bytes, void* p, BlockPool* pool) : Buffer(d, bytes), p_(p), pool_(pool) {}
  ~HostBuffer() override { pool_->give(p_, bytes()); }
  char* data() const { return static_cast<char*>(p_); }

 private:
  void* p_;
  BlockPool* pool_;
};

class CpuExecutable : public Executable {
 public:
  CpuExecutable(const ir::Program& p, codegen::cpu::CompiledProgram compiled, cpu::ThreadPool* pool)
      : buffers_(p.buffers), steps_(p.steps), compiled_(std::move(compiled)), pool_(pool), arena_bytes_(p.arena_bytes) {}
  ~CpuExecutable() override {
    for (void* a : arenas_) std::free(a);
  }

  absl::Status run(const std::vector<Buffer*>& inputs, const std::vector<Buffer*>& outputs) override {
    void* arena = take_arena();
    if (!arena) return absl::ResourceExhaustedError(absl::StrCat("cpu: cannot allocate a ", arena_bytes_, "-byte arena"));
    std::vector<char*> ptrs(buffers_.size(), nullptr);
    for (size_t i = 0; i < buffers_.size(); ++i) {
      const ir::BufferDesc& b = buffers_[i];
      switch (b.kind) {
        case ir::BufferKind::kInput: ptrs[i] = static_cast<HostBuffer*>(inputs[b.index])->data(); break;
        case ir::BufferKind::kOutput: ptrs[i] = static_cast<HostBuffer*>(outputs[b.index])->data(); break;
        case ir::BufferKind::kIntermediate: ptrs[i] = static_cast<char*>(arena) + b.offset; break;
      }
    }
    // Steps run in order; each kernel spreads its tiles over the pool.
    for (const ir::Step& s : steps_) {
      const codegen::cpu::CompiledKernel& k = compiled_.kernels[s.kernel];
      if (k.tiles <= 0) continue;
      char** bufs = ptrs.data();
      auto fn = k.fn;
      bool parallel = k.work >= (1 << 15) && k.tiles > 1;
      if (!parallel) {
        fn(bufs, 0, k.tiles);
      } else {
        int64_t chunk = std::max<int64_t>(1, k.tiles / (int64_t(pool_->size()) * 8));
        pool_->parallel_for(k.tiles, chunk, [&](int64_t b, int64_t e) { fn(bufs, b, e); });
      }
    }
    give_arena(arena);
    return absl::OkStatus();
  }
  int kernels_per_run() const override { return int(steps_.size()); }
  std::vector<std::string> sources() const override { return compiled_.ir; }

 private:
  // Each concurrent run gets its own arena; arenas are reused afterwards.
  void* take_arena() {
    std::lock_guard<std::mutex> lock(mu_);
    if (!free_.empty()) {
      void* a = free_.back();
      free_.pop_back();
      return a;
    }
    void* a = aligned_alloc_bytes(arena_bytes_);
    if (a) {
      arenas_.push_back(a);
      counters().bytes_allocated += arena_bytes_;
    }
    return a;
  }
  void give_arena(void* a) {
    std::lock_guard<std::mutex> lock(mu_);
    free_.push_back(a);
  }

  std::vector<ir::BufferDesc> buffers_;
  std::vector<ir::Step> steps_;
  codegen::cpu::CompiledProgram compiled_;
  cpu::ThreadPool* pool_;
  int64_t arena_bytes_;
  std::mutex mu_;
  std::vector<void*> arenas_, free_;
};

class CpuDevice : public Device {
 public:
  CpuDevice() : pool_(int(std::max(1u, std::thread::hardware_concurrency()))) {
    target_.name = "cpu";
    target_.parallelism = pool_.size();
    target_.is_gpu = false;
    target_.vector_width = 8;
    target_.max_fused_row = int64_t(1) << 40;
  }
  std::string name() const override { return "cpu"; }
  std::string description() const override {
    return absl::StrCat("cpu (", pool_.size(), " threads, LLVM ORC JIT for ", codegen::cpu::host_target_description().substr(0, 40), ")");
  }
  const ir::TargetInfo& target() const override { return target_; }

  absl::StatusOr<std::shared_ptr<Buffer>> alloc(int64_t bytes) override {
    if (bytes < 0) return absl::InvalidArgumentError("cpu: negative allocation");
    void* p = pool_blocks_.take(bytes);
    if (!p) return absl::ResourceExhaustedError(absl::StrCat("cpu: out of memory allocating ", bytes, " bytes"));
    counters().bytes_allocated += bytes;
    return std::make_shared<HostBuffer>(this, bytes, p, &pool_blocks_);
  }
  absl::Status upload(Buffer* dst, const void* src, int64_t bytes) override {
    if (bytes > dst->bytes()) return absl::OutOfRangeError("cpu: upload larger than the buffer");
    std::memcpy(static_cast<HostBuffer*>(dst)->data(), src, size_t(bytes));
    return absl::OkStatus();
  }
  absl::Status download(Buffer* src, void* dst, int64_t bytes) override {
    if (bytes > src->bytes()) return absl::OutOfRangeError("cpu: download larger than the buffer");
    std::memcpy(dst, static_cast<HostBuffer*>(src)->data(), size_t(bytes));
    return absl::OkStatus();
  }
  absl::StatusOr<std::unique_ptr<Executable>> compile(const ir::Program& p) override {
    const bool keep_ir = std::getenv("KILN_DUMP_DIR") || (std::getenv("KILN_DEBUG") && std::atoi(std::getenv("KILN_DEBUG")) >= 4);
    auto c = codegen::cpu::compile_program(p, keep_ir);
    if (!c.ok()) return c.status();
    counters().kernels_compiled += int64_t(p.kernels.size());
    return std::unique_ptr<Executable>(new CpuExecutable(p, *std::move(c), &pool_));
  }

 private:
  BlockPool pool_blocks_;  // before pool_: outlives nothing that uses it
  cpu::ThreadPool pool_;
  ir::TargetInfo target_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<Device>> create_cpu_device() { return std::unique_ptr<Device>(new CpuDevice()); }

}  // namespace kiln::runtime

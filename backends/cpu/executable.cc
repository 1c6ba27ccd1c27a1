// The CPU task list (executable.h): linking at load, binding checks, and the run over the pool.
#include "backends/cpu/executable.h"

#include <algorithm>
#include <cstdint>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "runtime/bindings.h"
#include "runtime/disk_cache.h"
#include "backends/cpu/memory.h"
#include "backends/cpu/target.h"
#include "runtime/stats.h"
#include "support/trace.h"

namespace kiln::runtime::cpu {

absl::StatusOr<std::unique_ptr<Executable>> CpuExecutable::load(const CompiledProgram& c, Device* device, ThreadPool* pool) {
  std::vector<std::string> symbols;  // each kernel's entry point: its own, or its twin's
  std::vector<Kernel> kernels;
  for (size_t i = 0; i < c.kernels.size(); ++i) {
    const CompiledKernel& k = c.kernels[i];
    if (k.name.empty() || k.tiles < 0 || k.work < 0)
      return absl::InvalidArgumentError(absl::StrCat("cpu: kernel '", k.name, "' of the compiled program has no symbol or a negative size"));
    symbols.push_back(c.entry(i));
    Kernel e{nullptr, {}, k.tiles, k.work, k.name, k.bytes, k.flops, k.computes};
    for (int b : k.buffers) e.index.push_back(b);
    for (int p : k.params) e.index.push_back(int32_t(c.buffers.size()) + p);
    kernels.push_back(std::move(e));
  }
  std::unique_ptr<LinkedObject> code;
  if (!kernels.empty()) {
    auto linked = link_object(c.module, symbols);
    if (!linked.ok()) return linked.status();
    code = *std::move(linked);
    for (size_t i = 0; i < kernels.size(); ++i) kernels[i].fn = code->functions()[i];
  }
  auto e = std::unique_ptr<CpuExecutable>(new CpuExecutable(c, std::move(code), std::move(kernels), device, pool));
  e->module_hash_ = stable_hash64(c.module);
  return std::unique_ptr<Executable>(std::move(e));
}

absl::Status CpuExecutable::resize(const CompiledProgram& c) {
  std::lock_guard<std::mutex> lock(mu_);
  auto refuse = [](const std::string& why) {
    return absl::FailedPreconditionError(absl::StrCat("cpu: this executable cannot take the program: ", why));
  };
  if (!c.module.empty() && stable_hash64(c.module) != module_hash_) return refuse("its module differs");
  if (std::string why = differs_beyond_sizes(c, steps_, buffers_, kernels_.size(), num_inputs_, num_outputs_, num_params_); !why.empty())
    return refuse(why);
  for (size_t i = 0; i < c.kernels.size(); ++i) {
    const CompiledKernel& k = c.kernels[i];
    std::vector<int32_t> index(k.buffers.begin(), k.buffers.end());
    for (int p : k.params) index.push_back(int32_t(c.buffers.size()) + p);
    if (index != kernels_[i].index || k.tiles < 0 || k.work < 0)
      return refuse(absl::StrCat(k.name, " takes other arguments"));
  }
  if (free_.size() != arenas_.size()) return refuse("a run is using its arena");
  if (c.arena_bytes > arena_bytes_) {  // the arenas kept are too small for this size
    for (void* a : arenas_) std::free(a);
    arenas_.clear();
    free_.clear();
    arena_bytes_ = c.arena_bytes;
  }
  buffers_ = c.buffers;
  for (size_t i = 0; i < c.kernels.size(); ++i) {
    kernels_[i].tiles = c.kernels[i].tiles;
    kernels_[i].work = c.kernels[i].work;
    kernels_[i].bytes = c.kernels[i].bytes;
    kernels_[i].flops = c.kernels[i].flops;
  }
  counters().executables_resized++;
  return absl::OkStatus();
}

CpuExecutable::CpuExecutable(const CompiledProgram& c, std::unique_ptr<LinkedObject> code, std::vector<Kernel> kernels,
                             Device* device, ThreadPool* pool)
    : buffers_(c.buffers), steps_(c.steps), links_(ir::block_links(c.steps)), num_inputs_(c.num_inputs), num_outputs_(c.num_outputs), num_params_(c.params.size()),
      arena_bytes_(c.arena_bytes), code_(std::move(code)), kernels_(std::move(kernels)), device_(device), pool_(pool) {}

CpuExecutable::~CpuExecutable() {
  for (void* a : arenas_) std::free(a);
}

absl::Status CpuExecutable::bind(const std::vector<Buffer*>& inputs, const std::vector<Buffer*>& outputs,
                                 const ParamValues& params, char* arena, std::vector<char*>* ptrs) const {
  if (absl::Status s = check_bindings("cpu", device_, buffers_, num_inputs_, num_outputs_, inputs, outputs, num_params_, params);
      !s.ok())
    return s;
  ptrs->assign(buffers_.size() + params.size(), nullptr);
  for (size_t i = 0; i < params.size(); ++i) (*ptrs)[buffers_.size() + i] = reinterpret_cast<char*>(uintptr_t(params[i]));
  for (size_t i = 0; i < buffers_.size(); ++i) {
    const ir::BufferDesc& b = buffers_[i];
    switch (b.kind) {
      case ir::BufferKind::kIntermediate: (*ptrs)[i] = arena + b.offset; break;
      case ir::BufferKind::kInput: (*ptrs)[i] = static_cast<HostBuffer*>(inputs[size_t(b.index)])->data(); break;
      case ir::BufferKind::kOutput: (*ptrs)[i] = static_cast<HostBuffer*>(outputs[size_t(b.index)])->data(); break;
    }
  }
  return absl::OkStatus();
}

absl::Status CpuExecutable::run(const std::vector<Buffer*>& inputs, const std::vector<Buffer*>& outputs,
                                const ParamValues& params) {
  void* arena = take_arena();
  if (!arena) return absl::ResourceExhaustedError(absl::StrCat("cpu: cannot allocate a ", arena_bytes_, "-byte arena"));
  std::vector<char*> ptrs;
  if (absl::Status s = bind(inputs, outputs, params, static_cast<char*>(arena), &ptrs); !s.ok()) {
    give_arena(arena);
    return s;
  }
  // Each kernel spreads its tiles over the pool.
  char** bufs = ptrs.data();
  const bool traced = support::tracing();
  const support::Peaks peaks = traced ? host_peaks(int(pool_->size()), device_->target().vector_width) : support::Peaks{};
  // Steps run in order; loops and branches are native jumps over the step list (ir/program.h).
  std::vector<int64_t> trips(steps_.size(), 0);
  for (size_t i = 0; i < steps_.size();) {
    const ir::Step& s = steps_[i];
    if (s.is_collective()) {  // through the group's host communicator (MPI, threads)
      ++i;
      absl::Status st = run_collective(s, bufs);
      if (!st.ok()) {
        give_arena(arena);
        return st;
      }
      continue;
    }
    if (!s.is_kernel()) {
      auto next = ir::step_after_marker(steps_, links_, i, s.flag >= 0 && *bufs[s.flag] != 0, &trips);
      if (!next.ok()) {
        give_arena(arena);
        return next.status();
      }
      i = *next;
      continue;
    }
    ++i;
    const Kernel& k = kernels_[s.kernel];
    if (k.tiles <= 0) continue;
    KernelFn fn = k.fn;
    const int32_t* index = k.index.data();
    const bool parallel = k.work >= (1 << 15) && k.tiles > 1;
    const double t0 = traced ? support::trace_now_us_precise() : 0;
    if (!parallel) {
      fn(bufs, index, 0, k.tiles);
    } else {
      int64_t chunk = std::max<int64_t>(1, k.tiles / (int64_t(pool_->size()) * 8));
      pool_->parallel_for(k.tiles, chunk, [&](int64_t b, int64_t e) { fn(bufs, index, b, e); });
    }
    if (traced) {
      support::KernelRun run;
      run.name = k.name;
      run.kernel = s.kernel;
      run.start_us = t0;
      run.dur_us = support::trace_now_us_precise() - t0;
      run.bytes = k.bytes;
      run.flops = k.flops;
      run.computes = k.computes;
      support::trace_kernel("cpu", run, peaks,
                            absl::StrCat("\"tiles\": ", k.tiles, ", \"element_ops\": ", k.work, ", \"threads\": ",
                                         parallel ? int(pool_->size()) : 1));
    }
  }
  give_arena(arena);
  return absl::OkStatus();
}

absl::Status CpuExecutable::run_collective(const ir::Step& s, char** bufs) const {
  auto comm = ir::communicator_for(s.collective);
  if (!comm.ok()) return comm.status();
  const ir::CollectiveCall call = ir::collective_call(s, buffers_);
  const double t0 = support::tracing() ? support::trace_now_us_precise() : 0;
  absl::Status st = (*comm)->run(call, bufs[s.in], bufs[s.out]);
  if (support::tracing())
    support::trace_event(ir::describe(s.collective), "collective", t0, support::trace_now_us_precise() - t0);
  return st;
}

void* CpuExecutable::take_arena() {
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

void CpuExecutable::give_arena(void* a) {
  std::lock_guard<std::mutex> lock(mu_);
  free_.push_back(a);
}

}  // namespace kiln::runtime::cpu

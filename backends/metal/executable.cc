// The Metal executable (executable.h).
#include "backends/metal/executable.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "backends/metal/memory.h"
#include "runtime/bindings.h"
#include "runtime/stats.h"

namespace kiln::runtime::metal {

absl::StatusOr<std::unique_ptr<MetalExecutable>> MetalExecutable::create(Device* device, Id mtl_device,
                                                                         std::shared_ptr<Queue> queue,
                                                                         const ir::TargetInfo& target,
                                                                         const CompiledProgram& c) {
  std::unique_ptr<MetalExecutable> e(new MetalExecutable(device, mtl_device, std::move(queue)));
  if (absl::Status s = e->build(target, c); !s.ok()) return s;
  return e;
}

absl::Status MetalExecutable::build(const ir::TargetInfo& target, const CompiledProgram& c) {
  buffers_ = c.buffers;
  num_inputs_ = c.num_inputs;
  num_outputs_ = c.num_outputs;
  num_params_ = c.params.size();
  kernels_ = c.kernels;
  for (CompiledKernel& k : kernels_) k.source.clear(), k.binary.clear();
  plan_ = plan_launches(c);
  if (absl::Status s = build_pipelines(target, c); !s.ok()) return s;
  return build_arena(c);
}

absl::Status MetalExecutable::build_pipelines(const ir::TargetInfo& target, const CompiledProgram& c) {
  if (plan_.launches.empty()) return absl::OkStatus();
  std::string log;
  library_ = api_.new_library(mtl_device_, c.module, &log);
  if (!library_) return absl::InternalError(absl::StrCat("metal: the program's MSL does not compile: ", log));
  std::map<std::string, Id> by_entry;  // twins share their family's pipeline
  std::map<Id, unsigned long> max_threads;
  for (const Launch& l : plan_.launches) {
    const CompiledKernel& k = c.kernels[size_t(l.kernel)];
    const std::string& entry = c.entry(size_t(l.kernel));
    if (k.shared_bytes > 0)
      return absl::InternalError(absl::StrCat("metal: kernel ", k.name, " asks for ", k.shared_bytes,
                                              " bytes of dynamic threadgroup memory; Metal kernels declare theirs"));
    auto [it, fresh] = by_entry.emplace(entry, nullptr);
    if (fresh) {
      Id function = api_.new_function(library_, entry);
      if (!function) return absl::InternalError(absl::StrCat("metal: the compiled library has no kernel ", entry));
      functions_.push_back(function);
      PipelineInfo info;
      Id pipeline = api_.new_pipeline(mtl_device_, function, &info, &log);
      if (!pipeline) return absl::InternalError(absl::StrCat("metal: no compute pipeline for kernel ", entry, ": ", log));
      pipelines_.push_back(pipeline);
      if (info.execution_width != static_cast<unsigned long>(target.subgroup_size))
        return absl::UnimplementedError(absl::StrCat("metal: kernel ", entry, " runs in SIMD-groups of ", info.execution_width,
                                                     " threads on this GPU; it was compiled for ", target.subgroup_size));
      it->second = pipeline;
      max_threads[pipeline] = info.max_threads;
    }
    const unsigned long threads = static_cast<unsigned long>(k.block[0]) * k.block[1] * k.block[2];
    if (threads > max_threads[it->second])
      return absl::InternalError(absl::StrCat("metal: kernel ", k.name, " launches threadgroups of ", threads,
                                              " threads; its pipeline takes at most ", max_threads[it->second],
                                              " on this GPU"));
    launch_pipeline_.push_back(it->second);
  }
  return absl::OkStatus();
}

absl::Status MetalExecutable::build_arena(const CompiledProgram& c) {
  uint64_t base = 0;
  char* host = nullptr;
  if (c.arena_bytes > 0) {
    arena_ = new_shared_buffer(api_, mtl_device_, c.arena_bytes);
    if (!arena_)
      return absl::ResourceExhaustedError(
          absl::StrCat("metal: out of memory allocating the ", c.arena_bytes, "-byte arena of intermediates"));
    counters().bytes_allocated += c.arena_bytes;
    base = api_.gpu_address(arena_);
    host = static_cast<char*>(api_.contents(arena_));
  }
  addresses_.assign(buffers_.size(), 0);
  for (size_t i = 0; i < buffers_.size(); ++i) {
    const ir::BufferDesc& b = buffers_[i];
    if (b.kind != ir::BufferKind::kIntermediate || !arena_) continue;
    addresses_[i] = base + uint64_t(b.offset);
    // Zeroed intermediates (a chained kernel's tickets) start at zero; the kernels keep them so.
    if (b.zeroed && b.bytes() > 0) std::memset(host + b.offset, 0, size_t(b.bytes()));
  }
  return absl::OkStatus();
}

MetalExecutable::~MetalExecutable() {
  // Runs in flight still use all of it: the queue releases it after the latest one.
  for (const std::unique_ptr<Slot>& s : slots_) {
    queue_->release_after(s->icb, last_tick_);
    queue_->release_after(s->args, last_tick_);
  }
  queue_->release_after(arena_, last_tick_);
  for (Id p : pipelines_) queue_->release_after(p, last_tick_);
  for (Id f : functions_) queue_->release_after(f, last_tick_);
  queue_->release_after(library_, last_tick_);
}

absl::Status MetalExecutable::fill_slot(Slot* s) {
  s->args = new_shared_buffer(api_, mtl_device_, int64_t(plan_.args_bytes));
  if (!s->args) return absl::ResourceExhaustedError("metal: out of memory allocating argument blocks");
  s->blocks = static_cast<uint64_t*>(api_.contents(s->args));
  std::memset(s->blocks, 0, plan_.args_bytes);
  s->icb = api_.new_indirect_command_buffer(mtl_device_, plan_.launches.size());
  if (!s->icb)
    return absl::ResourceExhaustedError(
        absl::StrCat("metal: no indirect command buffer of ", plan_.launches.size(), " commands"));
  for (size_t i = 0; i < plan_.launches.size(); ++i) {
    const Launch& l = plan_.launches[i];
    const CompiledKernel& k = kernels_[size_t(l.kernel)];
    api_.encode_dispatch(s->icb, i, launch_pipeline_[i], s->args, l.args_offset, MtlSize{k.grid[0], k.grid[1], k.grid[2]},
                         MtlSize{k.block[0], k.block[1], k.block[2]}, l.barrier);
  }
  return absl::OkStatus();
}

absl::StatusOr<MetalExecutable::Slot*> MetalExecutable::acquire_slot() {
  for (const std::unique_ptr<Slot>& s : slots_)
    if (queue_->done(s->tick)) return s.get();
  if (slots_.size() < kMaxSlots) {
    auto s = std::make_unique<Slot>();
    if (absl::Status filled = fill_slot(s.get()); !filled.ok()) {
      api_.release(s->icb);  // never used by a run
      api_.release(s->args);
      return filled;
    }
    slots_.push_back(std::move(s));
    return slots_.back().get();
  }
  Slot* oldest = slots_.front().get();
  for (const std::unique_ptr<Slot>& s : slots_)
    if (s->tick < oldest->tick) oldest = s.get();
  if (absl::Status s = queue_->wait(oldest->tick); !s.ok()) return s;
  return oldest;
}

absl::Status MetalExecutable::encode(Id cb, const Slot& s, const std::vector<Buffer*>& inputs,
                                     const std::vector<Buffer*>& outputs) const {
  // Every buffer the kernels reach through the argument blocks, once each (read and write wins).
  std::vector<std::pair<Id, bool>> resident;
  auto use = [&](Id buffer, bool write) {
    if (!buffer) return;
    for (auto& [b, w] : resident)
      if (b == buffer) {
        w = w || write;
        return;
      }
    resident.emplace_back(buffer, write);
  };
  use(s.args, false);
  use(arena_, true);
  for (Buffer* b : inputs) use(static_cast<MetalBuffer*>(b)->buffer(), false);
  for (Buffer* b : outputs) use(static_cast<MetalBuffer*>(b)->buffer(), true);
  Id encoder = api_.new_compute_encoder(cb);
  if (!encoder) return absl::InternalError("metal: the command buffer made no compute encoder");
  for (const auto& [b, write] : resident) api_.use_resource(encoder, b, write);
  const size_t n = plan_.launches.size();
  for (size_t first = 0; first < n; first += kMaxCommandsPerExecute) {
    if (first > 0) api_.memory_barrier(encoder);  // the barriers of one execution do not reach into the next
    api_.execute_commands(encoder, s.icb, first, std::min(kMaxCommandsPerExecute, n - first));
  }
  api_.end_encoding(encoder);
  api_.release(encoder);
  return absl::OkStatus();
}

absl::Status MetalExecutable::run(const std::vector<Buffer*>& inputs, const std::vector<Buffer*>& outputs,
                                  const ParamValues& params) {
  if (absl::Status s =
          check_bindings("metal", device_, buffers_, num_inputs_, num_outputs_, inputs, outputs, num_params_, params);
      !s.ok())
    return s;
  std::lock_guard<std::mutex> lock(mu_);
  if (plan_.launches.empty()) return absl::OkStatus();
  for (size_t i = 0; i < buffers_.size(); ++i) {
    const ir::BufferDesc& b = buffers_[i];
    if (b.kind == ir::BufferKind::kIntermediate) continue;
    Buffer* buf = b.kind == ir::BufferKind::kInput ? inputs[size_t(b.index)] : outputs[size_t(b.index)];
    addresses_[i] = static_cast<MetalBuffer*>(buf)->address();
  }
  auto slot = acquire_slot();
  if (!slot.ok()) return slot.status();
  Slot* s = *slot;
  for (const Launch& l : plan_.launches)
    write_arguments(kernels_[size_t(l.kernel)], addresses_, params, s->blocks + l.args_offset / sizeof(uint64_t));
  auto tick = queue_->submit([&](Id cb) { return encode(cb, *s, inputs, outputs); });
  if (!tick.ok()) return tick.status();
  s->tick = last_tick_ = *tick;
  for (Buffer* b : inputs) static_cast<MetalBuffer*>(b)->note_run(*tick, false);
  for (Buffer* b : outputs) static_cast<MetalBuffer*>(b)->note_run(*tick, true);
  return absl::OkStatus();
}

}  // namespace kiln::runtime::metal

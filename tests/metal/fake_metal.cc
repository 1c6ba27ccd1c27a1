// The in-process fake of Metal (fake_metal.h).
#include "metal/fake_metal.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"

namespace kiln::testing {

using runtime::metal::PipelineInfo;

struct FakeMetal::Object {
  enum Kind { kDevice, kBuffer, kLibrary, kFunction, kPipeline, kQueue, kIcb, kEvent, kCommandBuffer, kEncoder };
  explicit Object(Kind k) : kind(k) {}
  Kind kind;
  int refs = 1;
  void* memory = nullptr;  // buffer
  size_t length = 0;
  std::string text;        // library: its source; function, pipeline: the function's name
  size_t icb = 0;          // icb: its index in the fake's list
  uint64_t value = 0;      // event
  // Command buffer: its event wait and signal, passes, status (MTLCommandBufferStatus), error.
  Object* wait_event = nullptr;
  uint64_t wait_value = 0;
  Object* signal_event = nullptr;
  uint64_t signal_value = 0;
  struct PassRecord {
    Pass pass;
    std::vector<Object*> icbs;  // per execution
  };
  std::vector<PassRecord> passes;
  int open_encoders = 0;
  unsigned long status = 0;  // MTLCommandBufferStatusNotEnqueued
  std::string error;
  size_t submission = 0;
  Object* command_buffer = nullptr;  // encoder: its command buffer (a reference held)
  bool open = false;
};

namespace {

using Object = FakeMetal::Object;

FakeMetal* fake = nullptr;
std::set<Object*>* live = nullptr;
std::vector<std::vector<FakeMetal::Command>>* icb_commands = nullptr;
std::vector<Object*>* pending = nullptr;  // committed, not executed (each holds a reference)

void violation(const std::string& what) { fake->violations.push_back(what); }

Object* make(Object::Kind k) {
  auto* o = new Object(k);
  live->insert(o);
  return o;
}

Object* as(Id id, Object::Kind k, const char* what) {
  auto* o = static_cast<Object*>(id);
  if (!o || !live->count(o)) {
    violation(absl::StrCat(what, ": not a live object"));
    return nullptr;
  }
  if (o->kind != k) {
    violation(absl::StrCat(what, ": an object of another kind"));
    return nullptr;
  }
  return o;
}

void release(Id id) {
  if (!id) return;  // a message to nil does nothing
  auto* o = static_cast<Object*>(id);
  if (!live->count(o)) return violation("release of an object already released");
  if (--o->refs > 0) return;
  if (o->kind == Object::kEncoder && o->command_buffer) release(o->command_buffer);
  std::free(o->memory);
  live->erase(o);
  delete o;
}

Id create_default_device() { return fake->has_device ? make(Object::kDevice) : nullptr; }
std::string name_of_device(Id) { return fake->device_name; }
bool supports_metal3(Id device) { return as(device, Object::kDevice, "supportsFamily") && fake->metal3; }

Id new_buffer(Id device, size_t bytes) {
  if (!as(device, Object::kDevice, "newBufferWithLength") || fake->out_of_memory) return nullptr;
  if (bytes == 0) violation("newBufferWithLength: 0 bytes");
  Object* b = make(Object::kBuffer);
  b->length = bytes;
  const size_t rounded = (bytes + 255) / 256 * 256;
  b->memory = std::aligned_alloc(256, rounded);
  std::memset(b->memory, 0xCD, rounded);
  return b;
}

void* contents(Id buffer) {
  Object* b = as(buffer, Object::kBuffer, "contents");
  return b ? b->memory : nullptr;
}

uint64_t gpu_address(Id buffer) {
  Object* b = as(buffer, Object::kBuffer, "gpuAddress");
  return b ? reinterpret_cast<uint64_t>(b->memory) : 0;
}

Id new_library(Id device, const std::string& source, std::string* log) {
  if (!as(device, Object::kDevice, "newLibraryWithSource")) return nullptr;
  fake->libraries.push_back(source);
  if (!fake->compile_error.empty()) {
    *log = fake->compile_error;
    return nullptr;
  }
  Object* l = make(Object::kLibrary);
  l->text = source;
  return l;
}

Id new_function(Id library, const std::string& name) {
  Object* l = as(library, Object::kLibrary, "newFunctionWithName");
  if (!l || l->text.find(absl::StrCat("kernel void ", name, "(")) == std::string::npos) return nullptr;
  Object* f = make(Object::kFunction);
  f->text = name;
  return f;
}

Id new_pipeline(Id device, Id function, PipelineInfo* info, std::string* log) {
  Object* f = as(function, Object::kFunction, "newComputePipelineState");
  if (!as(device, Object::kDevice, "newComputePipelineState") || !f) {
    *log = "bad handles";
    return nullptr;
  }
  Object* p = make(Object::kPipeline);
  p->text = f->text;
  info->execution_width = fake->execution_width;
  info->max_threads = fake->max_threads;
  return p;
}

Id new_command_queue(Id device) { return as(device, Object::kDevice, "newCommandQueue") ? make(Object::kQueue) : nullptr; }

Id new_indirect_command_buffer(Id device, size_t commands) {
  if (!as(device, Object::kDevice, "newIndirectCommandBuffer")) return nullptr;
  Object* icb = make(Object::kIcb);
  icb->icb = icb_commands->size();
  icb_commands->emplace_back(commands);
  return icb;
}

void encode_dispatch(Id icb, size_t index, Id pipeline, Id args, size_t offset, MtlSize grid, MtlSize block, bool barrier) {
  Object* i = as(icb, Object::kIcb, "indirectComputeCommandAtIndex");
  Object* p = as(pipeline, Object::kPipeline, "setComputePipelineState");
  if (!i || !p || !as(args, Object::kBuffer, "setKernelBuffer")) return;
  std::vector<FakeMetal::Command>& commands = (*icb_commands)[i->icb];
  if (index >= commands.size()) return violation(absl::StrCat("command ", index, " of an ICB of ", commands.size()));
  FakeMetal::Command& c = commands[index];
  c.function = p->text;
  c.args = args;
  c.offset = offset;
  c.grid = grid;
  c.block = block;
  c.barrier = barrier;
  c.encodings++;
}

Id new_shared_event(Id device) { return as(device, Object::kDevice, "newSharedEvent") ? make(Object::kEvent) : nullptr; }

void set_signaled_value(Id event, uint64_t value) {
  if (Object* e = as(event, Object::kEvent, "setSignaledValue")) e->value = std::max(e->value, value);
}

Id new_command_buffer(Id queue) { return as(queue, Object::kQueue, "commandBuffer") ? make(Object::kCommandBuffer) : nullptr; }

void encode_wait(Id cb, Id event, uint64_t value) {
  Object* c = as(cb, Object::kCommandBuffer, "encodeWaitForEvent");
  Object* e = as(event, Object::kEvent, "encodeWaitForEvent");
  if (!c || !e) return;
  c->wait_event = e;
  c->wait_value = value;
}

void encode_signal(Id cb, Id event, uint64_t value) {
  Object* c = as(cb, Object::kCommandBuffer, "encodeSignalEvent");
  Object* e = as(event, Object::kEvent, "encodeSignalEvent");
  if (!c || !e) return;
  c->signal_event = e;
  c->signal_value = value;
}

Id new_compute_encoder(Id cb) {
  Object* c = as(cb, Object::kCommandBuffer, "computeCommandEncoder");
  if (!c) return nullptr;
  if (c->open_encoders > 0) violation("a second encoder while one is open");
  Object* e = make(Object::kEncoder);
  e->command_buffer = c;
  e->open = true;
  c->refs++;
  c->open_encoders++;
  c->passes.emplace_back();
  return e;
}

Object::PassRecord* pass_of(Id encoder, const char* what) {
  Object* e = as(encoder, Object::kEncoder, what);
  if (!e) return nullptr;
  if (!e->open) {
    violation(absl::StrCat(what, " after endEncoding"));
    return nullptr;
  }
  return &e->command_buffer->passes.back();
}

void use_resource(Id encoder, Id resource, bool write) {
  Object::PassRecord* p = pass_of(encoder, "useResource");
  if (!p || !as(resource, Object::kBuffer, "useResource")) return;
  p->pass.resident[resource] = p->pass.resident[resource] || write;
}

void execute_commands(Id encoder, Id icb, size_t first, size_t count) {
  Object::PassRecord* p = pass_of(encoder, "executeCommandsInBuffer");
  Object* i = as(icb, Object::kIcb, "executeCommandsInBuffer");
  if (!p || !i) return;
  if (first + count > (*icb_commands)[i->icb].size()) violation("executeCommandsInBuffer: a range beyond the ICB");
  if (count > runtime::metal::kMaxCommandsPerExecute) violation("executeCommandsInBuffer: more than 16384 commands");
  p->pass.executions.emplace_back(first, count);
  p->icbs.push_back(i);
}

void memory_barrier(Id encoder) {
  if (Object::PassRecord* p = pass_of(encoder, "memoryBarrierWithScope")) p->pass.memory_barriers++;
}

void end_encoding(Id encoder) {
  if (!pass_of(encoder, "endEncoding")) return;
  Object* e = static_cast<Object*>(encoder);
  e->open = false;
  e->command_buffer->open_encoders--;
}

// Runs one committed command buffer (see fake_metal.h).
void execute(Object* cb) {
  if (cb->wait_event && cb->wait_event->value < cb->wait_value)
    violation(absl::StrCat("a run started while the event it waits for is at ", cb->wait_event->value, ", not ", cb->wait_value));
  const bool fails = fake->failing_commits.count(cb->submission) > 0;
  for (Object::PassRecord& p : cb->passes) {
    for (size_t x = 0; x < p.pass.executions.size(); ++x) {
      const auto [first, count] = p.pass.executions[x];
      const std::vector<FakeMetal::Command>& commands = (*icb_commands)[p.icbs[x]->icb];
      for (size_t i = first; i < first + count && i < commands.size(); ++i) {
        const FakeMetal::Command& c = commands[i];
        auto* args = static_cast<Object*>(c.args);
        if (!args || !live->count(args)) {
          violation(absl::StrCat("command ", i, " (", c.function, ") reads a released argument buffer"));
          continue;
        }
        if (!p.pass.resident.count(c.args))
          violation(absl::StrCat("command ", i, " (", c.function, "): argument buffer not resident"));
        auto k = fake->kernels.find(c.function);
        if (k == fake->kernels.end()) {
          violation(absl::StrCat("no fake kernel ", c.function));
          continue;
        }
        const auto* block = reinterpret_cast<const uint64_t*>(static_cast<char*>(args->memory) + c.offset);
        const size_t words = size_t(k->second.buffers + k->second.params);
        if (c.offset + words * 8 > args->length) violation(absl::StrCat("command ", i, " reads past its argument buffer"));
        fake->executed.push_back(FakeMetal::Executed{c.function, std::vector<uint64_t>(block, block + words)});
        for (int j = 0; j < k->second.buffers; ++j) {
          auto [base, length] = fake->buffer_at(block[j]);
          if (length == 0) {
            violation(absl::StrCat(c.function, ": slot ", j, " is not the address of a live buffer"));
            continue;
          }
          for (Object* o : *live)
            if (o->kind == Object::kBuffer && reinterpret_cast<uint64_t>(o->memory) == base && !p.pass.resident.count(o))
              violation(absl::StrCat(c.function, ": the buffer of slot ", j, " is not resident"));
        }
        if (k->second.body && !fails) k->second.body(block, c.grid, c.block);
      }
    }
  }
  if (fails) {
    cb->status = runtime::metal::kCommandBufferError;
    cb->error = "fake GPU fault";
  } else {
    if (cb->signal_event) cb->signal_event->value = std::max(cb->signal_event->value, cb->signal_value);
    cb->status = runtime::metal::kCommandBufferCompleted;
  }
  fake->submissions[cb->submission].executed = true;
}

void run_until(Object* last) {
  while (!pending->empty()) {
    Object* cb = pending->front();
    pending->erase(pending->begin());
    execute(cb);
    const bool done = cb == last;
    release(cb);
    if (done) return;
  }
}

void commit(Id cb) {
  Object* c = as(cb, Object::kCommandBuffer, "commit");
  if (!c) return;
  if (c->open_encoders > 0) violation("commit with an encoder still open");
  if (c->status != 0) return violation("a command buffer committed twice");
  c->status = 2;  // MTLCommandBufferStatusCommitted
  c->submission = fake->submissions.size();
  FakeMetal::Submission s;
  s.wait = c->wait_event ? c->wait_value : 0;
  s.signal = c->signal_event ? c->signal_value : 0;
  for (const Object::PassRecord& p : c->passes) s.passes.push_back(p.pass);
  fake->submissions.push_back(std::move(s));
  c->refs++;
  pending->push_back(c);
  if (!fake->hold) run_until(c);
}

void wait_until_completed(Id cb) {
  Object* c = as(cb, Object::kCommandBuffer, "waitUntilCompleted");
  if (!c) return;
  if (c->status == 0) return violation("waitUntilCompleted on a command buffer never committed");
  if (c->status == 2) run_until(c);
}

unsigned long status(Id cb) {
  Object* c = as(cb, Object::kCommandBuffer, "status");
  return c ? c->status : 0;
}

std::string error_text(Id cb) {
  Object* c = as(cb, Object::kCommandBuffer, "error");
  return c ? c->error : "";
}

}  // namespace

FakeMetal::FakeMetal() {
  fake = this;
  live = new std::set<Object*>;
  icb_commands = new std::vector<std::vector<Command>>;
  pending = new std::vector<Object*>;
  api_.library = "fake Metal";
  api_.release = &release;
  api_.create_default_device = &create_default_device;
  api_.device_name = &name_of_device;
  api_.supports_metal3 = &supports_metal3;
  api_.new_buffer = &new_buffer;
  api_.contents = &contents;
  api_.gpu_address = &gpu_address;
  api_.new_library = &new_library;
  api_.new_function = &new_function;
  api_.new_pipeline = &new_pipeline;
  api_.new_command_queue = &new_command_queue;
  api_.new_indirect_command_buffer = &new_indirect_command_buffer;
  api_.encode_dispatch = &encode_dispatch;
  api_.new_shared_event = &new_shared_event;
  api_.set_signaled_value = &set_signaled_value;
  api_.new_command_buffer = &new_command_buffer;
  api_.encode_wait = &encode_wait;
  api_.encode_signal = &encode_signal;
  api_.new_compute_encoder = &new_compute_encoder;
  api_.use_resource = &use_resource;
  api_.execute_commands = &execute_commands;
  api_.memory_barrier = &memory_barrier;
  api_.end_encoding = &end_encoding;
  api_.commit = &commit;
  api_.wait_until_completed = &wait_until_completed;
  api_.status = &status;
  api_.error_text = &error_text;
}

FakeMetal::~FakeMetal() {
  for (Object* o : *live) {
    std::free(o->memory);
    delete o;
  }
  delete live;
  delete icb_commands;
  delete pending;
  fake = nullptr;
}

std::vector<std::vector<FakeMetal::Command>> FakeMetal::icbs() const { return *icb_commands; }

std::pair<uint64_t, size_t> FakeMetal::buffer_at(uint64_t address) const {
  for (Object* o : *live) {
    if (o->kind != Object::kBuffer) continue;
    const auto base = reinterpret_cast<uint64_t>(o->memory);
    if (address >= base && address < base + o->length) return {base, o->length};
  }
  return {0, 0};
}

int FakeMetal::live_objects() const { return int(live->size()); }

void FakeMetal::run_pending() { run_until(nullptr); }

}  // namespace kiln::testing

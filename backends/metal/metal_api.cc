// The MetalApi table filled through the Objective-C runtime (metal_api.h). Every message is sent
// by casting objc_msgSend to the message's own C function type, which is how compiled
// Objective-C calls it: on arm64 and x86-64 that is correct for every message here, since none
// returns a struct or a float (no _stret / _fpret variant is needed) and struct arguments
// (MTLSize, NSRange) travel as the ABI passes them to any C function. Selector spellings and
// enum values are Apple's (MTLIndirectCommandBuffer.h, MTLLibrary.h, MTLDevice.h, MTLResource.h,
// MTLCommandBuffer.h, MTLComputeCommandEncoder.h); each value is named where it is used.
#include "backends/metal/metal_api.h"

#include <dlfcn.h>

#include <mutex>
#include <type_traits>

#include "absl/strings/str_cat.h"

namespace kiln::runtime::metal {
namespace {

using Sel = void*;
// Objective-C's BOOL: bool on arm64, signed char on x86-64 (objc/objc.h).
#if defined(__aarch64__)
using ObjcBool = bool;
#else
using ObjcBool = signed char;
#endif

struct NsRange {  // NSRange
  unsigned long location, length;
};

// The Objective-C runtime's entry points (libobjc) and Metal's one C function.
struct Runtime {
  void* msg_send = nullptr;
  Sel (*sel_register_name)(const char*) = nullptr;
  Id (*get_class)(const char*) = nullptr;
  void* (*pool_push)() = nullptr;
  void (*pool_pop)(void*) = nullptr;
  Id (*create_device)() = nullptr;
  Id (*copy_all_devices)() = nullptr;  // MTLCopyAllDevices: an owned NSArray
};
Runtime rt;

// Msg<R(A...)>::send(object, "selector:", a...): the message with exactly that C type.
template <typename F>
struct Msg;
template <typename R, typename... A>
struct Msg<R(A...)> {
  static R send(Id self, const char* selector, A... a) {
    return reinterpret_cast<R (*)(Id, Sel, A...)>(rt.msg_send)(self, rt.sel_register_name(selector), a...);
  }
};

// Drains the autoreleased temporaries of one entry.
class Pool {
 public:
  Pool() : pool_(rt.pool_push()) {}
  ~Pool() { rt.pool_pop(pool_); }
  Pool(const Pool&) = delete;
  Pool& operator=(const Pool&) = delete;

 private:
  void* pool_;
};

Id new_object(const char* cls) { return Msg<Id()>::send(Msg<Id()>::send(rt.get_class(cls), "alloc"), "init"); }

std::string utf8(Id string) {
  if (!string) return "";
  const char* s = Msg<const char*()>::send(string, "UTF8String");
  return s ? s : "";
}

// An NSError's localizedDescription ("" for nil).
std::string describe(Id error) { return error ? utf8(Msg<Id()>::send(error, "localizedDescription")) : ""; }

void release(Id object) {
  if (!object) return;
  Pool pool;
  Msg<void()>::send(object, "release");
}

Id create_default_device() {
  Pool pool;
  Id device = rt.create_device();  // NS_RETURNS_RETAINED: owned
  if (device || !rt.copy_all_devices) return device;
  // Without a window server session (a headless machine, some command-line contexts) there may be
  // no default device while the list still has the GPU.
  Id all = rt.copy_all_devices();
  if (!all) return nullptr;
  if (Msg<unsigned long()>::send(all, "count") > 0)
    device = Msg<Id()>::send(Msg<Id(unsigned long)>::send(all, "objectAtIndex:", 0), "retain");
  release(all);
  return device;
}

std::string device_name(Id device) {
  Pool pool;
  return utf8(Msg<Id()>::send(device, "name"));
}

bool supports_metal3(Id device) {
  Pool pool;
  constexpr long kMTLGPUFamilyMetal3 = 5001;  // MTLGPUFamilyMetal3
  return Msg<ObjcBool(long)>::send(device, "supportsFamily:", kMTLGPUFamilyMetal3);
}

Id new_buffer(Id device, size_t bytes) {
  Pool pool;
  constexpr unsigned long kMTLResourceStorageModeShared = 0;  // MTLResourceStorageModeShared (0 << 4)
  return Msg<Id(unsigned long, unsigned long)>::send(device, "newBufferWithLength:options:", bytes,
                                                     kMTLResourceStorageModeShared);
}

void* contents(Id buffer) {
  Pool pool;
  return Msg<void*()>::send(buffer, "contents");
}

uint64_t gpu_address(Id buffer) {
  Pool pool;
  return Msg<uint64_t()>::send(buffer, "gpuAddress");  // macOS 13+
}

Id new_library(Id device, const std::string& source, std::string* log) {
  Pool pool;
  Id options = new_object("MTLCompileOptions");
  constexpr unsigned long kMTLLanguageVersion3_0 = (3ul << 16) + 0;  // MTLLanguageVersion3_0
  Msg<void(unsigned long)>::send(options, "setLanguageVersion:", kMTLLanguageVersion3_0);
  // IEEE float semantics: mathMode safe where the OS has it (macOS 15), else fastMathEnabled NO.
  if (Msg<ObjcBool(Sel)>::send(options, "respondsToSelector:", rt.sel_register_name("setMathMode:"))) {
    constexpr long kMTLMathModeSafe = 0;  // MTLMathModeSafe
    Msg<void(long)>::send(options, "setMathMode:", kMTLMathModeSafe);
  } else {
    Msg<void(ObjcBool)>::send(options, "setFastMathEnabled:", false);
  }
  Id text = Msg<Id(const char*)>::send(rt.get_class("NSString"), "stringWithUTF8String:", source.c_str());
  Id error = nullptr;
  Id library = Msg<Id(Id, Id, Id*)>::send(device, "newLibraryWithSource:options:error:", text, options, &error);
  release(options);
  if (!library && log) *log = describe(error);
  return library;
}

Id new_function(Id library, const std::string& name) {
  Pool pool;
  Id text = Msg<Id(const char*)>::send(rt.get_class("NSString"), "stringWithUTF8String:", name.c_str());
  return Msg<Id(Id)>::send(library, "newFunctionWithName:", text);
}

Id new_pipeline(Id device, Id function, PipelineInfo* info, std::string* log) {
  Pool pool;
  Id descriptor = new_object("MTLComputePipelineDescriptor");
  Msg<void(Id)>::send(descriptor, "setComputeFunction:", function);
  Msg<void(ObjcBool)>::send(descriptor, "setSupportIndirectCommandBuffers:", true);
  constexpr unsigned long kMTLPipelineOptionNone = 0;  // MTLPipelineOptionNone
  Id error = nullptr;
  Id pipeline = Msg<Id(Id, unsigned long, Id*, Id*)>::send(
      device, "newComputePipelineStateWithDescriptor:options:reflection:error:", descriptor, kMTLPipelineOptionNone, nullptr,
      &error);
  release(descriptor);
  if (!pipeline) {
    if (log) *log = describe(error);
    return nullptr;
  }
  info->execution_width = Msg<unsigned long()>::send(pipeline, "threadExecutionWidth");
  info->max_threads = Msg<unsigned long()>::send(pipeline, "maxTotalThreadsPerThreadgroup");
  return pipeline;
}

Id new_command_queue(Id device) {
  Pool pool;
  return Msg<Id()>::send(device, "newCommandQueue");
}

Id new_indirect_command_buffer(Id device, size_t commands) {
  Pool pool;
  Id descriptor = new_object("MTLIndirectCommandBufferDescriptor");
  constexpr unsigned long kMTLIndirectCommandTypeConcurrentDispatch = 1ul << 5;  // MTLIndirectCommandTypeConcurrentDispatch
  Msg<void(unsigned long)>::send(descriptor, "setCommandTypes:", kMTLIndirectCommandTypeConcurrentDispatch);
  Msg<void(ObjcBool)>::send(descriptor, "setInheritBuffers:", false);
  Msg<void(ObjcBool)>::send(descriptor, "setInheritPipelineState:", false);
  Msg<void(unsigned long)>::send(descriptor, "setMaxKernelBufferBindCount:", 1);
  constexpr unsigned long kMTLResourceStorageModeShared = 0;  // MTLResourceStorageModeShared
  Id icb = Msg<Id(Id, unsigned long, unsigned long)>::send(
      device, "newIndirectCommandBufferWithDescriptor:maxCommandCount:options:", descriptor, commands,
      kMTLResourceStorageModeShared);
  release(descriptor);
  return icb;
}

void encode_dispatch(Id icb, size_t index, Id pipeline, Id args, size_t offset, MtlSize grid, MtlSize block, bool barrier) {
  Pool pool;
  Id command = Msg<Id(unsigned long)>::send(icb, "indirectComputeCommandAtIndex:", index);
  Msg<void()>::send(command, "reset");
  // Barriers are set or cleared before the command is encoded (MTLIndirectComputeCommand).
  Msg<void()>::send(command, barrier ? "setBarrier" : "clearBarrier");
  Msg<void(Id)>::send(command, "setComputePipelineState:", pipeline);
  Msg<void(Id, unsigned long, unsigned long)>::send(command, "setKernelBuffer:offset:atIndex:", args, offset, 0);
  Msg<void(MtlSize, MtlSize)>::send(command, "concurrentDispatchThreadgroups:threadsPerThreadgroup:", grid, block);
}

Id new_shared_event(Id device) {
  Pool pool;
  return Msg<Id()>::send(device, "newSharedEvent");
}

void set_signaled_value(Id event, uint64_t value) {
  Pool pool;
  Msg<void(uint64_t)>::send(event, "setSignaledValue:", value);
}

Id new_command_buffer(Id queue) {
  Pool pool;
  Id cb = Msg<Id()>::send(queue, "commandBuffer");
  return cb ? Msg<Id()>::send(cb, "retain") : nullptr;
}

void encode_wait(Id cb, Id event, uint64_t value) {
  Pool pool;
  Msg<void(Id, uint64_t)>::send(cb, "encodeWaitForEvent:value:", event, value);
}

void encode_signal(Id cb, Id event, uint64_t value) {
  Pool pool;
  Msg<void(Id, uint64_t)>::send(cb, "encodeSignalEvent:value:", event, value);
}

Id new_compute_encoder(Id cb) {
  Pool pool;
  constexpr unsigned long kMTLDispatchTypeConcurrent = 1;  // MTLDispatchTypeConcurrent
  Id encoder = Msg<Id(unsigned long)>::send(cb, "computeCommandEncoderWithDispatchType:", kMTLDispatchTypeConcurrent);
  return encoder ? Msg<Id()>::send(encoder, "retain") : nullptr;
}

void use_resource(Id encoder, Id resource, bool write) {
  Pool pool;
  constexpr unsigned long kMTLResourceUsageRead = 1ul << 0, kMTLResourceUsageWrite = 1ul << 1;  // MTLResourceUsage
  Msg<void(Id, unsigned long)>::send(encoder, "useResource:usage:", resource,
                                     write ? kMTLResourceUsageRead | kMTLResourceUsageWrite : kMTLResourceUsageRead);
}

void execute_commands(Id encoder, Id icb, size_t first, size_t count) {
  Pool pool;
  Msg<void(Id, NsRange)>::send(encoder, "executeCommandsInBuffer:withRange:", icb, NsRange{first, count});
}

void memory_barrier(Id encoder) {
  Pool pool;
  constexpr unsigned long kMTLBarrierScopeBuffers = 1ul << 0;  // MTLBarrierScopeBuffers
  Msg<void(unsigned long)>::send(encoder, "memoryBarrierWithScope:", kMTLBarrierScopeBuffers);
}

void end_encoding(Id encoder) {
  Pool pool;
  Msg<void()>::send(encoder, "endEncoding");
}

void commit(Id cb) {
  Pool pool;
  Msg<void()>::send(cb, "commit");
}

void wait_until_completed(Id cb) {
  Pool pool;
  Msg<void()>::send(cb, "waitUntilCompleted");
}

unsigned long status(Id cb) {
  Pool pool;
  return Msg<unsigned long()>::send(cb, "status");
}

std::string error_text(Id cb) {
  Pool pool;
  return describe(Msg<Id()>::send(cb, "error"));
}

absl::StatusOr<MetalApi> load() {
#ifndef __APPLE__
  // (Said once per process on stderr among the GPU backends that are not usable: keep it short.)
  return absl::UnavailableError("metal: no Metal framework (kiln's Metal backend runs on macOS with a Metal 3 GPU): this is not macOS");
#endif
  const char* const kObjc = "/usr/lib/libobjc.A.dylib";
  const char* const kFoundation = "/System/Library/Frameworks/Foundation.framework/Foundation";
  const char* const kMetal = "/System/Library/Frameworks/Metal.framework/Metal";
  void* handles[3] = {};
  const char* paths[3] = {kObjc, kFoundation, kMetal};
  for (int i = 0; i < 3; ++i) {
    handles[i] = ::dlopen(paths[i], RTLD_NOW | RTLD_LOCAL);  // never closed: the table lives for the process
    if (!handles[i]) {
      const char* why = ::dlerror();
      return absl::UnavailableError(absl::StrCat(
          "metal: no Metal framework (kiln's Metal backend runs on macOS with a Metal 3 GPU): ", why ? why : paths[i]));
    }
  }
  std::string missing;
  auto sym = [&](auto* fn, void* lib, const char* name) {
    void* p = ::dlsym(lib, name);
    if (!p) absl::StrAppend(&missing, missing.empty() ? "" : ", ", name);
    *fn = reinterpret_cast<std::remove_pointer_t<decltype(fn)>>(p);
  };
  rt.msg_send = ::dlsym(handles[0], "objc_msgSend");
  if (!rt.msg_send) missing = "objc_msgSend";
  sym(&rt.sel_register_name, handles[0], "sel_registerName");
  sym(&rt.get_class, handles[0], "objc_getClass");
  sym(&rt.pool_push, handles[0], "objc_autoreleasePoolPush");
  sym(&rt.pool_pop, handles[0], "objc_autoreleasePoolPop");
  sym(&rt.create_device, handles[2], "MTLCreateSystemDefaultDevice");
  rt.copy_all_devices = reinterpret_cast<Id (*)()>(::dlsym(handles[2], "MTLCopyAllDevices"));
  // Apple's documentation of MTLCreateSystemDefaultDevice: a process that does not link Core
  // Graphics (a command-line tool) gets no default device unless Core Graphics is loaded.
  ::dlopen("/System/Library/Frameworks/CoreGraphics.framework/CoreGraphics", RTLD_NOW | RTLD_GLOBAL);
  if (!missing.empty()) return absl::UnavailableError(absl::StrCat("metal: the Objective-C runtime or Metal lacks ", missing));
  for (const char* cls : {"NSString", "MTLCompileOptions", "MTLComputePipelineDescriptor", "MTLIndirectCommandBufferDescriptor"})
    if (!rt.get_class(cls))
      return absl::UnavailableError(absl::StrCat("metal: this macOS has no ", cls, " class (kiln needs macOS 13 or later)"));
  MetalApi a;
  a.library = kMetal;
  a.release = &release;
  a.create_default_device = &create_default_device;
  a.device_name = &device_name;
  a.supports_metal3 = &supports_metal3;
  a.new_buffer = &new_buffer;
  a.contents = &contents;
  a.gpu_address = &gpu_address;
  a.new_library = &new_library;
  a.new_function = &new_function;
  a.new_pipeline = &new_pipeline;
  a.new_command_queue = &new_command_queue;
  a.new_indirect_command_buffer = &new_indirect_command_buffer;
  a.encode_dispatch = &encode_dispatch;
  a.new_shared_event = &new_shared_event;
  a.set_signaled_value = &set_signaled_value;
  a.new_command_buffer = &new_command_buffer;
  a.encode_wait = &encode_wait;
  a.encode_signal = &encode_signal;
  a.new_compute_encoder = &new_compute_encoder;
  a.use_resource = &use_resource;
  a.execute_commands = &execute_commands;
  a.memory_barrier = &memory_barrier;
  a.end_encoding = &end_encoding;
  a.commit = &commit;
  a.wait_until_completed = &wait_until_completed;
  a.status = &status;
  a.error_text = &error_text;
  return a;
}

}  // namespace

absl::StatusOr<const MetalApi*> load_api() {
  static std::once_flag once;
  static absl::StatusOr<MetalApi>* api = nullptr;
  std::call_once(once, [] { api = new absl::StatusOr<MetalApi>(load()); });  // never unloaded
  if (!api->ok()) return api->status();
  return &**api;
}

}  // namespace kiln::runtime::metal

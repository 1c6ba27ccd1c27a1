// A stand-in libamdhip64.so for testing kiln's HIP runtime (backends/hip) without an AMD GPU:
// the entry points backends/hip/hip_api.cc looks up (and two for tests, fake_hip.h), reporting
// one gfx90a GPU whose device memory is host memory. It loads real code objects the way the ROCm
// runtime must (their length, processor and kernel metadata, code_object.h), copies each launch's
// arguments as the metadata sizes them, keeps graphs as node lists with their dependencies and
// arguments, and checks what a GPU would fault on (pointers outside live allocations, blocks over
// a kernel's limit); it logs every call, which the tests read back (fake_hip.h documents the log,
// the GPU it reports and the failures it can be told to make). It runs no kernel code.
#include <hip/hip_runtime_api.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <vector>

#include "hip/fake_runtime/code_object.h"
#include "hip/fake_runtime/fake_hip.h"

namespace kiln::fake_hip {

// A kernel launch as the fake keeps it: the function, its geometry and its explicit arguments'
// values (each read from kernelParams[i] as metadata argument i's size says).
struct Launch {
  ihipModuleSymbol_t* fn = nullptr;
  dim3 grid, block;
  unsigned shared = 0;
  std::vector<uint64_t> args;
};

}  // namespace kiln::fake_hip

// The handle types the HIP headers leave incomplete.
struct ihipStream_t {
  int id;
};
struct ihipEvent_t {
  int id;
};
struct ihipModuleSymbol_t {
  int id;
  ihipModule_t* module;
  const kiln::fake_hip::KernelInfo* kernel;
};
struct ihipModule_t {
  int id;
  kiln::fake_hip::CodeObject code;
  std::map<std::string, std::unique_ptr<ihipModuleSymbol_t>> functions;  // by name: asked twice, one handle
};
struct hipGraphNode {
  int id;
  std::vector<hipGraphNode*> deps;
  kiln::fake_hip::Launch launch;
};
struct ihipGraph {
  int id;
  std::vector<std::unique_ptr<hipGraphNode>> nodes;  // in the order they were added
};
struct hipGraphExec {
  int id;
  std::vector<std::pair<hipGraphNode*, kiln::fake_hip::Launch>> nodes;  // copies, updated by SetParams
};

namespace kiln::fake_hip {
namespace {

constexpr size_t kMemory = size_t(64) << 30;  // the GPU's 64 GiB
constexpr const char* kProcessor = "gfx90a";

struct State {
  std::mutex mu;
  std::string log, snapshot;
  int streams = 0, events = 0, modules = 0, functions = 0, graphs = 0, nodes = 0, execs = 0;
  std::map<uintptr_t, size_t> allocations;  // base -> bytes
  size_t allocated = 0;
  std::set<const void*> live;  // every handle not yet destroyed
};

State& state() {
  static State* s = new State;  // never destroyed: kiln may call in from static destructors
  return *s;
}

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof(buf), "0x%llx", static_cast<unsigned long long>(v));
  return buf;
}
std::string hex(const void* p) { return hex(uint64_t(reinterpret_cast<uintptr_t>(p))); }
std::string dims(const dim3& d) {
  return std::to_string(d.x) + "," + std::to_string(d.y) + "," + std::to_string(d.z);
}

const char* error_name(hipError_t e) {
  switch (e) {
    case hipSuccess: return "hipSuccess";
    case hipErrorInvalidValue: return "hipErrorInvalidValue";
    case hipErrorOutOfMemory: return "hipErrorOutOfMemory";
    case hipErrorInvalidConfiguration: return "hipErrorInvalidConfiguration";
    case hipErrorNoDevice: return "hipErrorNoDevice";
    case hipErrorInvalidDevice: return "hipErrorInvalidDevice";
    case hipErrorInvalidImage: return "hipErrorInvalidImage";
    case hipErrorNoBinaryForGpu: return "hipErrorNoBinaryForGpu";
    case hipErrorInvalidHandle: return "hipErrorInvalidHandle";
    case hipErrorNotFound: return "hipErrorNotFound";
    case hipErrorIllegalAddress: return "hipErrorIllegalAddress";
    case hipErrorLaunchFailure: return "hipErrorLaunchFailure";
    case hipErrorNotSupported: return "hipErrorNotSupported";
    default: return "hipErrorUnknown";
  }
}

// Whether $KILN_FAKE_HIP_FAIL names `entry`.
bool injected(const char* entry) {
  const char* env = std::getenv("KILN_FAKE_HIP_FAIL");
  return env && (std::string(",") + env + ",").find(std::string(",") + entry + ",") != std::string::npos;
}

int device_count() {
  const char* env = std::getenv("KILN_FAKE_HIP_DEVICES");
  return env && *env ? std::atoi(env) : 1;
}

// Logs `line` (with the error when `e` is one) and returns `e`. Callers hold the lock.
hipError_t finish(std::string line, hipError_t e) {
  if (e != hipSuccess) line += std::string(" error=") + error_name(e);
  state().log += line + "\n";
  return e;
}

// Whether [p, p + bytes) lies inside one live allocation (a pointer one past the end counts
// for bytes == 0).
bool inside(const void* ptr, size_t bytes) {
  const auto p = reinterpret_cast<uintptr_t>(ptr);
  auto it = state().allocations.upper_bound(p);
  if (!ptr || it == state().allocations.begin()) return false;
  --it;
  return p + bytes <= it->first + it->second;
}

bool live(const void* handle) { return handle && state().live.count(handle) > 0; }

// A launch of `func` as hipModuleLaunchKernel and kernel nodes describe it, checked as the
// runtime checks it before anything runs.
hipError_t make_launch(void* func, const dim3& grid, const dim3& block, unsigned shared, void** params, void** extra,
                       Launch* out) {
  auto* fn = static_cast<ihipModuleSymbol_t*>(func);
  if (!live(fn)) return hipErrorInvalidHandle;
  if (extra) return hipErrorNotSupported;  // the fake reads arguments from kernelParams only
  const KernelInfo& k = *fn->kernel;
  if (!params && !k.args.empty()) return hipErrorInvalidValue;
  const uint64_t threads = uint64_t(block.x) * block.y * block.z;
  if (grid.x == 0 || grid.y == 0 || grid.z == 0 || threads == 0 || threads > std::min<uint64_t>(1024, k.max_flat_workgroup_size))
    return hipErrorInvalidConfiguration;
  if (shared + k.group_segment_fixed_size > 65536) return hipErrorInvalidConfiguration;
  out->fn = fn;
  out->grid = grid;
  out->block = block;
  out->shared = shared;
  out->args.clear();
  for (size_t i = 0; i < k.args.size(); ++i) {
    if (k.args[i].size > 8 || !params[i]) return hipErrorNotSupported;  // kiln passes pointers and 64-bit values
    uint64_t v = 0;
    std::memcpy(&v, params[i], size_t(k.args[i].size));
    out->args.push_back(v);
  }
  return hipSuccess;
}

std::string describe(const Launch& l) {
  std::string s = " fn=" + l.fn->kernel->name + " func=F" + std::to_string(l.fn->id) + " grid=" + dims(l.grid) +
                  " block=" + dims(l.block) + " shared=" + std::to_string(l.shared) + " args=";
  for (size_t i = 0; i < l.args.size(); ++i) s += (i ? "," : "") + hex(l.args[i]);
  return s;
}

// What a GPU would fault on: a buffer argument that is not inside a live allocation. Returns the
// index of the first such argument, or -1.
int bad_pointer(const Launch& l) {
  const std::vector<KernelArg>& args = l.fn->kernel->args;
  for (size_t i = 0; i < args.size(); ++i)
    if (args[i].value_kind == "global_buffer" && !inside(reinterpret_cast<const void*>(uintptr_t(l.args[i])), 0))
      return int(i);
  return -1;
}

}  // namespace
}  // namespace kiln::fake_hip

using namespace kiln::fake_hip;  // NOLINT: the entry points below are the C API

extern "C" {

hipError_t hipRuntimeGetVersion(int* version) {
  std::lock_guard<std::mutex> lock(state().mu);
  *version = 60241134;  // HIP 6.2.41134
  return finish("hipRuntimeGetVersion version=60241134", hipSuccess);
}

hipError_t hipInit(unsigned flags) {
  std::lock_guard<std::mutex> lock(state().mu);
  return finish("hipInit flags=" + std::to_string(flags), device_count() > 0 ? hipSuccess : hipErrorNoDevice);
}

hipError_t hipGetDeviceCount(int* count) {
  std::lock_guard<std::mutex> lock(state().mu);
  *count = device_count();
  return finish("hipGetDeviceCount count=" + std::to_string(*count), *count > 0 ? hipSuccess : hipErrorNoDevice);
}

hipError_t hipSetDevice(int device) {
  std::lock_guard<std::mutex> lock(state().mu);
  return finish("hipSetDevice device=" + std::to_string(device),
                device >= 0 && device < device_count() ? hipSuccess : hipErrorInvalidDevice);
}

// ROCm 6 exports ROCm 5's hipDeviceProp_t layout (the one in the installed headers) under this name.
hipError_t hipGetDevicePropertiesR0000(hipDeviceProp_t* props, int device) {
  std::lock_guard<std::mutex> lock(state().mu);
  const std::string line = "hipGetDevicePropertiesR0000 device=" + std::to_string(device);
  if (device < 0 || device >= device_count()) return finish(line, hipErrorInvalidDevice);
  std::memset(props, 0, sizeof(*props));
  std::snprintf(props->name, sizeof(props->name), "AMD Instinct MI210 (kiln stand-in)");
  std::snprintf(props->gcnArchName, sizeof(props->gcnArchName), "%s:sramecc+:xnack-", kProcessor);
  props->gcnArch = 910;
  props->major = 9;
  props->minor = 0;
  props->totalGlobalMem = kMemory;
  props->multiProcessorCount = 104;
  props->warpSize = 64;
  props->maxThreadsPerBlock = 1024;
  props->maxThreadsDim[0] = props->maxThreadsDim[1] = props->maxThreadsDim[2] = 1024;
  props->maxGridSize[0] = props->maxGridSize[1] = props->maxGridSize[2] = 0x7fffffff;
  props->sharedMemPerBlock = 65536;
  props->maxSharedMemoryPerMultiProcessor = 65536;
  props->l2CacheSize = 8 << 20;
  props->clockRate = 1700000;
  return finish(line, hipSuccess);
}

const char* hipGetErrorName(hipError_t e) { return error_name(e); }

hipError_t hipStreamCreateWithFlags(hipStream_t* stream, unsigned flags) {
  std::lock_guard<std::mutex> lock(state().mu);
  *stream = new ihipStream_t{++state().streams};
  state().live.insert(*stream);
  return finish("hipStreamCreateWithFlags stream=S" + std::to_string((*stream)->id) + " flags=" + std::to_string(flags),
                hipSuccess);
}

hipError_t hipStreamSynchronize(hipStream_t stream) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (!live(stream)) return finish("hipStreamSynchronize", hipErrorInvalidHandle);
  return finish("hipStreamSynchronize stream=S" + std::to_string(stream->id), hipSuccess);
}

hipError_t hipMalloc(void** ptr, size_t bytes) {
  std::lock_guard<std::mutex> lock(state().mu);
  std::string line = "hipMalloc bytes=" + std::to_string(bytes);
  *ptr = nullptr;
  if (injected("hipMalloc") || bytes > kMemory - state().allocated) return finish(line, hipErrorOutOfMemory);
  if (bytes == 0) return finish(line + " ptr=0x0", hipSuccess);
  void* p = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  if (!p) return finish(line, hipErrorOutOfMemory);
  std::memset(p, 0, bytes);
  state().allocations[reinterpret_cast<uintptr_t>(p)] = bytes;
  state().allocated += bytes;
  *ptr = p;
  return finish(line + " ptr=" + hex(p), hipSuccess);
}

hipError_t hipFree(void* ptr) {
  std::lock_guard<std::mutex> lock(state().mu);
  const std::string line = "hipFree ptr=" + hex(ptr);
  if (!ptr) return finish(line, hipSuccess);
  auto it = state().allocations.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == state().allocations.end()) return finish(line, hipErrorInvalidValue);
  state().allocated -= it->second;
  state().allocations.erase(it);
  std::free(ptr);
  return finish(line, hipSuccess);
}

hipError_t hipMemcpy(void* dst, const void* src, size_t bytes, hipMemcpyKind kind) {
  std::lock_guard<std::mutex> lock(state().mu);
  static const char* const kinds[] = {"HostToHost", "HostToDevice", "DeviceToHost", "DeviceToDevice", "Default"};
  std::string line = std::string("hipMemcpy kind=") + (unsigned(kind) < 5 ? kinds[kind] : "?") + " dst=" + hex(dst) +
                     " src=" + hex(src) + " bytes=" + std::to_string(bytes);
  const bool device_dst = kind == hipMemcpyHostToDevice || kind == hipMemcpyDeviceToDevice;
  const bool device_src = kind == hipMemcpyDeviceToHost || kind == hipMemcpyDeviceToDevice;
  if (unsigned(kind) > 4 || (device_dst && !inside(dst, bytes)) || (device_src && !inside(src, bytes)))
    return finish(line, hipErrorInvalidValue);
  if (injected("hipMemcpy")) return finish(line, hipErrorUnknown);
  if (bytes) std::memmove(dst, src, bytes);
  return finish(line, hipSuccess);
}

hipError_t hipMemset(void* dst, int value, size_t bytes) {
  std::lock_guard<std::mutex> lock(state().mu);
  const std::string line = "hipMemset ptr=" + hex(dst) + " value=" + std::to_string(value) + " bytes=" + std::to_string(bytes);
  if (!inside(dst, bytes)) return finish(line, hipErrorInvalidValue);
  if (bytes) std::memset(dst, value, bytes);
  return finish(line, hipSuccess);
}

hipError_t hipEventCreateWithFlags(hipEvent_t* event, unsigned flags) {
  std::lock_guard<std::mutex> lock(state().mu);
  *event = new ihipEvent_t{++state().events};
  state().live.insert(*event);
  return finish("hipEventCreateWithFlags event=V" + std::to_string((*event)->id) + " flags=" + std::to_string(flags), hipSuccess);
}

hipError_t hipEventRecord(hipEvent_t event, hipStream_t stream) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (!live(event) || !live(stream)) return finish("hipEventRecord", hipErrorInvalidHandle);
  return finish("hipEventRecord event=V" + std::to_string(event->id) + " stream=S" + std::to_string(stream->id), hipSuccess);
}

hipError_t hipEventSynchronize(hipEvent_t event) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (!live(event)) return finish("hipEventSynchronize", hipErrorInvalidHandle);
  return finish("hipEventSynchronize event=V" + std::to_string(event->id), hipSuccess);
}

hipError_t hipEventDestroy(hipEvent_t event) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (!live(event)) return finish("hipEventDestroy", hipErrorInvalidHandle);
  const std::string line = "hipEventDestroy event=V" + std::to_string(event->id);
  state().live.erase(event);
  delete event;
  return finish(line, hipSuccess);
}

hipError_t hipModuleLoadData(hipModule_t* module, const void* image) {
  std::lock_guard<std::mutex> lock(state().mu);
  std::string line = "hipModuleLoadData";
  auto m = std::make_unique<ihipModule_t>();
  std::string why;
  if (!read_code_object(image, &m->code, &why)) {
    for (char& c : why) c = c == ' ' ? '_' : c;
    return finish(line + " why=" + why, hipErrorInvalidImage);
  }
  line += " bytes=" + std::to_string(m->code.image.size()) + " processor=" + m->code.processor + " kernels=";
  for (size_t i = 0; i < m->code.kernels.size(); ++i) line += (i ? "," : "") + m->code.kernels[i].name;
  if (m->code.processor != kProcessor) return finish(line, hipErrorNoBinaryForGpu);
  if (injected("hipModuleLoadData")) return finish(line, hipErrorInvalidImage);
  m->id = ++state().modules;
  *module = m.release();
  state().live.insert(*module);
  return finish("hipModuleLoadData module=M" + std::to_string((*module)->id) + line.substr(17), hipSuccess);
}

hipError_t hipModuleUnload(hipModule_t module) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (!live(module)) return finish("hipModuleUnload", hipErrorInvalidHandle);
  const std::string line = "hipModuleUnload module=M" + std::to_string(module->id);
  for (const auto& [name, fn] : module->functions) state().live.erase(fn.get());
  state().live.erase(module);
  delete module;
  return finish(line, hipSuccess);
}

hipError_t hipModuleGetFunction(hipFunction_t* function, hipModule_t module, const char* name) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (!live(module)) return finish(std::string("hipModuleGetFunction name=") + name, hipErrorInvalidHandle);
  std::string line = "hipModuleGetFunction module=M" + std::to_string(module->id) + " name=" + name;
  if (injected("hipModuleGetFunction")) return finish(line, hipErrorNotFound);
  std::unique_ptr<ihipModuleSymbol_t>& fn = module->functions[name];
  if (!fn) {
    const KernelInfo* kernel = nullptr;
    for (const KernelInfo& k : module->code.kernels)
      if (k.name == name) kernel = &k;
    if (!kernel) {
      module->functions.erase(name);
      return finish(line, hipErrorNotFound);
    }
    fn.reset(new ihipModuleSymbol_t{++state().functions, module, kernel});
    state().live.insert(fn.get());
  }
  *function = fn.get();
  return finish(line + " func=F" + std::to_string(fn->id), hipSuccess);
}

hipError_t hipModuleLaunchKernel(hipFunction_t f, unsigned gx, unsigned gy, unsigned gz, unsigned bx, unsigned by, unsigned bz,
                                 unsigned shared, hipStream_t stream, void** params, void** extra) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (!live(stream)) return finish("hipModuleLaunchKernel", hipErrorInvalidHandle);
  std::string line = "hipModuleLaunchKernel stream=S" + std::to_string(stream->id);
  Launch l;
  if (hipError_t e = make_launch(f, dim3(gx, gy, gz), dim3(bx, by, bz), shared, params, extra, &l); e != hipSuccess)
    return finish(line, e);
  line += describe(l);
  if (injected("hipModuleLaunchKernel")) return finish(line, hipErrorLaunchFailure);
  if (int bad = bad_pointer(l); bad >= 0) return finish(line + " bad_arg=" + std::to_string(bad), hipErrorIllegalAddress);
  return finish(line, hipSuccess);
}

hipError_t hipGraphCreate(hipGraph_t* graph, unsigned flags) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (injected("hipGraphCreate")) return finish("hipGraphCreate", hipErrorNotSupported);
  *graph = new ihipGraph{++state().graphs, {}};
  state().live.insert(*graph);
  return finish("hipGraphCreate graph=G" + std::to_string((*graph)->id) + " flags=" + std::to_string(flags), hipSuccess);
}

hipError_t hipGraphDestroy(hipGraph_t graph) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (!live(graph)) return finish("hipGraphDestroy", hipErrorInvalidHandle);
  const std::string line = "hipGraphDestroy graph=G" + std::to_string(graph->id);
  for (const auto& n : graph->nodes) state().live.erase(n.get());
  state().live.erase(graph);
  delete graph;
  return finish(line, hipSuccess);
}

hipError_t hipGraphAddKernelNode(hipGraphNode_t* node, hipGraph_t graph, const hipGraphNode_t* deps, size_t num_deps,
                                 const hipKernelNodeParams* params) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (!live(graph) || !params) return finish("hipGraphAddKernelNode", hipErrorInvalidValue);
  auto n = std::make_unique<hipGraphNode>();
  std::string line = "hipGraphAddKernelNode graph=G" + std::to_string(graph->id) + " node=N" + std::to_string(state().nodes + 1) +
                     " deps=";
  if (num_deps && !deps) return finish(line, hipErrorInvalidValue);
  for (size_t i = 0; i < num_deps; ++i) {
    bool mine = false;  // a dependency must be a node of this graph
    for (const auto& m : graph->nodes) mine |= m.get() == deps[i];
    if (!mine) return finish(line, hipErrorInvalidValue);
    n->deps.push_back(deps[i]);
    line += (i ? ",N" : "N") + std::to_string(deps[i]->id);
  }
  if (hipError_t e = make_launch(params->func, params->gridDim, params->blockDim, params->sharedMemBytes, params->kernelParams,
                                 params->extra, &n->launch);
      e != hipSuccess)
    return finish(line, e);
  line += describe(n->launch);
  if (injected("hipGraphAddKernelNode")) return finish(line, hipErrorNotSupported);
  n->id = ++state().nodes;
  *node = n.get();
  state().live.insert(n.get());
  graph->nodes.push_back(std::move(n));
  return finish(line, hipSuccess);
}

hipError_t hipGraphInstantiate(hipGraphExec_t* exec, hipGraph_t graph, hipGraphNode_t* error_node, char* log, size_t log_bytes) {
  std::lock_guard<std::mutex> lock(state().mu);
  (void)error_node, (void)log, (void)log_bytes;
  if (!live(graph)) return finish("hipGraphInstantiate", hipErrorInvalidValue);
  const std::string line = "hipGraphInstantiate graph=G" + std::to_string(graph->id);
  if (injected("hipGraphInstantiate")) return finish(line, hipErrorNotSupported);
  auto* e = new hipGraphExec{++state().execs, {}};
  for (const auto& n : graph->nodes) e->nodes.emplace_back(n.get(), n->launch);
  *exec = e;
  state().live.insert(e);
  return finish(line + " exec=E" + std::to_string(e->id) + " nodes=" + std::to_string(e->nodes.size()), hipSuccess);
}

hipError_t hipGraphExecDestroy(hipGraphExec_t exec) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (!live(exec)) return finish("hipGraphExecDestroy", hipErrorInvalidHandle);
  const std::string line = "hipGraphExecDestroy exec=E" + std::to_string(exec->id);
  state().live.erase(exec);
  delete exec;
  return finish(line, hipSuccess);
}

hipError_t hipGraphExecKernelNodeSetParams(hipGraphExec_t exec, hipGraphNode_t node, const hipKernelNodeParams* params) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (!live(exec) || !live(node) || !params) return finish("hipGraphExecKernelNodeSetParams", hipErrorInvalidValue);
  std::string line = "hipGraphExecKernelNodeSetParams exec=E" + std::to_string(exec->id) + " node=N" + std::to_string(node->id);
  Launch* slot = nullptr;  // the node must be one the graph was instantiated with
  for (auto& [n, l] : exec->nodes)
    if (n == node) slot = &l;
  if (!slot) return finish(line, hipErrorInvalidValue);
  Launch l;
  if (hipError_t e = make_launch(params->func, params->gridDim, params->blockDim, params->sharedMemBytes, params->kernelParams,
                                 params->extra, &l);
      e != hipSuccess)
    return finish(line, e);
  line += describe(l);
  if (injected("hipGraphExecKernelNodeSetParams")) return finish(line, hipErrorUnknown);
  *slot = std::move(l);
  return finish(line, hipSuccess);
}

hipError_t hipGraphLaunch(hipGraphExec_t exec, hipStream_t stream) {
  std::lock_guard<std::mutex> lock(state().mu);
  if (!live(exec) || !live(stream)) return finish("hipGraphLaunch", hipErrorInvalidHandle);
  const std::string line = "hipGraphLaunch exec=E" + std::to_string(exec->id) + " stream=S" + std::to_string(stream->id);
  if (injected("hipGraphLaunch")) return finish(line, hipErrorLaunchFailure);
  for (const auto& [n, l] : exec->nodes)
    if (int bad = bad_pointer(l); bad >= 0)
      return finish(line + " node=N" + std::to_string(n->id) + " bad_arg=" + std::to_string(bad), hipErrorIllegalAddress);
  std::string launches;
  for (const auto& [n, l] : exec->nodes)
    launches += "\nlaunch exec=E" + std::to_string(exec->id) + " node=N" + std::to_string(n->id) + describe(l);
  return finish(line + launches, hipSuccess);
}

const char* kiln_fake_hip_log() {
  std::lock_guard<std::mutex> lock(state().mu);
  state().snapshot = state().log;
  return state().snapshot.c_str();
}

void kiln_fake_hip_clear_log() {
  std::lock_guard<std::mutex> lock(state().mu);
  state().log.clear();
}

}  // extern "C"

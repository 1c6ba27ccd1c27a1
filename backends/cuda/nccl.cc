#include "backends/cuda/nccl.h"

#include <dlfcn.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <map>
#include <mutex>
#include <thread>

#include "absl/strings/str_cat.h"
#include "backends/cuda/context.h"
#include "backends/cuda/driver_api.h"
#include "runtime/stats.h"
#include "support/options.h"

namespace kiln::runtime::cuda {
namespace {

// NCCL's C ABI (nccl.h), declared here: kiln builds without NCCL's headers.
struct UniqueId {
  char internal[128];
};
using Result = int;  // ncclResult_t: 0 = success
enum DataType : int { kI8 = 0, kU8 = 1, kI32 = 2, kU32 = 3, kI64 = 4, kU64 = 5, kF16 = 6, kF32 = 7, kF64 = 8, kBF16 = 9 };
enum RedOp : int { kSum = 0, kProd = 1, kMax = 2, kMin = 3 };

struct NcclApi {
  Result (*GetVersion)(int*);
  Result (*GetUniqueId)(UniqueId*);
  Result (*CommInitRank)(ncclComm**, int, UniqueId, int);
  const char* (*GetErrorString)(Result);
  Result (*CommAbort)(ncclComm*);
  Result (*CommDestroy)(ncclComm*);
  Result (*AllReduce)(const void*, void*, size_t, int, int, ncclComm*, CUstream);
  Result (*AllGather)(const void*, void*, size_t, int, ncclComm*, CUstream);
  Result (*ReduceScatter)(const void*, void*, size_t, int, int, ncclComm*, CUstream);
  Result (*Broadcast)(const void*, void*, size_t, int, int, ncclComm*, CUstream);
  Result (*Send)(const void*, size_t, int, int, ncclComm*, CUstream);
  Result (*Recv)(void*, size_t, int, int, ncclComm*, CUstream);
  Result (*GroupStart)();
  Result (*GroupEnd)();
};

absl::StatusOr<const NcclApi*> nccl() {
  static absl::StatusOr<const NcclApi*> api = []() -> absl::StatusOr<const NcclApi*> {
    std::vector<std::string> names;
    if (const char* e = std::getenv("KILN_NCCL_LIBRARY")) names.push_back(e);
    names.push_back("libnccl.so.2");
    names.push_back("/usr/local/cuda/lib64/libnccl.so.2");
    void* lib = nullptr;
    std::string tried;
    for (const std::string& n : names) {
      lib = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL);
      if (lib) break;
      absl::StrAppend(&tried, tried.empty() ? "" : ", ", n);
    }
    if (!lib)
      return absl::UnavailableError(absl::StrCat("cuda: NCCL not found (tried ", tried,
                                                 "); put libnccl.so.2 on the library path or set KILN_NCCL_LIBRARY"));
    auto* a = new NcclApi();
    std::string missing;
    auto fn = [&](auto* slot, const char* sym) {
      void* p = dlsym(lib, sym);
      if (!p) absl::StrAppend(&missing, missing.empty() ? "" : ", ", sym);
      std::memcpy(slot, &p, sizeof p);
    };
    fn(&a->GetVersion, "ncclGetVersion");
    fn(&a->GetUniqueId, "ncclGetUniqueId");
    fn(&a->CommInitRank, "ncclCommInitRank");
    fn(&a->GetErrorString, "ncclGetErrorString");
    fn(&a->CommAbort, "ncclCommAbort");
    fn(&a->CommDestroy, "ncclCommDestroy");
    fn(&a->AllReduce, "ncclAllReduce");
    fn(&a->AllGather, "ncclAllGather");
    fn(&a->ReduceScatter, "ncclReduceScatter");
    fn(&a->Broadcast, "ncclBroadcast");
    fn(&a->Send, "ncclSend");
    fn(&a->Recv, "ncclRecv");
    fn(&a->GroupStart, "ncclGroupStart");
    fn(&a->GroupEnd, "ncclGroupEnd");
    if (!missing.empty()) return absl::UnavailableError(absl::StrCat("cuda: the NCCL library lacks ", missing, " (NCCL 2.7 or newer)"));
    return a;
  }();
  return api;
}

absl::Status check(const NcclApi& a, Result r, const char* what) {
  if (r == 0) return absl::OkStatus();
  return absl::InternalError(absl::StrCat("cuda: ", what, " failed: ", a.GetErrorString(r), " (NCCL error ", r, ")"));
}

struct Comms {
  std::mutex mu;
  std::map<std::pair<CUcontext, int64_t>, NcclComm> by_group;  // groups that exist
};
Comms& comms() {
  static auto* c = new Comms();
  return *c;
}

// A group left the IR's table: its communicators take no new launches, and go once nothing
// holds them (executables are dropped from the cache with their group).
void release_group(int64_t id) {
  std::vector<NcclComm> gone;  // the table's references, dropped after the lock
  Comms& c = comms();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    for (auto it = c.by_group.begin(); it != c.by_group.end();) {
      if (it->first.second != id) {
        ++it;
        continue;
      }
      gone.push_back(std::move(it->second));
      it = c.by_group.erase(it);
    }
  }
  for (const NcclComm& comm : gone) {
    std::lock_guard<std::mutex> lock(comm->health->mu);
    comm->health->released = absl::FailedPreconditionError(absl::StrCat(
        "process group ", id, " no longer exists (its last ProcessGroup handle was destroyed); its NCCL communicator was released"));
  }
}

// bool reduces as u8 (max = any, min = all); gathers, broadcasts and all_to_all move bytes.
// -1: NCCL has no type that reduces it (16-bit integers).
int nccl_type(DType t) {
  switch (t) {
    case DType::kInt16:
    case DType::kUInt16: return -1;
    case DType::kUInt32: return kU32;
    case DType::kInt8: return kI8;
    case DType::kInt32: return kI32;
    case DType::kInt64: return kI64;
    case DType::kFloat16: return kF16;
    case DType::kBFloat16: return kBF16;
    case DType::kFloat32: return kF32;
    case DType::kFloat64: return kF64;
    default: return kU8;
  }
}

int nccl_op(ir::ScatterMode m) {
  switch (m) {
    case ir::ScatterMode::kMul: return kProd;
    case ir::ScatterMode::kMax: return kMax;
    case ir::ScatterMode::kMin: return kMin;
    default: return kSum;
  }
}

}  // namespace

absl::Status nccl_status() { return nccl().status(); }

std::string nccl_version() {
  auto a = nccl();
  if (!a.ok()) return std::string(a.status().message());
  int v = 0;
  if ((*a)->GetVersion(&v) != 0) return "unknown";
  // 2.x: 10000 * major + 100 * minor + patch (older: 1000 * major + 100 * minor + patch).
  return v >= 10000 ? absl::StrCat(v / 10000, ".", v / 100 % 100, ".", v % 100) : absl::StrCat(v / 1000, ".", v / 100 % 10, ".", v % 100);
}

Comm::~Comm() {
  counters().device_communicators--;
  if (process_exiting()) return;  // the process teardown frees it all
  bool aborted = false;
  {
    std::lock_guard<std::mutex> lock(health->mu);
    aborted = !health->aborted.ok();  // (the watchdog's ncclCommAbort released it already)
  }
  // ncclCommDestroy waits for the graphs that captured its calls to be gone (NCCL frees their
  // work when CUDA runs their destructors, which it may do after cuGraphDestroy returns); it waits
  // for nothing on the other ranks.
  if (raw && !aborted)
    if (auto a = nccl(); a.ok()) (*a)->CommDestroy(raw);
}

absl::StatusOr<NcclComm> nccl_comm(Context* ctx, const ir::CollectiveAttrs& attrs) {
  auto a = nccl();
  if (!a.ok()) return a.status();
  Comms& c = comms();
  {
    std::lock_guard<std::mutex> lock(c.mu);
    auto it = c.by_group.find({ctx->ctx, attrs.comm});
    if (it != c.by_group.end()) {
      if (absl::Status s = comm_status(*it->second); !s.ok()) return s;
      return it->second;
    }
  }
  auto host = ir::communicator_for(attrs);
  if (!host.ok()) return host.status();
  // NCCL reads these when it first starts, so they are set once, before any NCCL call. NVLink
  // multicast can put a shared host's GPUs out of service: off unless the user chose. Peers are
  // connected when the communicator is made, not by its first collective (which is captured into
  // a graph, where connecting is not allowed).
  static std::once_flag env_once;
  std::call_once(env_once, [] {
    ::setenv("NCCL_NVLS_ENABLE", "0", /*overwrite=*/0);
    ::setenv("NCCL_RUNTIME_CONNECT", "0", /*overwrite=*/0);
    ir::add_release_hook(release_group);
  });
  UniqueId mine{}, root{};
  if ((*host)->rank() == 0)
    if (absl::Status s = check(**a, (*a)->GetUniqueId(&mine), "ncclGetUniqueId"); !s.ok()) return s;
  std::vector<UniqueId> all(static_cast<size_t>((*host)->size()));
  if (absl::Status s = (*host)->all_gather_bytes(&mine, sizeof mine, all.data()); !s.ok()) return s;
  root = all[0];
  auto comm = std::make_shared<Comm>();
  counters().device_communicators++;  // (~Comm counts it down, also when the init fails)
  if (absl::Status s = check(**a, (*a)->CommInitRank(&comm->raw, (*host)->size(), root, (*host)->rank()), "ncclCommInitRank");
      !s.ok()) {
    comm->raw = nullptr;
    return s;
  }
  std::lock_guard<std::mutex> lock(c.mu);
  // (a group destroyed meanwhile: its release hook has run, so this one is not kept)
  if (ir::find_communicator(attrs.comm)) c.by_group[{ctx->ctx, attrs.comm}] = comm;
  return comm;
}

namespace {

struct Watch {
  std::vector<std::weak_ptr<Comm>> comms;  // (an executable's launches keep it: see ~CudaExecutable)
  std::shared_ptr<Event> done;
  std::chrono::steady_clock::time_point deadline;
  std::shared_ptr<CollectiveOutcome> outcome;
  std::string what;
  int timeout_s;
};

struct Watchdog {
  std::mutex mu;
  std::condition_variable cv;
  std::vector<Watch> watches;
  bool started = false;
};
Watchdog& watchdog() {
  static auto* w = new Watchdog();  // its thread runs as long as the process
  return *w;
}

// Every 20 ms: drops finished launches, aborts the communicators of any past its deadline.
void watch_loop() {
  Watchdog& w = watchdog();
  std::unique_lock<std::mutex> lock(w.mu);
  for (;;) {
    // (always releasing the lock between scans: runs add their launches meanwhile)
    if (w.watches.empty()) w.cv.wait(lock, [&] { return !w.watches.empty(); });
    else w.cv.wait_for(lock, std::chrono::milliseconds(20));
    const auto now = std::chrono::steady_clock::now();
    for (size_t i = 0; i < w.watches.size();) {
      Watch& x = w.watches[i];
      if (x.done->complete()) {
        // (a launch that ended because its communicator was aborted: CollectiveOutcome::get
        // reports that from the communicator's health)
        w.watches[i] = std::move(w.watches.back());
        w.watches.pop_back();
        continue;
      }
      if (now < x.deadline) {
        ++i;
        continue;
      }
      const absl::Status why = absl::DeadlineExceededError(absl::StrCat(
          x.what, ": not every rank of its group joined within ", x.timeout_s,
          " s (KILN_DIST_TIMEOUT); the group's NCCL communicator was aborted and its results are lost"));
      {
        std::lock_guard<std::mutex> o(x.outcome->mu);
        x.outcome->status = why;
      }
      auto api = nccl();
      for (const auto& weak : x.comms) {
        NcclComm comm = weak.lock();
        if (!comm) continue;
        bool first = false;
        {
          std::lock_guard<std::mutex> h(comm->health->mu);
          first = comm->health->aborted.ok();
          if (first) comm->health->aborted = why;
        }
        if (first && api.ok() && comm->raw) (*api)->CommAbort(comm->raw);  // its kernels see the abort flag and return
      }
      ++i;  // kept until its event completes (the aborted kernels return)
    }
  }
}

}  // namespace

absl::Status CollectiveOutcome::get() {
  {
    std::lock_guard<std::mutex> lock(mu);
    if (!status.ok()) return status;
  }
  for (const auto& h : comms) {
    std::lock_guard<std::mutex> lock(h->mu);
    if (!h->aborted.ok()) return h->aborted;  // (released is not lost: the runs before it were whole)
  }
  return absl::OkStatus();
}

absl::Status comm_status(const Comm& comm) {
  std::lock_guard<std::mutex> lock(comm.health->mu);
  return !comm.health->aborted.ok() ? comm.health->aborted : comm.health->released;
}

void watch(const std::vector<NcclComm>& comms, std::shared_ptr<Event> done, std::shared_ptr<CollectiveOutcome> outcome,
           std::string what, int timeout_s) {
  Watchdog& w = watchdog();
  std::lock_guard<std::mutex> lock(w.mu);
  if (!w.started) {
    std::thread(watch_loop).detach();
    w.started = true;
  }
  const bool idle = w.watches.empty();
  w.watches.push_back(Watch{{comms.begin(), comms.end()}, std::move(done),
                            std::chrono::steady_clock::now() + std::chrono::seconds(timeout_s), std::move(outcome),
                            std::move(what), timeout_s});
  if (idle) w.cv.notify_one();
}

absl::Status check_ranks_agree(const std::vector<ir::Step>& steps, const std::vector<ir::BufferDesc>& buffers) {
  std::map<int64_t, std::vector<ir::CollectiveCall>> by_group;
  for (const ir::Step& s : steps) {
    if (!s.is_collective()) continue;
    by_group[s.collective.comm].push_back(ir::collective_call(s, buffers));
  }
  for (auto& [id, calls] : by_group) {
    auto host = ir::communicator_for(calls[0].attrs);
    if (!host.ok()) return host.status();
    const int w = (*host)->size();
    // First how many, then the calls themselves (the same count everywhere by then).
    int64_t n = int64_t(calls.size());
    std::vector<int64_t> counts(static_cast<size_t>(w));
    if (absl::Status s = (*host)->all_gather_bytes(&n, sizeof n, counts.data()); !s.ok()) return s;
    for (int r = 0; r < w; ++r)
      if (counts[size_t(r)] != n)
        return absl::InvalidArgumentError(absl::StrCat("collective mismatch between ranks: rank ", (*host)->rank(), "'s program runs ",
                                                       n, " collectives, rank ", r, "'s ", counts[size_t(r)]));
    std::vector<ir::CollectiveCall> all(calls.size() * size_t(w));
    if (absl::Status s = (*host)->all_gather_bytes(calls.data(), int64_t(calls.size() * sizeof(ir::CollectiveCall)), all.data());
        !s.ok())
      return s;
    for (size_t k = 0; k < calls.size(); ++k) {
      std::vector<ir::CollectiveCall> at_k;
      for (int r = 0; r < w; ++r) at_k.push_back(all[size_t(r) * calls.size() + k]);
      if (absl::Status s = ir::check_same_call(at_k); !s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

absl::Status enqueue_collective(const Comm& handle, const ir::CollectiveCall& call, CUdeviceptr in, CUdeviceptr out, CUstream stream) {
  auto api = nccl();
  if (!api.ok()) return api.status();
  const NcclApi& a = **api;
  ncclComm* comm = handle.raw;
  const ir::CollectiveAttrs& c = call.attrs;
  const DType dtype = call.dtype;
  const void* src = reinterpret_cast<const void*>(in);
  void* dst = reinterpret_cast<void*>(out);
  const size_t n = size_t(call.in_elems), bytes = n * size_t(dtype_size(dtype)), w = size_t(c.world);
  if ((c.kind == ir::Collective::kAllReduce || c.kind == ir::Collective::kReduceScatter) && nccl_type(dtype) < 0)
    return absl::UnimplementedError(absl::StrCat("a ", ir::collective_name(c.kind), " of ", dtype_name(dtype),
                                                 " values on cuda: NCCL reduces no 16-bit integer type (cast to int32 first)"));
  switch (c.kind) {
    case ir::Collective::kAllReduce:
      return check(a, a.AllReduce(src, dst, n, nccl_type(dtype), nccl_op(c.reduce), comm, stream), "ncclAllReduce");
    case ir::Collective::kReduceScatter:
      return check(a, a.ReduceScatter(src, dst, n / w, nccl_type(dtype), nccl_op(c.reduce), comm, stream), "ncclReduceScatter");
    case ir::Collective::kAllGather: return check(a, a.AllGather(src, dst, bytes, kU8, comm, stream), "ncclAllGather");
    case ir::Collective::kBroadcast: return check(a, a.Broadcast(src, dst, bytes, kU8, c.root, comm, stream), "ncclBroadcast");
    case ir::Collective::kAllToAll: {
      const size_t chunk = bytes / w;
      if (absl::Status s = check(a, a.GroupStart(), "ncclGroupStart"); !s.ok()) return s;
      for (size_t r = 0; r < w; ++r) {
        if (absl::Status s = check(a, a.Send(static_cast<const char*>(src) + r * chunk, chunk, kU8, int(r), comm, stream), "ncclSend");
            !s.ok())
          return s;
        if (absl::Status s = check(a, a.Recv(static_cast<char*>(dst) + r * chunk, chunk, kU8, int(r), comm, stream), "ncclRecv");
            !s.ok())
          return s;
      }
      return check(a, a.GroupEnd(), "ncclGroupEnd");
    }
  }
  return absl::InternalError("cuda: unknown collective");
}

}  // namespace kiln::runtime::cuda

#include "dist/mpi.h"

#include <dlfcn.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "support/options.h"

namespace kiln::dist {
namespace {

// Open MPI's handles are pointers to its predefined global objects.
using Handle = void*;

struct MpiApi {
  int (*Initialized)(int*);
  int (*Finalized)(int*);
  int (*Init_thread)(int*, char***, int, int*);
  int (*Finalize)();
  int (*Comm_rank)(Handle, int*);
  int (*Comm_size)(Handle, int*);
  int (*Iallgather)(const void*, int, Handle, void*, int, Handle, Handle, Handle*);
  int (*Test)(Handle*, int*, void*);
  int (*Allgather)(const void*, int, Handle, void*, int, Handle, Handle);
  int (*Allreduce)(const void*, void*, int, Handle, Handle, Handle);
  int (*Reduce_scatter_block)(const void*, void*, int, Handle, Handle, Handle);
  int (*Bcast)(void*, int, Handle, int, Handle);
  int (*Alltoall)(const void*, int, Handle, void*, int, Handle, Handle);
  int (*Error_string)(int, char*, int*);
  Handle world, byte, f32, f64, i8, u8, i32, i64, sum, prod, max, min;
};

constexpr int kThreadMultiple = 3;

absl::StatusOr<const MpiApi*> open_mpi() {
  static absl::StatusOr<const MpiApi*> api = []() -> absl::StatusOr<const MpiApi*> {
    const std::string name = support::options().mpi_library.empty() ? "libmpi.so.40" : support::options().mpi_library;
    // RTLD_GLOBAL: Open MPI's own plugins resolve libmpi's symbols through the global scope.
    void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!lib)
      return absl::UnavailableError(absl::StrCat("mpi: cannot open ", name, " (", dlerror(),
                                                 "); install Open MPI (Debian: openmpi-bin) or set KILN_MPI_LIBRARY"));
    auto* a = new MpiApi();
    std::string missing;
    auto fn = [&](auto* slot, const char* sym) {
      void* p = dlsym(lib, sym);
      if (!p) absl::StrAppend(&missing, missing.empty() ? "" : ", ", sym);
      std::memcpy(slot, &p, sizeof(p));
    };
    auto global = [&](Handle* slot, const char* sym) {
      *slot = dlsym(lib, sym);
      if (!*slot) absl::StrAppend(&missing, missing.empty() ? "" : ", ", sym);
    };
    fn(&a->Initialized, "MPI_Initialized");
    fn(&a->Finalized, "MPI_Finalized");
    fn(&a->Init_thread, "MPI_Init_thread");
    fn(&a->Finalize, "MPI_Finalize");
    fn(&a->Comm_rank, "MPI_Comm_rank");
    fn(&a->Comm_size, "MPI_Comm_size");
    fn(&a->Iallgather, "MPI_Iallgather");
    fn(&a->Test, "MPI_Test");
    fn(&a->Allgather, "MPI_Allgather");
    fn(&a->Allreduce, "MPI_Allreduce");
    fn(&a->Reduce_scatter_block, "MPI_Reduce_scatter_block");
    fn(&a->Bcast, "MPI_Bcast");
    fn(&a->Alltoall, "MPI_Alltoall");
    fn(&a->Error_string, "MPI_Error_string");
    global(&a->world, "ompi_mpi_comm_world");
    global(&a->byte, "ompi_mpi_byte");
    global(&a->f32, "ompi_mpi_float");
    global(&a->f64, "ompi_mpi_double");
    global(&a->i8, "ompi_mpi_int8_t");
    global(&a->u8, "ompi_mpi_uint8_t");
    global(&a->i32, "ompi_mpi_int32_t");
    global(&a->i64, "ompi_mpi_int64_t");
    global(&a->sum, "ompi_mpi_op_sum");
    global(&a->prod, "ompi_mpi_op_prod");
    global(&a->max, "ompi_mpi_op_max");
    global(&a->min, "ompi_mpi_op_min");
    if (!missing.empty())
      return absl::UnavailableError(absl::StrCat("mpi: ", name, " lacks ", missing, " (kiln speaks Open MPI's ABI)"));
    return a;
  }();
  return api;
}

absl::Status check(const MpiApi& a, int rc, const char* what) {
  if (rc == 0) return absl::OkStatus();
  char text[512] = {0};
  int len = 0;
  if (a.Error_string(rc, text, &len) != 0) std::snprintf(text, sizeof text, "error %d", rc);
  return absl::InternalError(absl::StrCat("mpi: ", what, " failed: ", text));
}

class MpiCommunicator : public ir::Communicator {
 public:
  MpiCommunicator(const MpiApi* a, int rank, int size, int timeout_s) : a_(a), rank_(rank), size_(size), timeout_(timeout_s) {}
  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return "mpi"; }

  absl::Status all_gather_bytes(const void* in, int64_t bytes, void* out) override {
    std::lock_guard<std::mutex> lock(mu_);  // collectives of one communicator run one at a time
    return gather_bytes(in, bytes, out, "exchanging bytes");
  }

  absl::Status run(const ir::CollectiveCall& c, const void* in, void* out) override {
    std::lock_guard<std::mutex> lock(mu_);
    const std::string what = ir::describe(c.attrs);
    if (absl::Status s = ir::agree_on_call(
            c, size_, [&](const void* i, int64_t n, void* o) { return gather_bytes(i, n, o, what); });
        !s.ok())
      return s;
    const Handle type = native_type(c.dtype);
    const Handle op = native_op(c.attrs.reduce);
    const int64_t n = c.in_elems, size = dtype_size(c.dtype);
    if (n * size > INT32_MAX)
      return absl::UnimplementedError(absl::StrCat("mpi: ", what, " of ", n, " elements exceeds MPI's int counts"));
    const int count = int(n);
    switch (c.attrs.kind) {
      case Collective::kAllGather:
        return check(*a_, a_->Allgather(in, int(n * size), a_->byte, out, int(n * size), a_->byte, a_->world), "MPI_Allgather");
      case Collective::kBroadcast:
        if (rank_ == c.attrs.root) std::memcpy(out, in, size_t(n * size));
        return check(*a_, a_->Bcast(out, int(n * size), a_->byte, c.attrs.root, a_->world), "MPI_Bcast");
      case Collective::kAllToAll: {
        const int chunk = int(n / size_ * size);
        return check(*a_, a_->Alltoall(in, chunk, a_->byte, out, chunk, a_->byte, a_->world), "MPI_Alltoall");
      }
      case Collective::kAllReduce:
        if (type && op) return check(*a_, a_->Allreduce(in, out, count, type, op, a_->world), "MPI_Allreduce");
        break;
      case Collective::kReduceScatter:
        if (type && op)
          return check(*a_, a_->Reduce_scatter_block(in, out, count / size_, type, op, a_->world), "MPI_Reduce_scatter_block");
        break;
    }
    // No MPI type or fold for it (f16, bf16, bool): every operand to every rank, folded here.
    return ir::run_on_host(c, rank_, in, out, [&](const void* i, int64_t n, void* o) {
      return check(*a_, a_->Allgather(i, int(n), a_->byte, o, int(n), a_->byte, a_->world), "MPI_Allgather");
    });
  }

 private:
  using Collective = ir::Collective;

  Handle native_type(DType t) const {
    switch (t) {
      case DType::kFloat32: return a_->f32;
      case DType::kFloat64: return a_->f64;
      case DType::kInt8: return a_->i8;
      case DType::kUInt8: return a_->u8;
      case DType::kInt32: return a_->i32;
      case DType::kInt64: return a_->i64;
      default: return nullptr;
    }
  }
  Handle native_op(ir::ScatterMode m) const {
    switch (m) {
      case ir::ScatterMode::kAdd: return a_->sum;
      case ir::ScatterMode::kMul: return a_->prod;
      case ir::ScatterMode::kMax: return a_->max;
      case ir::ScatterMode::kMin: return a_->min;
      default: return nullptr;
    }
  }

  // An allgather of bytes that gives up after the timeout instead of waiting for ever.
  absl::Status gather_bytes(const void* in, int64_t bytes, void* out, const std::string& what) {
    Handle request = nullptr;
    if (absl::Status s =
            check(*a_, a_->Iallgather(in, int(bytes), a_->byte, out, int(bytes), a_->byte, a_->world, &request), "MPI_Iallgather");
        !s.ok())
      return s;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(timeout_);
    for (int spins = 0;; ++spins) {
      int done = 0;
      if (absl::Status s = check(*a_, a_->Test(&request, &done, nullptr), "MPI_Test"); !s.ok()) return s;
      if (done) return absl::OkStatus();
      if (std::chrono::steady_clock::now() > deadline)
        return absl::DeadlineExceededError(absl::StrCat(what, ": not every rank of the ", size_, "-rank MPI group joined within ",
                                                        timeout_, " s (KILN_DIST_TIMEOUT); rank ", rank_, " gives up"));
      if (spins > 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }

  const MpiApi* a_;
  const int rank_, size_, timeout_;
  std::mutex mu_;
};

void finalize_at_exit() {
  auto a = open_mpi();
  if (!a.ok()) return;
  int done = 0;
  if ((*a)->Finalized(&done) == 0 && !done) (*a)->Finalize();
}

}  // namespace

bool launched_by_mpirun() { return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr; }

absl::StatusOr<std::shared_ptr<ir::Communicator>> mpi_world(int timeout_s) {
  auto a = open_mpi();
  if (!a.ok()) return a.status();
  const MpiApi& api = **a;
  static std::mutex mu;
  std::lock_guard<std::mutex> lock(mu);
  int initialized = 0, finalized = 0;
  if (absl::Status s = check(api, api.Initialized(&initialized), "MPI_Initialized"); !s.ok()) return s;
  if (absl::Status s = check(api, api.Finalized(&finalized), "MPI_Finalized"); !s.ok()) return s;
  if (finalized) return absl::FailedPreconditionError("mpi: MPI was finalized already in this process");
  if (!initialized) {
    int provided = 0;
    if (absl::Status s = check(api, api.Init_thread(nullptr, nullptr, kThreadMultiple, &provided), "MPI_Init_thread"); !s.ok())
      return s;
    if (provided < kThreadMultiple)
      return absl::UnavailableError("mpi: this MPI does not support MPI_THREAD_MULTIPLE (kiln's runs may come from any thread)");
    std::atexit(finalize_at_exit);
  }
  int rank = 0, size = 0;
  if (absl::Status s = check(api, api.Comm_rank(api.world, &rank), "MPI_Comm_rank"); !s.ok()) return s;
  if (absl::Status s = check(api, api.Comm_size(api.world, &size), "MPI_Comm_size"); !s.ok()) return s;
  return std::shared_ptr<ir::Communicator>(std::make_shared<MpiCommunicator>(&api, rank, size, timeout_s));
}

}  // namespace kiln::dist

// Process groups and collectives (include/kiln/dist.h). A ProcessGroup holds its rank's host
// Communicator (dist/), registered in the IR's table so that graph nodes name it by id; the
// registration ends with the last handle. A collective records one `collective` node
// (ir/collective.h) over axis 0; another axis is moved to the front and back around it.
#include "kiln/dist.h"

#include <cstdlib>
#include <numeric>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "dist/mpi.h"
#include "dist/tcp.h"
#include "dist/threads.h"
#include "frontend/lazy.h"
#include "ir/collective.h"
#include "replay/executable_cache.h"
#include "runtime/device.h"
#include "support/options.h"

namespace kiln::dist {

struct ProcessGroup::Impl {
  std::shared_ptr<ir::Communicator> comm;
  int64_t id = -1;
  int local_rank = 0;
  Impl(std::shared_ptr<ir::Communicator> c, int local)
      : comm(std::move(c)), id(ir::add_communicator(comm)), local_rank(local < 0 ? comm->rank() : local) {}
  // The group's executables go with it (nothing can run them: ids are never reused), then the
  // backends' per-group state (NCCL communicators) through the IR's release hooks.
  ~Impl() {
    replay::cache_drop_if([&](const replay::CompiledGraph& e) { return ir::uses_group(e.graph, id); });
    ir::remove_communicator(id);
  }
};

struct Access {
  static ProcessGroup make(std::shared_ptr<ir::Communicator> c, int local_rank = -1) {
    return ProcessGroup(std::make_shared<const ProcessGroup::Impl>(std::move(c), local_rank));
  }
  static const ProcessGroup::Impl* impl(const ProcessGroup& g) { return g.impl_.get(); }
};

int ProcessGroup::rank() const { return impl_ ? impl_->comm->rank() : 0; }
int ProcessGroup::size() const { return impl_ ? impl_->comm->size() : 0; }
int ProcessGroup::local_rank() const { return impl_ ? impl_->local_rank : 0; }
std::string ProcessGroup::backend() const { return impl_ ? impl_->comm->name() : "none"; }

namespace {

absl::StatusOr<int> timeout_s() {
  const support::Options o = support::options();
  if (absl::Status s = o.check("KILN_DIST_TIMEOUT"); !s.ok()) return s;
  return o.dist_timeout_s;
}

ir::ScatterMode fold_of(ReduceOp op) {
  switch (op) {
    case ReduceOp::kProd: return ir::ScatterMode::kMul;
    case ReduceOp::kMax: return ir::ScatterMode::kMax;
    case ReduceOp::kMin: return ir::ScatterMode::kMin;
    default: return ir::ScatterMode::kAdd;
  }
}

// Axis `axis` of a rank-`rank` tensor to the front, or back (inverse).
std::vector<int64_t> to_front(int64_t axis, int64_t rank, bool inverse) {
  std::vector<int64_t> perm(static_cast<size_t>(rank));
  std::iota(perm.begin(), perm.end(), 0);
  perm.erase(perm.begin() + axis);
  perm.insert(perm.begin(), axis);
  if (!inverse) return perm;
  std::vector<int64_t> inv(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inv[size_t(perm[i])] = int64_t(i);
  return inv;
}

Tensor collective(const std::string& label, const Tensor& x, const ProcessGroup& group, ir::Collective kind, ReduceOp op,
                  int root, int64_t axis) {
  using detail::fail;
  const ProcessGroup::Impl* g = Access::impl(group);
  if (!g) fail(label, "the process group is empty (a default-constructed ProcessGroup; use init() or local_group())");
  runtime::Device* device = detail::common_device(label, {x});
  if (absl::Status s = device->collectives_status(); !s.ok()) fail(label, std::string(s.message()));
  const bool folds = kind == ir::Collective::kAllReduce || kind == ir::Collective::kReduceScatter;
  if (folds && op == ReduceOp::kMean && !is_float(x.dtype()))
    fail(label, absl::StrCat("mean needs a float tensor, got ", dtype_name(x.dtype())));
  if (folds && x.dtype() == DType::kBool && (op == ReduceOp::kSum || op == ReduceOp::kProd || op == ReduceOp::kMean))
    fail(label, "a bool tensor reduces with kMax (any rank true) or kMin (all ranks true)");
  const bool by_axis = kind != ir::Collective::kAllReduce && kind != ir::Collective::kBroadcast;
  if (by_axis && x.ndim() == 0) fail(label, "needs a tensor with at least one axis, got a scalar");
  if (by_axis) axis = detail::normalize_axis(label, axis, x.ndim());
  ir::CollectiveAttrs a;
  a.kind = kind;
  a.reduce = folds ? fold_of(op) : ir::ScatterMode::kNone;
  a.root = root;
  a.world = g->comm->size();
  a.comm = g->id;
  if (kind == ir::Collective::kBroadcast && (root < 0 || root >= a.world))
    fail(label, absl::StrCat("root ", root, " is not a rank of the ", a.world, "-rank group"));
  const bool moved = by_axis && axis != 0;
  const Tensor operand = moved ? permute(x, to_front(axis, x.ndim(), false)) : x;
  auto shape = ir::collective_shape(a, operand.shape());
  if (!shape.ok()) {
    std::string msg(shape.status().message());
    if (moved) absl::StrAppend(&msg, " (axis ", axis, ")");
    fail(label, msg);
  }
  Tensor r = detail::record(label, ir::Op::kCollective, x.dtype(), *shape, {operand}, a.ints());
  if (moved) r = permute(r, to_front(axis, x.ndim(), true));
  if (folds && op == ReduceOp::kMean) r = r / double(a.world);
  return r;
}

}  // namespace

// An integer environment variable: -1 when unset, InvalidArgument when not a number.
static absl::StatusOr<int> env_int(const char* name) {
  const char* v = std::getenv(name);
  if (!v) return -1;
  int x = 0;
  if (!absl::SimpleAtoi(v, &x) || x < 0) return absl::InvalidArgumentError(absl::StrCat("kiln::dist::init: ", name, "=", v, " is not a number"));
  return x;
}

absl::StatusOr<ProcessGroup> init() {
  if (launched_by_mpirun()) return init_mpi();
  const char* addr = std::getenv("MASTER_ADDR");
  auto rank = env_int("RANK"), world = env_int("WORLD_SIZE"), port = env_int("MASTER_PORT"), local = env_int("LOCAL_RANK");
  for (const auto* v : {&rank, &world, &port, &local})
    if (!v->ok()) return v->status();
  if (addr && *rank >= 0 && *world >= 1 && *port > 0) {
    auto t = timeout_s();
    if (!t.ok()) return t.status();
    auto c = tcp_group(*rank, *world, addr, *port, *t);
    if (!c.ok()) return c.status();
    return Access::make(*std::move(c), *local);
  }
  return absl::FailedPreconditionError(
      "kiln::dist::init: no launcher found (start the program with Open MPI's mpirun, or set RANK, WORLD_SIZE, MASTER_ADDR "
      "and MASTER_PORT; or make ranks on threads with local_group)");
}

absl::StatusOr<ProcessGroup> init_tcp(int rank, int world_size, const std::string& master_addr, int master_port) {
  auto t = timeout_s();
  if (!t.ok()) return t.status();
  auto c = tcp_group(rank, world_size, master_addr, master_port, *t);
  if (!c.ok()) return c.status();
  return Access::make(*std::move(c));
}

absl::StatusOr<ProcessGroup> init_mpi() {
  auto t = timeout_s();
  if (!t.ok()) return t.status();
  auto world = mpi_world(*t);
  if (!world.ok()) return world.status();
  const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_RANK");
  int l = -1;
  if (local && !absl::SimpleAtoi(local, &l)) l = -1;
  return Access::make(*std::move(world), l);
}

absl::StatusOr<std::vector<ProcessGroup>> local_group(int size) {
  if (size < 1) return absl::InvalidArgumentError(absl::StrCat("kiln::dist::local_group: ", size, " ranks"));
  auto t = timeout_s();
  if (!t.ok()) return t.status();
  std::vector<ProcessGroup> out;
  for (std::shared_ptr<ir::Communicator>& c : make_thread_group(size, *t)) out.push_back(Access::make(std::move(c)));
  return out;
}

Tensor all_reduce(const Tensor& x, const ProcessGroup& group, ReduceOp op) {
  return collective("all_reduce", x, group, ir::Collective::kAllReduce, op, 0, 0);
}
Tensor all_gather(const Tensor& x, const ProcessGroup& group, int64_t axis) {
  return collective("all_gather", x, group, ir::Collective::kAllGather, ReduceOp::kSum, 0, axis);
}
Tensor reduce_scatter(const Tensor& x, const ProcessGroup& group, ReduceOp op, int64_t axis) {
  return collective("reduce_scatter", x, group, ir::Collective::kReduceScatter, op, 0, axis);
}
Tensor broadcast(const Tensor& x, const ProcessGroup& group, int root) {
  return collective("broadcast", x, group, ir::Collective::kBroadcast, ReduceOp::kSum, root, 0);
}
Tensor all_to_all(const Tensor& x, const ProcessGroup& group, int64_t axis) {
  return collective("all_to_all", x, group, ir::Collective::kAllToAll, ReduceOp::kSum, 0, axis);
}

}  // namespace kiln::dist

#include "ir/collective.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "ir/graph.h"
#include "ir/half.h"

namespace kiln::ir {

std::vector<int64_t> CollectiveAttrs::ints() const { return {int64_t(kind), int64_t(reduce), root, world, comm}; }

CollectiveAttrs CollectiveAttrs::from_ints(const std::vector<int64_t>& ints) {
  CollectiveAttrs a;
  a.kind = Collective(ints[0]);
  a.reduce = ScatterMode(ints[1]);
  a.root = int(ints[2]);
  a.world = int(ints[3]);
  a.comm = ints[4];
  return a;
}

const char* collective_name(Collective kind) {
  switch (kind) {
    case Collective::kAllReduce: return "all_reduce";
    case Collective::kAllGather: return "all_gather";
    case Collective::kReduceScatter: return "reduce_scatter";
    case Collective::kBroadcast: return "broadcast";
    case Collective::kAllToAll: return "all_to_all";
  }
  return "collective";
}

namespace {

const char* fold_name(ScatterMode m) {
  switch (m) {
    case ScatterMode::kAdd: return "sum";
    case ScatterMode::kMul: return "prod";
    case ScatterMode::kMax: return "max";
    case ScatterMode::kMin: return "min";
    default: return "none";
  }
}

bool folds(Collective k) { return k == Collective::kAllReduce || k == Collective::kReduceScatter; }

}  // namespace

std::string describe(const CollectiveAttrs& a) {
  if (folds(a.kind)) return absl::StrCat(collective_name(a.kind), "(", fold_name(a.reduce), ")");
  if (a.kind == Collective::kBroadcast) return absl::StrCat("broadcast(root ", a.root, ")");
  return collective_name(a.kind);
}

absl::StatusOr<Shape> collective_shape(const CollectiveAttrs& a, const Shape& in) {
  if (int64_t(a.kind) < 0 || a.kind > Collective::kAllToAll)
    return absl::InvalidArgumentError(absl::StrCat("unknown collective kind ", int64_t(a.kind)));
  const std::string what = describe(a);
  if (a.world < 1) return absl::InvalidArgumentError(absl::StrCat(what, ": a group of ", a.world, " ranks"));
  if (folds(a.kind) != (a.reduce != ScatterMode::kNone) || int64_t(a.reduce) < 0 || a.reduce > ScatterMode::kMin)
    return absl::InvalidArgumentError(absl::StrCat(collective_name(a.kind), ": bad fold ", int64_t(a.reduce)));
  if (a.kind == Collective::kBroadcast ? (a.root < 0 || a.root >= a.world) : a.root != 0)
    return absl::InvalidArgumentError(absl::StrCat(what, ": root ", a.root, " in a group of ", a.world));
  if (a.kind == Collective::kAllReduce || a.kind == Collective::kBroadcast) return in;
  if (in.empty()) return absl::InvalidArgumentError(absl::StrCat(what, " needs an operand with an axis 0, got a scalar"));
  Shape out = in;
  if (a.kind == Collective::kAllGather) {
    out[0] *= a.world;
    return out;
  }
  if (in[0] % a.world != 0)
    return absl::InvalidArgumentError(absl::StrCat(what, ": axis 0 of ", shape_str(in), " does not split into ",
                                                   a.world, " equal chunks (one per rank)"));
  if (a.kind == Collective::kReduceScatter) out[0] /= a.world;
  return out;
}

int64_t CollectiveCall::out_elems() const {
  switch (attrs.kind) {
    case Collective::kAllGather: return in_elems * attrs.world;
    case Collective::kReduceScatter: return in_elems / attrs.world;
    default: return in_elems;
  }
}

absl::Status check_same_call(const std::vector<CollectiveCall>& by_rank) {
  if (by_rank.empty()) return absl::OkStatus();
  auto text = [](const CollectiveCall& c) {
    return absl::StrCat(describe(c.attrs), " of ", c.in_elems, " ", dtype_name(c.dtype), " elements");
  };
  std::vector<int> differ;
  CollectiveCall first = by_rank[0];
  for (size_t r = 1; r < by_rank.size(); ++r) {
    CollectiveCall c = by_rank[r];
    c.attrs.comm = first.attrs.comm;  // each rank's own communicator id
    if (!(c == first)) differ.push_back(int(r));
  }
  if (differ.empty()) return absl::OkStatus();
  std::string msg = absl::StrCat("collective mismatch between ranks: rank 0 runs ", text(by_rank[0]));
  for (int r : differ) absl::StrAppend(&msg, ", rank ", r, " runs ", text(by_rank[size_t(r)]));
  return absl::InvalidArgumentError(msg + " (every rank must run the same collectives in the same order)");
}

namespace {

std::mutex& table_mutex() {
  static std::mutex m;
  return m;
}
std::map<int64_t, std::shared_ptr<Communicator>>& table() {
  static auto* t = new std::map<int64_t, std::shared_ptr<Communicator>>();
  return *t;
}
int64_t next_id = 1;

std::vector<std::function<void(int64_t)>>& hooks() {
  static auto* h = new std::vector<std::function<void(int64_t)>>();
  return *h;
}

}  // namespace

int64_t add_communicator(std::shared_ptr<Communicator> c) {
  std::lock_guard<std::mutex> lock(table_mutex());
  const int64_t id = next_id++;
  table()[id] = std::move(c);
  return id;
}

void remove_communicator(int64_t id) {
  std::vector<std::function<void(int64_t)>> run;
  std::shared_ptr<Communicator> gone;  // destroyed after the lock is released
  {
    std::lock_guard<std::mutex> lock(table_mutex());
    auto it = table().find(id);
    if (it == table().end()) return;
    gone = std::move(it->second);
    table().erase(it);
    run = hooks();
  }
  for (const auto& h : run) h(id);
}

void add_release_hook(std::function<void(int64_t)> hook) {
  std::lock_guard<std::mutex> lock(table_mutex());
  hooks().push_back(std::move(hook));
}

bool uses_group(const Graph& g, int64_t comm) {
  for (const Node& n : g.nodes()) {
    if (n.op == Op::kCollective && CollectiveAttrs::from_ints(n.ints).comm == comm) return true;
    if (n.regions)
      for (const Graph& r : *n.regions)
        if (uses_group(r, comm)) return true;
  }
  return false;
}

std::shared_ptr<Communicator> find_communicator(int64_t id) {
  std::lock_guard<std::mutex> lock(table_mutex());
  auto it = table().find(id);
  return it == table().end() ? nullptr : it->second;
}

absl::StatusOr<std::shared_ptr<Communicator>> communicator_for(const CollectiveAttrs& a) {
  std::shared_ptr<Communicator> c = find_communicator(a.comm);
  if (!c)
    return absl::FailedPreconditionError(absl::StrCat(describe(a), ": process group ", a.comm,
                                                      " no longer exists (its last ProcessGroup handle was destroyed)"));
  if (c->size() != a.world)
    return absl::InternalError(absl::StrCat(describe(a), ": recorded for ", a.world, " ranks, group ", a.comm, " has ",
                                            c->size()));
  return c;
}

namespace {

// Floats fold in double, rounded back to their dtype after each step.
double load(DType t, const char* p) {
  switch (t) {
    case DType::kFloat16: return half_to_float(*reinterpret_cast<const uint16_t*>(p));
    case DType::kBFloat16: return bf16_to_float(*reinterpret_cast<const uint16_t*>(p));
    case DType::kFloat32: return *reinterpret_cast<const float*>(p);
    default: return *reinterpret_cast<const double*>(p);
  }
}

void store(DType t, char* p, double v) {
  switch (t) {
    case DType::kFloat16: *reinterpret_cast<uint16_t*>(p) = float_to_half(float(v)); break;
    case DType::kBFloat16: *reinterpret_cast<uint16_t*>(p) = float_to_bf16(float(v)); break;
    case DType::kFloat32: *reinterpret_cast<float*>(p) = float(v); break;
    default: *reinterpret_cast<double*>(p) = v; break;
  }
}

double fold_float(ScatterMode m, double a, double b) {
  switch (m) {
    case ScatterMode::kMul: return a * b;
    case ScatterMode::kMax: return std::isnan(a) || std::isnan(b) ? NAN : a > b ? a : b;
    case ScatterMode::kMin: return std::isnan(a) || std::isnan(b) ? NAN : a < b ? a : b;
    default: return a + b;
  }
}

// Integers fold exactly in their own width, wrapping like the dtype.
template <typename T>
void fold_ints(ScatterMode m, const char* x, char* acc, int64_t n) {
  using U = std::make_unsigned_t<T>;
  for (int64_t i = 0; i < n; ++i) {
    T a, b;
    std::memcpy(&a, acc + i * int64_t(sizeof(T)), sizeof(T));
    std::memcpy(&b, x + i * int64_t(sizeof(T)), sizeof(T));
    switch (m) {
      case ScatterMode::kMul: a = T(U(uint64_t(U(a)) * uint64_t(U(b)))); break;  // (no int promotion of 16-bit U)
      case ScatterMode::kMax: a = a > b ? a : b; break;
      case ScatterMode::kMin: a = a < b ? a : b; break;
      default: a = T(U(uint64_t(U(a)) + uint64_t(U(b)))); break;
    }
    std::memcpy(acc + i * int64_t(sizeof(T)), &a, sizeof(T));
  }
}

}  // namespace

void fold_into(ScatterMode m, DType t, const void* x, void* acc, int64_t n) {
  const char* in = static_cast<const char*>(x);
  char* out = static_cast<char*>(acc);
  switch (t) {
    case DType::kBool: {  // sum and max are or; prod and min are and
      const bool any = m == ScatterMode::kAdd || m == ScatterMode::kMax;
      for (int64_t i = 0; i < n; ++i) out[i] = any ? (out[i] || in[i]) : (out[i] && in[i]);
      return;
    }
    case DType::kUInt8: return fold_ints<uint8_t>(m, in, out, n);
    case DType::kInt8: return fold_ints<int8_t>(m, in, out, n);
    case DType::kInt16: return fold_ints<int16_t>(m, in, out, n);
    case DType::kUInt16: return fold_ints<uint16_t>(m, in, out, n);
    case DType::kUInt32: return fold_ints<uint32_t>(m, in, out, n);
    case DType::kInt32: return fold_ints<int32_t>(m, in, out, n);
    case DType::kInt64: return fold_ints<int64_t>(m, in, out, n);
    default: break;
  }
  const int64_t size = dtype_size(t);
  for (int64_t i = 0; i < n; ++i) store(t, out + i * size, fold_float(m, load(t, out + i * size), load(t, in + i * size)));
}

absl::Status agree_on_call(const CollectiveCall& c, int world, const GatherBytes& gather) {
  std::vector<CollectiveCall> calls(static_cast<size_t>(world));
  CollectiveCall mine = c;
  if (absl::Status s = gather(&mine, sizeof mine, calls.data()); !s.ok()) return s;
  return check_same_call(calls);
}

absl::Status run_on_host(const CollectiveCall& c, int rank, const void* in, void* out, const GatherBytes& gather) {
  const int64_t bytes = c.in_elems * dtype_size(c.dtype), world = c.attrs.world;
  std::vector<char> all(size_t(bytes * world));
  if (absl::Status s = gather(in, bytes, all.data()); !s.ok()) return s;
  std::vector<const void*> operands;
  for (int64_t r = 0; r < world; ++r) operands.push_back(all.data() + r * bytes);
  collective_from_all(c, rank, operands, out);
  return absl::OkStatus();
}

void collective_from_all(const CollectiveCall& c, int rank, const std::vector<const void*>& operands, void* out) {
  const int64_t size = dtype_size(c.dtype), w = c.attrs.world;
  char* o = static_cast<char*>(out);
  auto bytes_of = [&](int r) { return static_cast<const char*>(operands[size_t(r)]); };
  switch (c.attrs.kind) {
    case Collective::kAllReduce:
      std::memcpy(o, bytes_of(0), size_t(c.in_elems * size));
      for (int r = 1; r < w; ++r) fold_into(c.attrs.reduce, c.dtype, bytes_of(r), o, c.in_elems);
      return;
    case Collective::kReduceScatter: {
      const int64_t chunk = c.in_elems / w;
      std::memcpy(o, bytes_of(0) + rank * chunk * size, size_t(chunk * size));
      for (int r = 1; r < w; ++r) fold_into(c.attrs.reduce, c.dtype, bytes_of(r) + rank * chunk * size, o, chunk);
      return;
    }
    case Collective::kAllGather:
      for (int r = 0; r < w; ++r) std::memcpy(o + r * c.in_elems * size, bytes_of(r), size_t(c.in_elems * size));
      return;
    case Collective::kBroadcast: std::memcpy(o, bytes_of(c.attrs.root), size_t(c.in_elems * size)); return;
    case Collective::kAllToAll: {
      const int64_t chunk = c.in_elems / w * size;
      for (int r = 0; r < w; ++r) std::memcpy(o + r * chunk, bytes_of(r) + rank * chunk, size_t(chunk));
      return;
    }
  }
}

}  // namespace kiln::ir

#include "ir/kernel_twins.h"

#include <algorithm>
#include <cstdint>
#include <unordered_map>

namespace kiln::ir {
namespace {

int position(const std::vector<int>& v, int x) { return int(std::find(v.begin(), v.end(), x) - v.begin()); }

// A kernel's bindings: kernel_buffers and kernel_param_slots.
struct Bindings {
  std::vector<int> buffers, slots;
};

// `k` with buffer ids and param slots replaced by their positions in `b`, and nothing that does
// not reach the code (name, notes, graph sources).
Kernel renamed(const Kernel& k, const Bindings& b) {
  const std::vector<int>&bufs = b.buffers, &slots = b.slots;
  Kernel r;
  r.shape = k.shape;
  r.sym = k.sym;
  for (SymExtent& e : r.sym)
    if (e.symbolic()) e.slot = position(slots, e.slot);
  r.reduce = k.reduce;
  r.contraction = k.contraction;
  r.serial = k.serial;
  r.config = k.config;
  r.nodes = k.nodes;
  r.stores = k.stores;
  for (KNode& n : r.nodes) {
    if (n.buffer >= 0) n.buffer = position(bufs, n.buffer);
    if (n.op == Op::kParam) n.ints[0] = position(slots, int(n.ints[0]));
  }
  for (Store& s : r.stores) s.buffer = position(bufs, s.buffer);
  return r;
}

bool same_stores(const std::vector<Store>& a, const std::vector<Store>& b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (a[i].buffer != b[i].buffer || !(a[i].map == b[i].map) || a[i].value != b[i].value || a[i].index != b[i].index ||
        a[i].ints != b[i].ints)
      return false;
  return true;
}

bool same_code(const Kernel& a, const Kernel& b) {
  if (a.chained() || b.chained()) return false;  // a chained kernel's tickets are its own
  const Contraction &ca = a.contraction, &cb = b.contraction;
  if (a.shape != b.shape || a.sym != b.sym || a.reduce != b.reduce || a.serial != b.serial || a.config != b.config || ca.reduce != cb.reduce || ca.lhs != cb.lhs ||
      ca.rhs != cb.rhs || ca.m_axis != cb.m_axis || ca.n_axis != cb.n_axis || ca.k_axis != cb.k_axis || ca.tf32 != cb.tf32)
    return false;
  if (a.nodes.size() != b.nodes.size()) return false;
  for (size_t i = 0; i < a.nodes.size(); ++i)
    if (!(a.nodes[i] == b.nodes[i]) || a.nodes[i].inner != b.nodes[i].inner) return false;
  return same_stores(a.stores, b.stores);
}

bool same_bindings(const Program& p, const Bindings& a, const Bindings& b) {
  const std::vector<int>&ba = a.buffers, &bb = b.buffers;
  if (ba.size() != bb.size()) return false;
  for (size_t i = 0; i < ba.size(); ++i) {
    const BufferDesc &x = p.buffers[size_t(ba[i])], &y = p.buffers[size_t(bb[i])];
    if (x.dtype != y.dtype || x.shape != y.shape) return false;
    for (size_t j = 0; j < i; ++j)
      if (share_bytes(p, ba[i], ba[j]) != share_bytes(p, bb[i], bb[j])) return false;
  }
  const std::vector<int>&pa = a.slots, &pb = b.slots;
  if (pa.size() != pb.size()) return false;
  for (size_t i = 0; i < pa.size(); ++i)
    if (!(p.params[size_t(pa[i])] == p.params[size_t(pb[i])])) return false;
  return true;
}

// A cheap summary for bucketing: kernels with different summaries are never twins.
uint64_t summary(const Kernel& k) {
  uint64_t h = k.nodes.size() * 1000003u + k.stores.size();
  auto mix = [&h](uint64_t v) { h = (h ^ v) * 0x100000001b3ull; };
  for (int64_t d : k.shape) mix(uint64_t(d));
  for (const KNode& n : k.nodes) mix(uint64_t(n.op) * 131u + uint64_t(n.dtype));
  return h;
}

}  // namespace

std::vector<int> kernel_buffers(const Kernel& k) {
  std::vector<int> out;
  auto add = [&out](int b) {
    if (b >= 0 && std::find(out.begin(), out.end(), b) == out.end()) out.push_back(b);
  };
  for (const KNode& n : k.nodes) add(n.buffer);
  for (const Store& s : k.stores) add(s.buffer);
  return out;
}

std::vector<int> kernel_param_slots(const Kernel& k) {
  std::vector<int> out;
  for (const KNode& n : k.nodes)
    if (n.op == Op::kParam && !n.ints.empty() && std::find(out.begin(), out.end(), int(n.ints[0])) == out.end())
      out.push_back(int(n.ints[0]));
  for (const SymExtent& e : k.sym)
    if (e.symbolic() && std::find(out.begin(), out.end(), e.slot) == out.end()) out.push_back(e.slot);
  return out;
}

std::vector<int> kernel_twins(const Program& p) {
  std::vector<int> twin(p.kernels.size());
  std::unordered_map<uint64_t, std::vector<int>> families;  // summary -> first kernel of each family
  std::vector<Kernel> canonical(p.kernels.size());
  std::vector<Bindings> bindings(p.kernels.size());
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    const Kernel& k = p.kernels[i];
    twin[i] = int(i);
    bindings[i] = {kernel_buffers(k), kernel_param_slots(k)};
    canonical[i] = renamed(k, bindings[i]);
    std::vector<int>& firsts = families[summary(k)];
    for (int f : firsts)
      if (same_code(canonical[size_t(f)], canonical[i]) && same_bindings(p, bindings[size_t(f)], bindings[i])) {
        twin[i] = f;
        break;
      }
    if (twin[i] == int(i)) firsts.push_back(int(i));
  }
  return twin;
}

}  // namespace kiln::ir

// The renderer's per-kernel state and thread-mapping strategies (internal to codegen/c_family).
#pragma once

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "codegen/c_family/dialect.h"
#include "codegen/c_family/kernel_writer.h"
#include "support/options.h"

namespace kiln::codegen::gpu {
namespace render_detail {

using ir::KNodeId;
using ir::Op;

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Device helper text shared by kernels of one module (each guarded against a second definition):
// mbarriers, wgmma descriptors and TMA copies of the sm_90a paths (contraction_sm90.cc); packing,
// cp.async and ldmatrix of the attention kernels (attention_cuda.cc).
std::string sm90_device_helpers();
const char* attention_device_helpers();
// A contraction kernel's batch axes (every axis but m, n and k), and their product.
std::vector<int> batch_axes_of(const ir::Kernel& k, int64_t* batch);
// Whether node `id` (operand `which`, for messages) is a load the copy engine could fetch as it
// stands: one strided view following the kernel's axes, no mask, of a buffer of its own dtype.
bool tma_plain_load(const ir::Program& p, const ir::Kernel& k, KNodeId id, const char* which, std::string* why);
// The value of `key` in a kernel's config (ir::Kernel::config, "bn=128 schedule=pingpong"), or ""
// when the config does not set it (the heuristic decides).
inline std::string config_value(const std::string& config, const std::string& key) {
  const std::string k = key + "=";
  for (size_t at = 0; at < config.size();) {
    size_t end = config.find(' ', at);
    if (end == std::string::npos) end = config.size();
    if (config.compare(at, k.size(), k) == 0) return config.substr(at + k.size(), end - at - k.size());
    at = end + 1;
  }
  return "";
}
// A symbolic m extent (ir::SymExtent) is planned as this many rows: the choices must hold at
// every size, and the sizes worth sharing code are the large ones.
constexpr int64_t kSymbolicRows = int64_t(1) << 20;

inline int64_t pow2_at_least(int64_t v) {
  int64_t p = 1;
  while (p < v) p *= 2;
  return p;
}

class Renderer {
 public:
  Renderer(const ir::Program& p, const ir::Kernel& k, const DialectOps& d, const ir::TargetInfo& t)
      : p_(p), k_(k), d_(d), t_(t), w_(p, k, d) {
    for (size_t a = 0; a < k.shape.size(); ++a) (k.reduce[a] ? reduce_axes_ : outer_axes_).push_back(int(a));
    for (size_t i = 0; i < k.nodes.size(); ++i)
      if (ir::is_reduce(k.nodes[i].op)) phases_.push_back(KNodeId(i));
    // Grid sizes: enough groups to fill the device, and within every API's limit.
    max_groups_ = d.kind() == Dialect::kGlsl ? 65535 : std::max<int64_t>(int64_t(t.parallelism) * 32, 1024);
    if (k.chained()) {
      fin_ = std::make_unique<Renderer>(p, k.finish[0], d, t);
      fin_->w_.set_prefix("f_");
    }
  }

  absl::StatusOr<KernelSource> run(const std::string& name) {
    name_ = name;
    KernelSource out;
    out.name = name;
    int block = 256;
    // passes/chain_reduce.h chains plain reductions only (the strategies below that call the
    // finish hooks: row reductions, column tiles, a thread per output).
    if (fin_ && (attention_node() >= 0 || k_.contraction.reduce >= 0 || k_.serial || phases_.empty() || segment_node() >= 0))
      return absl::InternalError(absl::StrCat("kernel ", name, ": a chained finish after a kernel that is not a plain reduction"));
    if (attention_node() >= 0) {
      auto b = attention(&out);
      if (!b.ok()) return b.status();
      block = *b;
      if (support::debug_level() >= 2) std::fprintf(stderr, "kiln: %s: %s\n", name.c_str(), out.strategy.c_str());
    } else if (k_.contraction.reduce >= 0) {
      std::string why;
      // A symbolic extent takes the tensor-core kernels that read it (sm_90a, sm_80, cooperative
      // matrices) or else the shared-memory tiled one: the register-staged mma kernel bakes its
      // tile counts and bounds.
      if (sm90_applies(&why)) block = contraction_sm90(&out);
      else if (sm80_applies()) block = contraction_sm80(&out);
      else if (coop_applies()) block = contraction_coop(&out);
      else if (matrix_unit_applies()) block = contraction_matrix_unit(&out);
      else if (k_.any_symbolic()) block = contraction(&out);
      else block = half_mma_applies() || tf32_mma_applies() ? contraction_mma(&out) : contraction(&out);
      if (support::debug_level() >= 2)
        std::fprintf(stderr, "kiln: %s: %s%s%s\n", name.c_str(), out.strategy.c_str(), why.empty() ? "" : "; not sm_90a: ",
                     why.c_str());
    } else if (const std::string how = segment_strategy(); how == "block" || how == "queue") {
      block = how == "block" ? segment_block(&out) : segment_queue(&out);
      if (support::debug_level() >= 2) std::fprintf(stderr, "kiln: %s: %s\n", name.c_str(), out.strategy.c_str());
    } else if (k_.serial) {
      per_output(&out, block);  // its reduce axes run in order in each thread
    } else if (phases_.empty()) {
      elementwise(&out, block);
      if (how == "thread") out.strategy = "segments: one thread per output walks its segment";
    } else if (use_column_tiles()) {
      block = column_tiles(&out);
    } else if (use_row_strategy()) {
      block = row_reduction(&out);
    } else {
      per_output(&out, block);
    }
    if (fin_)
      absl::StrAppend(&out.strategy, "; chained: the last to store an output's ", k_.finish[0].shape.back(), " partials folds them",
                      finish_by_workgroup_ ? " with its workgroup" : " alone");
    out.block[0] = uint32_t(block);
    const std::vector<BufferParam> bufs = bindings();
    for (const BufferParam& b : bufs) out.buffers.push_back(b.id);
    out.params = w_.scalar_params();
    if (fin_) {  // and the params its finish reads
      for (int slot : fin_->w_.scalar_params()) out.params.push_back(slot);
      std::sort(out.params.begin(), out.params.end());
      out.params.erase(std::unique(out.params.begin(), out.params.end()), out.params.end());
    }
    std::string shared;
    for (auto& [type, nm, n] : shared_) shared += d_.shared_decl(type, nm, n);
    if (fin_)
      for (auto& [type, nm, n] : fin_->shared_) shared += d_.shared_decl(type, nm, n);
    std::string open = sm90_                     ? sm90_kernel_open(name)
                       : !helpers_.empty() ? dsmem_kernel_open(name)
                                                : d_.kernel_open(name, bufs, out.params, w_.param_base(), block, shared);
    out.source = prologue_ + open + w_.body() + d_.kernel_close();
    out.own_state = !prologue_.empty();
    return out;
  }

  // Whether the kernel needs the arch-specific target (sm_90a).
  bool arch_specific() const { return sm90_; }

  // Autotuning (runtime::Compiler::tuning_candidates): the configs worth timing for this kernel,
  // the heuristic's own first, and its shape class; empty when there is nothing to choose
  // (tuning.cc).
  std::vector<std::string> tuning_candidates(std::string* shape_class) const;

  Features features() const {
    Features f = w_.features();
    if (fin_) {
      const Features g = fin_->w_.features();
      f.storage.insert(g.storage.begin(), g.storage.end());
      f.storage.insert(DType::kUInt32);  // the tickets
      f.f64 = f.f64 || g.f64;
      f.i64 = f.i64 || g.i64;
      f.i8 = f.i8 || g.i8;
      f.f16_storage = f.f16_storage || g.f16_storage;
    }
    f.shared = !shared_.empty() || (fin_ && !fin_->shared_.empty());
    f.coop = coop_;
    return f;
  }

 private:
  uint32_t groups_for(int64_t work_items, int block) const {
    int64_t g = std::max<int64_t>(1, ceil_div(work_items, block));
    return uint32_t(std::min<int64_t>(g, max_groups_));
  }

  std::string shared_array(DType t, int64_t n) {
    std::string name = absl::StrCat(w_.prefix(), "sm", shared_.size());
    shared_.push_back({d_.type(t), name, n});
    return name;
  }
  // One reduction scratch array per element type, reused by every phase (each phase ends with
  // a barrier before the array is written again).
  // Shared scratch reused across reductions of one kernel; `role` keeps arrays used at the same
  // time apart (an argmax's values and indices are both int64 for int64 inputs).
  std::string scratch(DType t, int64_t n, int role = 0) {
    std::string key = absl::StrCat(d_.type(t), "/", n, "/", role);
    auto it = scratch_.find(key);
    if (it != scratch_.end()) return it->second;
    std::string name = shared_array(t, n);
    scratch_[key] = name;
    return name;
  }
  // Grid-stride loop over [0, total) in units of `unit` items per group step.
  void grid_loop(const std::string& var, int64_t total, const std::string& start, const std::string& step) {
    grid_loop(var, w_.ilit(total), start, step);
  }
  // The same with the bound as text (a product of extents, some of them symbolic).
  void grid_loop(const std::string& var, const std::string& total, const std::string& start, const std::string& step) {
    w_.open(absl::StrCat("for (", w_.idx_t(), " ", var, " = ", start, "; ", var, " < ", total, "; ", var, " += ", step, ")"));
  }

  std::string idx_cast(const std::string& e) const { return d_.index_cast(e, w_.wide()); }

  // ------------------------------------------------------------------ elementwise
  // Whether a map walks the last kernel axis contiguously from a 16-byte aligned start, so that
  // 4 consecutive elements along it are one aligned float4.
  bool vec4_map(const ir::IndexMap& m) const {
    if (m.views.size() != 1 || m.has_mask()) return false;
    const ir::View& v = m.views[0];
    size_t last = v.shape.size() - 1;
    if (v.strides[last] != 1 || v.offset % 4 != 0) return false;
    for (size_t d = 0; d < last; ++d)
      if (v.strides[d] % 4 != 0) return false;
    return true;
  }

  // Elementwise kernels whose last axis is a multiple of 4 process 4 elements per thread, with
  // 16-byte loads and stores for every contiguous float32 buffer.
  bool elementwise_vec4() const {
    if (k_.shape.empty()) return false;
    // A symbolic last axis is a multiple of 4 at every size only when its coefficient is.
    const int last = int(k_.shape.size()) - 1;
    if ((k_.symbolic(last) ? k_.sym[size_t(last)].coef : k_.shape.back()) % 4 != 0) return false;
    if (!k_.symbolic(last) && k_.shape.back() == 0) return false;  // (an empty axis: no quads to divide by)
    int vec = 0;
    for (const ir::KNode& n : k_.nodes)
      if (n.op == Op::kLoad && DialectOps::vec4_capable(p_.buffers[n.buffer].dtype) && vec4_map(n.map)) ++vec;
    for (const ir::Store& s : k_.stores)
      if (DialectOps::vec4_capable(p_.buffers[s.buffer].dtype) && vec4_map(s.map)) ++vec;
    return vec > 0;
  }

  void elementwise_by4(KernelSource* out, int block) {
    int64_t total = shape_numel(k_.shape) / 4;
    int last = int(k_.shape.size()) - 1;
    std::string start = absl::StrCat(idx_cast(d_.group_id()), " * ", w_.ilit(block), " + ", idx_cast(d_.local_id()));
    std::string step = absl::StrCat(idx_cast(d_.num_groups()), " * ", w_.ilit(block));
    std::vector<int> axes;
    for (int a = 0; a < last; ++a) axes.push_back(a);
    const std::string quads = k_.symbolic(last) ? absl::StrCat("(", w_.extent(last), " / ", w_.ilit(4), ")")
                                                : w_.ilit(k_.shape[last] / 4);
    const std::string rows = w_.extent_product(axes);
    grid_loop("e", k_.any_symbolic() ? absl::StrCat("(", rows, " * ", quads, ")") : w_.ilit(total), start, step);
    w_.line(absl::StrCat(w_.idx_t(), " q = e % ", quads, ";"));
    w_.line(absl::StrCat(w_.idx_t(), " rest = e / ", quads, ";"));
    w_.unravel("rest", axes);
    w_.line(absl::StrCat(w_.idx_t(), " base = q * ", w_.ilit(4), ";"));
    // Vector loads at lane 0.
    w_.set_axis(last, "base");
    std::vector<std::pair<KNodeId, std::string>> vloads;
    for (size_t i = 0; i < k_.nodes.size(); ++i) {
      const ir::KNode& n = k_.nodes[i];
      if (n.op != Op::kLoad || !DialectOps::vec4_capable(p_.buffers[n.buffer].dtype) || !vec4_map(n.map)) continue;
      std::string idx = w_.element_index(n.map);
      std::string v = w_.fresh("vl");
      w_.line(absl::StrCat(d_.vec4_type(), " ", v, " = ", d_.vec4_load(n.buffer, absl::StrCat(idx, " / ", w_.ilit(4))), ";"));
      vloads.push_back({KNodeId(i), v});
    }
    std::vector<std::string> vstore_index(k_.stores.size());
    for (size_t s = 0; s < k_.stores.size(); ++s)
      if (DialectOps::vec4_capable(p_.buffers[k_.stores[s].buffer].dtype) && vec4_map(k_.stores[s].map))
        vstore_index[s] = w_.element_index(k_.stores[s].map);
    // Lane values of vector stores, declared before the per-lane blocks that assign them.
    std::vector<std::vector<std::string>> lanes(k_.stores.size());
    for (size_t s = 0; s < k_.stores.size(); ++s) {
      if (vstore_index[s].empty()) continue;
      for (int lane = 0; lane < 4; ++lane) {
        lanes[s].push_back(w_.fresh("lane"));
        w_.line(absl::StrCat(d_.type(DType::kFloat32), " ", lanes[s].back(), ";"));
      }
    }
    for (int lane = 0; lane < 4; ++lane) {
      w_.open("");
      std::string ax = w_.fresh("i");
      w_.line(absl::StrCat(w_.idx_t(), " ", ax, " = base + ", w_.ilit(lane), ";"));
      w_.set_axis(last, ax);
      for (auto& [id, v] : vloads) w_.bind(id, d_.vec4_lane(v, lane));
      for (size_t s = 0; s < k_.stores.size(); ++s) {
        if (vstore_index[s].empty()) {
          w_.store(k_.stores[s]);
          continue;
        }
        w_.line(absl::StrCat(lanes[s][lane], " = ", w_.eval(k_.stores[s].value), ";"));
      }
      w_.close();
    }
    for (size_t s = 0; s < k_.stores.size(); ++s) {
      if (vstore_index[s].empty()) continue;
      std::vector<std::string> l;
      for (const std::string& v : lanes[s]) l.push_back(v);
      w_.line(d_.vec4_store(k_.stores[s].buffer, absl::StrCat(vstore_index[s], " / ", w_.ilit(4)), l));
    }
    w_.close();
    out->grid[0] = groups_for(total, block);
    out->strategy = "elementwise: 4 elements per thread, 16-byte loads/stores";
  }

  void elementwise(KernelSource* out, int block) {
    if (elementwise_vec4()) return elementwise_by4(out, block);
    int64_t total = shape_numel(k_.shape);
    std::string start = absl::StrCat(idx_cast(d_.group_id()), " * ", w_.ilit(block), " + ", idx_cast(d_.local_id()));
    std::string step = absl::StrCat(idx_cast(d_.num_groups()), " * ", w_.ilit(block));
    grid_loop("e", w_.extent_product(w_.all_axes()), start, step);
    std::vector<int> axes;
    for (size_t a = 0; a < k_.shape.size(); ++a) axes.push_back(int(a));
    w_.unravel("e", axes);
    for (const ir::Store& s : k_.stores) w_.store(s);
    w_.close();
    out->grid[0] = groups_for(total, block);
    out->strategy = "elementwise: one thread per element";
  }

  // ------------------------------------------------------------------ reductions
  // Smallest |stride| of the inner-level loads along kernel axis `a`, or 0 when none moves.
  int64_t load_stride(int a) const {
    int64_t best = 0;
    for (const ir::KNode& n : k_.nodes) {
      if (n.op != Op::kLoad || n.map.views.empty()) continue;
      const ir::View& v = n.map.views.back();
      int64_t s = std::llabs(v.strides[a]);
      if (s != 0 && v.shape[a] > 1 && (best == 0 || s < best)) best = s;
    }
    return best;
  }

  bool use_row_strategy() const {
    int64_t R = k_.reduce_count();
    if (R < 64) return false;
    int last = reduce_axes_.back();
    int64_t s = load_stride(last);
    // Contiguous rows, or too few outputs to keep threads busy any other way (a symbolic outer
    // count is taken as many: the choice must not depend on the size).
    return s == 1 || s == 0 || (!k_.any_symbolic() && k_.outer_count() < int64_t(t_.parallelism) * 64);
  }

  // Which outer axes the fastest-varying thread index should walk: the contiguous one last.
  std::vector<int> thread_axis_order() const {
    std::vector<int> order = outer_axes_;
    int best = -1;
    int64_t best_s = 0;
    for (int a : outer_axes_) {
      int64_t s = load_stride(a);
      if (s != 0 && (best < 0 || s < best_s)) {
        best = a;
        best_s = s;
      }
    }
    if (best >= 0 && !order.empty() && order.back() != best) {
      order.erase(std::find(order.begin(), order.end(), best));
      order.push_back(best);
    }
    return order;
  }

  // Nested loops over the reduce axes, running `body` at each index.
  void reduce_loops(size_t level, const std::function<void()>& body) {
    if (level == reduce_axes_.size()) {
      body();
      return;
    }
    int a = reduce_axes_[level];
    std::string v = w_.fresh("r");
    w_.open(absl::StrCat("for (", w_.idx_t(), " ", v, " = ", w_.ilit(0), "; ", v, " < ", w_.ilit(k_.shape[a]), "; ++", v, ")"));
    w_.set_axis(a, v);
    reduce_loops(level + 1, body);
    w_.close();
    w_.clear_axis(a);
  }

  void per_output(KernelSource* out, int block) {
    int64_t O = k_.outer_count();
    std::vector<int> order = thread_axis_order();
    std::string start = absl::StrCat(idx_cast(d_.group_id()), " * ", w_.ilit(block), " + ", idx_cast(d_.local_id()));
    std::string step = absl::StrCat(idx_cast(d_.num_groups()), " * ", w_.ilit(block));
    grid_loop("o", w_.extent_product(outer_axes_), start, step);
    w_.unravel("o", order);
    for (KNodeId ph : phases_) {
      KernelWriter::Acc acc = w_.declare_acc(ph);
      reduce_loops(0, [&] {
        std::string pos = flat_reduce_index();
        w_.update_acc(ph, acc, w_.eval(k_.nodes[ph].inputs[0]), pos);
      });
      std::string r = w_.fresh("red");
      w_.line(absl::StrCat(d_.type(k_.nodes[ph].dtype), " ", r, " = ", w_.acc_result(ph, acc), ";"));
      w_.bind(ph, r);
    }
    for (const ir::Store& s : k_.stores)
      if (!w_.store_is_inner(s)) w_.store(s);
    if (fin_) finish_after_store();
    bool any_inner = false;
    for (const ir::Store& s : k_.stores) any_inner = any_inner || w_.store_is_inner(s);
    if (any_inner) reduce_loops(0, [&] {
        for (const ir::Store& s : k_.stores)
          if (w_.store_is_inner(s)) w_.store(s);
      });
    w_.close();
    out->grid[0] = groups_for(O, block);
    out->strategy = "per-output: one thread per outer index";
  }

  // Row-major position over the reduce axes at the current loop index.
  std::string flat_reduce_index() {
    std::string r;
    for (int a : reduce_axes_) {
      const std::string& var = w_.axis(a);
      r = r.empty() ? var : absl::StrCat("(", r, ") * ", w_.ilit(k_.shape[a]), " + ", var);
    }
    return r.empty() ? w_.ilit(0) : r;
  }

  // Combines the accumulators of reduction `ph` across each subgroup of `ws` lanes with xor
  // shuffles, in place: every lane ends with its subgroup's combined value in `acc`.
  void subgroup_reduce(KNodeId ph, const KernelWriter::Acc& acc, int ws) {
    DType at = w_.acc_type(ph);
    bool arg = ir::is_arg_reduce(k_.nodes[ph].op);
    for (int m = ws / 2; m > 0; m /= 2) {
      std::string ov = w_.fresh("sh"), oi = arg ? w_.fresh("shi") : "";
      w_.line(absl::StrCat(d_.type(at), " ", ov, " = ", d_.shuffle_xor(at, acc.value, m), ";"));
      if (arg) w_.line(absl::StrCat(d_.type(DType::kInt64), " ", oi, " = ", d_.shuffle_xor(DType::kInt64, acc.index, m), ";"));
      w_.combine_into(ph, acc.value, acc.index, ov, oi);
    }
  }

  // The subgroup width with which a row reduction gives each row one subgroup (several rows per
  // workgroup): rows of at most 8 elements per lane, every reduction shuffleable. Its sums need
  // shuffles only (no shared memory, no workgroup barrier). 0: a workgroup per row instead.
  int subgroup_rows() const {
    int ws = d_.warp_size(t_);
    if (ws <= 0 || !support::options().gpu_shuffle || !support::options().gpu_subgroup_rows) return 0;
    if (k_.reduce_count() > 8 * int64_t(ws)) return 0;
    for (KNodeId ph : phases_) {
      if (!d_.can_shuffle(w_.acc_type(ph))) return 0;
      if (ir::is_arg_reduce(k_.nodes[ph].op) && !d_.can_shuffle(DType::kInt64)) return 0;
    }
    return ws;
  }

  // Combines every thread's accumulator of reduction `ph` and returns a variable holding the
  // result in every thread: warp shuffles then one shared slot per warp when the dialect can,
  // else a shared-memory tree.
  std::string block_reduce(KNodeId ph, const KernelWriter::Acc& acc, const std::string& lid, int block) {
    const ir::KNode& rn = k_.nodes[ph];
    DType at = w_.acc_type(ph);
    bool arg = ir::is_arg_reduce(rn.op);
    int ws = d_.warp_size(t_);
    if (!support::options().gpu_shuffle) ws = 0;  // debugging knob (KILN_GPU_SHUFFLE=0)
    bool shuffle = ws > 0 && block % ws == 0 && block / ws <= ws && d_.can_shuffle(at) &&
                   (!arg || d_.can_shuffle(DType::kInt64));
    std::string r = w_.fresh("red");
    if (shuffle) {
      int nw = block / ws;
      std::string sv = scratch(at, nw);
      std::string si = arg ? scratch(DType::kInt64, nw, 1) : "";
      subgroup_reduce(ph, acc, ws);
      std::string lane = d_.lane_of(lid, ws), warp = d_.warp_of(lid, ws);
      w_.open(absl::StrCat("if (", lane, " == 0)"));
      w_.line(absl::StrCat(sv, "[", warp, "] = ", acc.value, ";"));
      if (arg) w_.line(absl::StrCat(si, "[", warp, "] = ", acc.index, ";"));
      w_.close();
      w_.line(d_.barrier());
      if (nw > 1) {
        // The first warp combines the per-warp partials; lanes past nw hold the identity.
        w_.open(absl::StrCat("if (", warp, " == 0)"));
        KernelWriter::Acc part = w_.declare_acc(ph);
        w_.open(absl::StrCat("if (", lane, " < ", nw, ")"));
        w_.line(absl::StrCat(part.value, " = ", sv, "[", lane, "];"));
        if (arg) w_.line(absl::StrCat(part.index, " = ", si, "[", lane, "];"));
        w_.close();
        KernelWriter::Acc saved = part;
        subgroup_reduce(ph, part, ws);
        w_.open(absl::StrCat("if (", lane, " == 0)"));
        w_.line(absl::StrCat(sv, "[0] = ", saved.value, ";"));
        if (arg) w_.line(absl::StrCat(si, "[0] = ", saved.index, ";"));
        w_.close();
        w_.close();
        w_.line(d_.barrier());
      }
      KernelWriter::Acc fin{absl::StrCat(sv, "[0]"), arg ? absl::StrCat(si, "[0]") : "", at};
      w_.line(absl::StrCat(d_.type(rn.dtype), " ", r, " = ", w_.acc_result(ph, fin), ";"));
      w_.line(d_.barrier());  // the scratch slots may be reused by the next reduction
      return r;
    }
    // Tree reduction in shared memory; every thread reads the result.
    std::string sv = scratch(at, block);
    std::string si = arg ? scratch(DType::kInt64, block, 1) : "";
    w_.line(absl::StrCat(sv, "[", lid, "] = ", acc.value, ";"));
    if (arg) w_.line(absl::StrCat(si, "[", lid, "] = ", acc.index, ";"));
    w_.line(d_.barrier());
    for (int s = block / 2; s > 0; s /= 2) {
      w_.open(absl::StrCat("if (", lid, " < ", s, ")"));
      std::string bv = absl::StrCat(sv, "[", lid, " + ", s, "]");
      std::string bi = arg ? absl::StrCat(si, "[", lid, " + ", s, "]") : "";
      w_.combine_into(ph, absl::StrCat(sv, "[", lid, "]"), arg ? absl::StrCat(si, "[", lid, "]") : "", bv, bi);
      w_.close();
      w_.line(d_.barrier());
    }
    KernelWriter::Acc fin{absl::StrCat(sv, "[0]"), arg ? absl::StrCat(si, "[0]") : "", at};
    w_.line(absl::StrCat(d_.type(rn.dtype), " ", r, " = ", w_.acc_result(ph, fin), ";"));
    w_.line(d_.barrier());
    return r;
  }

  // The inner loads the reductions read, when this thread's share of every one of them fits in
  // registers (K = ceil(R / block) values each): the row is then read from memory once and every
  // later pass (the next reduction, the stores) reads registers. Empty when it does not apply.
  std::vector<KNodeId> row_cached_loads(int64_t K) const {
    std::vector<KNodeId> loads;
    if (!support::options().gpu_row_cache) return loads;  // debugging knob (KILN_GPU_ROW_CACHE=0)
    if (K > 16) return loads;
    std::vector<bool> seen(k_.nodes.size(), false);
    std::vector<KNodeId> stack;
    for (KNodeId ph : phases_) stack.push_back(k_.nodes[ph].inputs[0]);
    while (!stack.empty()) {
      KNodeId id = stack.back();
      stack.pop_back();
      if (seen[id] || !k_.nodes[id].inner) continue;
      seen[id] = true;
      if (k_.nodes[id].op == Op::kLoad) loads.push_back(id);
      for (KNodeId in : k_.nodes[id].inputs) stack.push_back(in);
    }
    if (int64_t(loads.size()) * K > 48) loads.clear();
    std::sort(loads.begin(), loads.end());
    return loads;
  }

  // Runs `body(rv)` at the flat reduce positions first, first + step, ... (the reduce axes'
  // indices unravelled from rv).
  void strided_positions(const std::string& first, int64_t step, const std::function<void(const std::string&)>& body) {
    std::string rv = w_.fresh("rr");
    w_.open(absl::StrCat("for (", w_.idx_t(), " ", rv, " = ", first, "; ", rv, " < ", w_.ilit(k_.reduce_count()), "; ", rv,
                         " += ", w_.ilit(step), ")"));
    w_.unravel(rv, reduce_axes_);
    body(rv);
    w_.close();
  }

  // Runs `body(rv)` at each of this thread's positions rv along the row (lid + j * block): a
  // strided loop, or with cached loads K unrolled copies where load i reads register regs[i][j]
  // (`fill` first loads the registers).
  void row_positions(const std::string& lid, int64_t R, int block, const std::vector<KNodeId>& loads,
                     const std::vector<std::vector<std::string>>& regs, bool fill,
                     const std::function<void(const std::string&)>& body) {
    if (loads.empty() && !row_vec4_.empty()) {
      // Four neighbouring positions per step: the vec4 loads once at the first, each position
      // reading its lane (row_vec4_loads). (Four vectors per step, loaded before any is folded,
      // ran slower on an H100: W4a 2800 GB/s against 2976.)
      std::string rq = w_.fresh("rq");
      w_.open(absl::StrCat("for (", w_.idx_t(), " ", rq, " = ", idx_cast(lid), " * ", w_.ilit(4), "; ", rq, " < ",
                           w_.ilit(R), "; ", rq, " += ", w_.ilit(int64_t(block) * 4), ")"));
      w_.unravel(rq, reduce_axes_);
      std::vector<std::string> vecs;
      for (KNodeId id : row_vec4_) {
        vecs.push_back(w_.fresh("vl"));
        const std::string idx = w_.element_index(k_.nodes[id].map);
        w_.line(absl::StrCat(d_.vec4_type(), " ", vecs.back(), " = ",
                             d_.vec4_load(k_.nodes[id].buffer, absl::StrCat(idx, " / ", w_.ilit(4))), ";"));
      }
      for (int lane = 0; lane < 4; ++lane) {
        w_.open("");
        std::string rv = w_.fresh("rr");
        w_.line(absl::StrCat(w_.idx_t(), " ", rv, " = ", rq, " + ", w_.ilit(lane), ";"));
        w_.unravel(rv, reduce_axes_);
        for (size_t i = 0; i < row_vec4_.size(); ++i) w_.bind(row_vec4_[i], d_.vec4_lane(vecs[i], lane));
        body(rv);
        w_.close();
      }
      w_.close();
      return;
    }
    if (loads.empty()) return strided_positions(idx_cast(lid), block, body);
    const int64_t K = ceil_div(R, block);
    for (int64_t j = 0; j < K; ++j) {
      std::string rv = w_.fresh("rr");
      std::string pos = absl::StrCat(idx_cast(lid), " + ", w_.ilit(j * block));
      if ((j + 1) * block <= R) w_.open("");  // every thread has position j
      else w_.open(absl::StrCat("if (", pos, " < ", w_.ilit(R), ")"));
      w_.line(absl::StrCat(w_.idx_t(), " ", rv, " = ", pos, ";"));
      w_.unravel(rv, reduce_axes_);
      for (size_t i = 0; i < loads.size(); ++i) {
        if (fill) w_.line(absl::StrCat(regs[i][j], " = ", w_.eval(loads[i]), ";"));
        else w_.bind(loads[i], regs[i][j]);
      }
      body(rv);
      w_.close();
    }
  }

  // The inner float32 loads a workgroup-per-row reduction reads 16 bytes at a time: contiguous
  // along the last reduce axis from a 16-byte aligned start (every other stride a multiple of 4),
  // that axis a multiple of 4 long, rows long enough to give each thread several vectors. Empty:
  // the row is read an element at a time. On an H100, W4a's rows read at 98% of the copy ceiling
  // this way, 95% without (bench/gpu/reduce_probe.cu).
  std::vector<KNodeId> row_vec4_loads() const {
    std::vector<KNodeId> loads;
    if (!support::options().gpu_row_vec4 || k_.any_symbolic() || reduce_axes_.empty()) return loads;
    const int last = reduce_axes_.back();
    if (k_.shape[last] % 4 != 0 || k_.reduce_count() < 4096) return loads;
    for (size_t i = 0; i < k_.nodes.size(); ++i) {
      const ir::KNode& n = k_.nodes[i];
      if (n.op != Op::kLoad || !n.inner || ir::is_indexed_load(n) || !DialectOps::vec4_capable(p_.buffers[n.buffer].dtype) ||
          n.map.views.size() != 1 || n.map.has_mask())
        continue;
      const ir::View& v = n.map.views[0];
      bool ok = v.strides[last] == 1 && v.offset % 4 == 0;
      for (size_t d = 0; d < v.strides.size(); ++d) ok = ok && (int(d) == last || v.strides[d] % 4 == 0);
      if (ok) loads.push_back(KNodeId(i));
    }
    return loads;
  }

  // The kernel's stores once its reductions are bound: those of outer-level values by the threads
  // where `outer_guard` holds (one per output), the others at every position `each_position`
  // visits (it runs its argument there).
  void write_stores(const std::string& outer_guard,
                    const std::function<void(const std::function<void()>&)>& each_position) {
    bool any_outer = false, any_inner = false;
    for (const ir::Store& s : k_.stores) (w_.store_is_inner(s) ? any_inner : any_outer) = true;
    if (any_outer) {
      w_.open(absl::StrCat("if (", outer_guard, ")"));
      for (const ir::Store& s : k_.stores)
        if (!w_.store_is_inner(s)) w_.store(s);
      if (fin_ && !finish_by_workgroup_) finish_after_store();
      w_.close();
    }
    if (any_inner) each_position([&] {
        for (const ir::Store& s : k_.stores)
          if (w_.store_is_inner(s)) w_.store(s);
      });
  }

  int row_reduction(KernelSource* out) {
    int64_t R = k_.reduce_count(), O = k_.outer_count();
    // A subgroup per row where rows are short (subgroup_rows), else a workgroup per row.
    const int ws = subgroup_rows();
    const int rows = ws > 0 ? std::max(1, std::min(t_.max_workgroup, 256) / ws) : 1;  // per workgroup
    int block = int(std::min<int64_t>(std::max<int64_t>(pow2_at_least(ceil_div(R, 8)), 64), std::min(t_.max_workgroup, 1024)));
    if (block < 32) block = 32;
    if (ws > 0) block = ws * rows;
    const int width = ws > 0 ? ws : block;  // threads per row
    std::string lid = w_.fresh("lid");
    w_.line(absl::StrCat("int ", lid, " = ", d_.local_id(), ";"));
    std::string lane = lid, start = idx_cast(d_.group_id()), step = idx_cast(d_.num_groups());
    if (ws > 0) {
      lane = w_.fresh("lane");
      w_.line(absl::StrCat("int ", lane, " = ", d_.lane_of(lid, ws), ";"));
      start = absl::StrCat(start, " * ", w_.ilit(rows), " + ", idx_cast(d_.warp_of(lid, ws)));
      step = absl::StrCat(step, " * ", w_.ilit(rows));
    }
    grid_loop("o", w_.extent_product(outer_axes_), start, step);
    w_.unravel("o", outer_axes_);
    const int64_t K = ceil_div(R, width);
    std::vector<KNodeId> loads = row_cached_loads(K);
    std::vector<std::vector<std::string>> regs(loads.size());
    for (size_t i = 0; i < loads.size(); ++i) {
      DType t = k_.nodes[loads[i]].dtype;
      std::string base = w_.fresh("row");
      for (int64_t j = 0; j < K; ++j) {
        regs[i].push_back(absl::StrCat(base, "_", j));
        // Zero where the thread has no position j (never read: the same guard skips it).
        w_.line(absl::StrCat(d_.type(t), " ", regs[i][j], " = ", d_.literal(t, Scalar::from_int(0).cast_to(t)), ";"));
      }
    }
    if (ws == 0 && loads.empty()) row_vec4_ = row_vec4_loads();
    finish_by_workgroup_ = fin_ && ws == 0;
    if (!loads.empty()) row_positions(lane, R, width, loads, regs, true, [](const std::string&) {});
    for (KNodeId ph : phases_) {
      const ir::KNode& rn = k_.nodes[ph];
      KernelWriter::Acc acc = w_.declare_acc(ph);
      row_positions(lane, R, width, loads, regs, false,
                    [&](const std::string& rv) { w_.update_acc(ph, acc, w_.eval(rn.inputs[0]), rv); });
      std::string r;
      if (ws > 0) {
        subgroup_reduce(ph, acc, ws);
        r = w_.fresh("red");
        w_.line(absl::StrCat(d_.type(rn.dtype), " ", r, " = ", w_.acc_result(ph, acc), ";"));
      } else {
        r = block_reduce(ph, acc, lid, block);
      }
      w_.bind(ph, r);
    }
    write_stores(absl::StrCat(lane, " == 0"), [&](const std::function<void()>& at) {
      row_positions(lane, R, width, loads, regs, false, [&](const std::string&) { at(); });
    });
    if (finish_by_workgroup_) finish_by_workgroup(lid, block);
    w_.close();
    out->grid[0] = uint32_t(std::min<int64_t>(std::max<int64_t>(ceil_div(O, rows), 1), max_groups_));
    out->strategy = ws > 0 ? absl::StrCat("row reduction: one subgroup of ", ws, " per outer index, ", rows, " per workgroup")
                           : absl::StrCat("row reduction: one workgroup of ", block, " per outer index",
                                          row_vec4_.empty() ? "" : ", 16-byte loads");
    return block;
  }

  // ------------------------------------------------------------------ chained finish (chain.cc)
  // A chained kernel (ir::Kernel::finish) binds its finish's buffers and its tickets too, the
  // partials and the tickets coherent.
  std::vector<BufferParam> bindings() const;
  // The buffer of this kernel's partials (what its finish folds) and the store writing them;
  // the finish output f of the partial that store writes here (a fresh variable, declared); the
  // statement setting f's ticket back to zero.
  const ir::Store& partials_store() const;
  std::string finish_output_of_partial();
  std::string ticket_reset(const std::string& f) const;
  // After a thread has stored a partial (inside the store guard): its ticket, and where it is
  // the output's last, the finish of that output folded by this thread alone.
  void finish_after_store();
  // A workgroup per output (row_reduction): thread 0 takes the ticket, and the whole workgroup
  // folds the output's partials where it was the last.
  void finish_by_workgroup(const std::string& lid, int block);
  // In the finish's renderer: finish output `f` (index text of the host kernel), by this thread
  // alone or by the `block` threads of the workgroup (`lid`), written at the host's depth;
  // returns the text.
  std::string finish_output(const std::string& f, int depth, const std::string& lid, int block);
  std::unique_ptr<Renderer> fin_;
  bool finish_by_workgroup_ = false;

  // ------------------------------------------------------------------ column tiles (columns.cc)
  // Whether a reduction that is not a row reduction takes a workgroup per tile of 32 outputs (its
  // reduce axis split among groups of the workgroup) rather than a thread per output.
  bool use_column_tiles() const;
  int column_tiles(KernelSource* out);

  // ------------------------------------------------------------------ contractions (contraction.cc)
  int contraction(KernelSource* out);
  // One operand's share of a k slice into registers regs.reg: regs.count elements per thread
  // (regs.lid of regs.block), element e at row row.base + e / cols (variable row.var, along
  // row.axis) and column col.base + e % cols (col.var, along col.axis), regs.zero outside the
  // bounds; `other` is the axis the operand ignores.
  struct SliceRegs {
    int count, block;
    std::string lid, zero, reg;
  };
  struct SliceAxis {
    std::string var, base;
    int axis;
    std::string bound;
  };
  void operand_slice(KNodeId node, const SliceRegs& regs, const SliceAxis& row, const SliceAxis& col, int cols, int other);
  // The matrix units of Metal (SIMD-group matrices) and HIP on CDNA (MFMA): f32-accumulated
  // contractions staged through shared memory (contraction_units.cc).
  struct MatrixUnit;
  MatrixUnit matrix_unit() const;
  bool matrix_unit_applies() const;
  int contraction_matrix_unit(KernelSource* out);
  // Tensor-core variant for 16-bit float operands on CUDA (mma.sync); false when it does not apply.
  bool half_mma_applies() const;  // bf16/f16 operands (cast to f32 for the sum) on CUDA sm_80+
  bool tf32_mma_applies() const;  // f32 operands of a dot that allows TF32, on CUDA sm_80+
  int contraction_mma(KernelSource* out);
  // One k step of a warp's MI x NJ mma.sync tiles: acc[(i * NJ + j) * 4 ..] += a[i] x b[j], with
  // A fragments a[MI][4] and B fragments b[NJ][2] in registers.
  void mma_tiles(const std::string& instr, int MI, int NJ);
  // A tiled contraction's m-tile count and tile count as text: literals, or expressions of the
  // symbolic extents (m, batch) that read their params.
  std::string m_tiles_text(int64_t mt, int BM) const;
  std::string tiles_text(int64_t mt, int64_t nt, int BM, const std::vector<int>& batch_axes) const;
  // The rows a contraction's choices are planned for: kSymbolicRows when m is symbolic.
  int64_t planned_rows(int64_t M) const { return k_.symbolic(k_.contraction.m_axis) ? kSymbolicRows : M; }
  // Declares bt (the batch index, unravelled over batch_axes), m0 and n0 for the flat tile index
  // `tile` of mt x nt tiles of BM x BN per batch: batch-major, then groups of group_m m-tiles
  // walked n-tile by n-tile, so that a wave of workgroups shares its operand panels in L2.
  void grouped_tile(const std::string& tile, int64_t mt, int64_t nt, int BM, int BN, int group_m,
                    const std::vector<int>& batch_axes);
  // The epilogue of the 64-row half h of a BM x BN tile at (m0, n0) whose accumulators are staged:
  // `threads` threads (`lid`) take consecutive outputs, each reading its accumulator as `value`
  // (an expression of e, its position in the half), and apply the kernel's stores.
  void half_epilogue(int BN, int threads, const std::string& value);
  // Whether node `id` is a plain load of a 2- or 4-byte buffer of its own dtype, contiguous along
  // `vec_axis` from a 16-byte aligned start with every other stride a multiple of 16 bytes, so
  // that 16 bytes along that axis (8 or 4 elements) are one aligned copy.
  bool copyable16(KNodeId id, int vec_axis) const;
  // Whether operand x (under its cast) reads as whole 16-byte pieces along `axis`: copyable16
  // there, and that axis a whole number of pieces long.
  bool in_pieces_along(KNodeId x, int axis) const;
  // Both operands read in 16-byte pieces, each along k or along its own m / n axis (the staged
  // tensor-core kernels: cp.async on CUDA, cooperative matrices on Vulkan).
  bool operands_in_pieces() const;
  // The pipelined mma.sync variant (contraction_sm80.cc): bf16/f16 operands, or float32 ones a dot
  // allows TF32, that cp.async can copy 16 bytes at a time go through a multi-stage shared-memory
  // ring and ldmatrix.
  bool sm80_applies() const;
  int contraction_sm80(KernelSource* out);
  // The Vulkan tensor-core variant (contraction_coop.cc): f16 operands 16-byte pieces can be read
  // from, multiplied by subgroup-scope cooperative matrices (t_.coop_m/n/k).
  bool coop_applies() const;
  int contraction_coop(KernelSource* out);
  // The dtype of both operands under their casts to f32 when they share one (f16/bf16
  // contractions accumulate in f32 that way); kFloat32 otherwise.
  DType half_operands() const;
  bool coop_ = false;
  // Hopper variant (contraction_sm90.cc): TMA loads into 128B-swizzled stages, wgmma, warp
  // specialization and a persistent grouped tile order; `why` says why it does not apply.
  bool sm90_applies(std::string* why) const;
  // The load a tensor-core operand reads: under the cast to f32 (16-bit), or itself (TF32).
  KNodeId operand(KNodeId x) const { return k_.nodes[x].op == Op::kCast ? k_.nodes[x].inputs[0] : x; }
  int contraction_sm90(KernelSource* out);
  void stream_k_fixup(int BN, int64_t KB);  // contraction_sm90's stream-K hand-over
  std::vector<std::string> contraction_sm90_candidates(std::string* shape_class) const;
  std::string sm90_kernel_open(const std::string& name) const;
  // Fused attention (attention_cuda.cc): the kernel's attention node (-1 when none), its body.
  KNodeId attention_node() const;
  absl::StatusOr<int> attention(KernelSource* out);
  // The opening of a kernel with dynamic shared memory (`kiln_dsmem`), `helpers_` before it and
  // `dsmem_threads_` as its launch bound (the attention kernels, the cp.async contraction).
  std::string dsmem_kernel_open(const std::string& name) const;
  void attention_epilogue(KNodeId an, const std::string& acc);
  // Hopper variant (attention_sm90.cc): q, k and v through TMA, S = QK^T and O += PV with wgmma,
  // a producer warpgroup and two consumer warpgroups; `why` says why it does not apply.
  bool attention_sm90_applies(std::string* why) const;
  int attention_sm90(KernelSource* out);
  std::vector<std::string> attention_sm90_candidates(std::string* shape_class) const;
  // Ragged segments (segment.cc): the kernel's one segment_reduce node (-1: none or several);
  // how its segments map to threads ("thread": each output walks its segment alone, the
  // elementwise strategy; "block": a workgroup per segment; "queue": warps pull batches of
  // segments from a work queue in a module global, CUDA only); the two cooperative bodies.
  KNodeId segment_node() const;
  std::string segment_strategy() const;
  bool segment_cooperative(int64_t* segments, int64_t* width) const;
  int segment_block(KernelSource* out);
  int segment_queue(KernelSource* out);
  KernelWriter::Segment segment_range(KNodeId seg);
  void segment_warp(KNodeId seg, const KernelWriter::Segment& b, int64_t width);
  void segment_alone(KNodeId seg, const KernelWriter::Segment& b, int64_t width);
  void segment_columns(KNodeId seg, const KernelWriter::Segment& b, int64_t width, const std::string& lead,
                       const std::string& first, int64_t step, const std::function<std::string(KernelWriter::Acc&)>& reduce);
  std::string name_;      // the kernel's entry point
  std::string prologue_;  // text before the kernel (a work queue's module global)
  std::string helpers_;
  int dsmem_threads_ = 0;
  bool sm90_ = false;
  int sm90_maps_ = 0;
  int sm90_cluster_ = 1;  // CTAs per thread-block cluster of the sm_90a kernel

  const ir::Program& p_;
  const ir::Kernel& k_;
  const DialectOps& d_;
  const ir::TargetInfo& t_;
  KernelWriter w_;
  std::vector<int> outer_axes_, reduce_axes_;
  std::vector<KNodeId> phases_;
  std::vector<KNodeId> row_vec4_;  // row_reduction: loads read 16 bytes at a time (row_vec4_loads)
  int64_t max_groups_;
  std::vector<std::tuple<std::string, std::string, int64_t>> shared_;
  std::map<std::string, std::string> scratch_;
};

}  // namespace render_detail
}  // namespace kiln::codegen::gpu

// Writes the expression part of a kernel in any C-family dialect: index maps, loads, stores,
// elementwise ops, casts, random numbers, and reduction accumulators. The thread-mapping
// strategies (strategies.cc) drive it.
#pragma once

#include <functional>
#include <string>
#include <unordered_map>
#include <vector>

#include "codegen/c_family/dialect.h"
#include "ir/program.h"

namespace kiln::codegen::gpu {

class KernelWriter {
 public:
  KernelWriter(const ir::Program& p, const ir::Kernel& k, const DialectOps& d);

  const ir::Kernel& kernel() const { return k_; }
  const DialectOps& dialect() const { return d_; }
  bool wide() const { return wide_; }
  std::string idx_t() const { return d_.index_type(wide_); }
  std::string ilit(int64_t v) const { return d_.index_literal(v, wide_); }

  // --- text output
  void line(const std::string& s);
  void open(const std::string& s);  // "s {" and indent
  void close();                     // "}" and dedent
  std::string fresh(const char* prefix);
  const std::string& body() const { return body_; }
  // A chained kernel's finish is written by a writer of its own whose text goes into the
  // kernel's (Renderer::finish_output): its fresh names carry `prefix`, its lines start at the
  // host writer's depth, and `raw` appends such text as it stands.
  void set_prefix(const std::string& prefix) { prefix_ = prefix; }
  const std::string& prefix() const { return prefix_; }
  int depth() const { return indent_; }
  void set_depth(int d) { indent_ = d; }
  void raw(const std::string& text) { body_ += text; }

  // --- loop context
  void set_axis(int axis, const std::string& var) { axis_[axis] = var; }
  void clear_axis(int axis) { axis_[axis].clear(); }
  const std::string& axis(int a) const { return axis_[a]; }
  // Declares per-axis index variables unravelling `flat` over `axes` (row-major over them, the
  // last listed axis fastest).
  void unravel(const std::string& flat, const std::vector<int>& axes);
  // The extent of kernel axis `a` as index-type text: a literal, or for a symbolic axis
  // (ir::SymExtent) its param times its coefficient, so the text holds for every size.
  std::string extent(int a) const;
  // The product of the extents of `axes` (a literal when none is symbolic).
  std::string extent_product(const std::vector<int>& axes) const;
  // All axes of the kernel, in order (for extent_product).
  std::vector<int> all_axes() const;
  // Memo scopes: values computed inside a C block stay inside it.
  void push_scope() { scopes_.emplace_back(); }
  void pop_scope() { scopes_.pop_back(); }
  // Makes node `id` read `expr` (a reduction result, a shared broadcast) in the current scope.
  void bind(ir::KNodeId id, const std::string& expr) { scopes_.back()[id] = expr; }

  // --- expressions
  std::string eval(ir::KNodeId id);
  // The element index a map addresses at the current loop index (emits its arithmetic); only
  // for maps without masks.
  std::string element_index(const ir::IndexMap& m) { return address(m).offset; }
  void store(const ir::Store& s);
  // Whether a store writes at every reduce index (inner) or once per outer index.
  bool store_is_inner(const ir::Store& s) const;

  // --- reductions: accumulator variables for reduce node `id`
  struct Acc {
    std::string value, index;  // index: argmax/argmin position, else empty
    DType type;
  };
  Acc declare_acc(ir::KNodeId id);
  // acc <- combine(acc, value at the current loop index); `pos` is the position along the
  // reduce axes (argmax/argmin).
  void update_acc(ir::KNodeId id, const Acc& a, const std::string& value, const std::string& pos);
  // Text of combine((av, ai), (bv, bi)) assignments into (av, ai).
  void combine_into(ir::KNodeId id, const std::string& av, const std::string& ai, const std::string& bv,
                    const std::string& bi);
  // --- segment_reduce node `id` (ir/program.h): its row range [lo, hi) as i64 variables (the
  // offsets clamped); the node's value operand at row `row` (an i64 expression), bound inside the
  // caller's scope; and the whole fold walked by this one thread.
  struct Segment {
    std::string lo, hi;
  };
  Segment segment_bounds(ir::KNodeId id);
  std::string segment_row(ir::KNodeId id, const std::string& row);
  std::string segment_fold(ir::KNodeId id);
  // The reduction's result value from its accumulator.
  std::string acc_result(ir::KNodeId id, const Acc& a) const;
  DType acc_type(ir::KNodeId id) const;

  // Buffers read and written by the kernel.
  std::vector<BufferParam> params() const;
  // Param slots the kernel reads (ir/params.h), ascending; and where GLSL finds them in the table.
  std::vector<int> scalar_params() const;
  int param_base() const { return int(p_.buffers.size()); }
  Features features() const;

 private:
  struct Addr {
    std::string offset, valid;  // valid empty = always
  };
  // An indexed access (see ir::KNode) passes its index value and ints {split, axis, extent}.
  Addr address(const ir::IndexMap& m, ir::KNodeId index = -1, const std::vector<int64_t>* at = nullptr);
  // A view's flat index as c0 + sum of coef * v, each v in [0, ext) wherever every mask before
  // it held (elsewhere its value is never used). unflatten splits it where ir::split_flat allows
  // (no division), else divides.
  struct Term {
    int64_t coef;
    std::string v;
    int64_t ext;
  };
  std::string sum_of(const std::vector<Term>& terms, int64_t c0);
  void unflatten(const std::vector<Term>& terms, int64_t c0, const Shape& s, size_t lo, size_t hi,
                 std::vector<std::string>* out);
  std::string lookup(ir::KNodeId id) const;
  std::string eval_uncached(ir::KNodeId id);
  std::string rng_bits(const ir::KNode& n, const std::string& counter);

  const ir::Program& p_;
  const ir::Kernel& k_;
  const DialectOps& d_;
  bool wide_;
  std::string body_;
  int indent_ = 1;
  int counter_ = 0;
  std::string prefix_;
  std::vector<std::string> axis_;
  std::vector<std::unordered_map<ir::KNodeId, std::string>> scopes_;
};

}  // namespace kiln::codegen::gpu

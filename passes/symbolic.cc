#include "passes/symbolic.h"

#include "absl/strings/str_cat.h"

namespace kiln::passes {
namespace {

// Whether two Programs have the same kernels as far as marking goes: count, ranks, reduce axes.
std::string same_kernels(const ir::Program& a, const ir::Program& b) {
  if (a.kernels.size() != b.kernels.size())
    return absl::StrCat(a.kernels.size(), " kernels at one size and ", b.kernels.size(), " at another");
  for (size_t k = 0; k < a.kernels.size(); ++k)
    if (a.kernels[k].shape.size() != b.kernels[k].shape.size() || a.kernels[k].reduce != b.kernels[k].reduce)
      return absl::StrCat("kernel ", k, " has other axes at another size");
  return "";
}

}  // namespace

absl::StatusOr<SymbolicTemplate> derive_template(const ir::Program& base, const std::vector<int64_t>& base_values,
                                                 const std::vector<ir::Program>& probes,
                                                 const std::vector<int64_t>& probe_values) {
  const size_t S = base_values.size();
  if (probes.size() != S || probe_values.size() != S)
    return absl::InvalidArgumentError("symbolic template: one probe per symbol");
  SymbolicTemplate t;
  t.symbols = int(S);
  t.axes.resize(base.kernels.size());
  for (size_t k = 0; k < base.kernels.size(); ++k) t.axes[k].assign(base.kernels[k].shape.size(), {-1, 0});
  for (size_t s = 0; s < S; ++s) {
    if (std::string why = same_kernels(base, probes[s]); !why.empty())
      return absl::FailedPreconditionError(absl::StrCat("the graph plans differently at different sizes: ", why));
    const int64_t dv = probe_values[s] - base_values[s];
    if (dv == 0 || base_values[s] <= 0) return absl::InvalidArgumentError("symbolic template: probes of equal sizes");
    for (size_t k = 0; k < base.kernels.size(); ++k)
      for (size_t a = 0; a < base.kernels[k].shape.size(); ++a) {
        const int64_t e0 = base.kernels[k].shape[a], e1 = probes[s].kernels[k].shape[a];
        if (e0 == e1) continue;
        auto& slot = t.axes[k][a];
        // c * n at both sizes, and scaling with no other symbol.
        const bool linear = (e1 - e0) % dv == 0 && (e1 - e0) / dv > 0 && e0 == (e1 - e0) / dv * base_values[s];
        slot = linear && slot.first == -1 ? std::pair<int, int64_t>{int(s), (e1 - e0) / dv} : std::pair<int, int64_t>{-2, 0};
      }
  }
  for (auto& k : t.axes)
    for (auto& a : k)
      if (a.first < 0) a = {-1, 0};
  if (t.marked() == 0)
    return absl::FailedPreconditionError("no kernel axis scales with the symbolic dimensions");
  return t;
}

int apply_template(const SymbolicTemplate& t, const std::vector<int64_t>& values, ir::Program* p) {
  const int first = int(p->params.size());
  for (int s = 0; s < t.symbols; ++s) p->params.push_back({DType::kInt64, false});
  if (t.axes.size() != p->kernels.size()) return first;
  for (size_t k = 0; k < p->kernels.size(); ++k)
    if (t.axes[k].size() != p->kernels[k].shape.size()) return first;
  for (size_t k = 0; k < p->kernels.size(); ++k) {
    ir::Kernel& kern = p->kernels[k];
    for (size_t a = 0; a < kern.shape.size(); ++a) {
      const auto [s, c] = t.axes[k][a];
      if (s < 0 || kern.reduce[a] || kern.shape[a] != c * values[size_t(s)]) continue;
      if (kern.sym.empty()) kern.sym.resize(kern.shape.size());
      kern.sym[a] = {first + s, c};
    }
  }
  return first;
}

}  // namespace kiln::passes

// The shared C-family GPU renderer: maps each kernel's iteration space onto threads and writes
// it in the requested dialect.
//
// Strategies:
//   elementwise     one thread per element, grid-stride loop over the flattened space
//   row reduction   one workgroup per outer index when the reduced axis is contiguous in memory:
//                   threads stride over the row, partial results meet in a shared-memory tree,
//                   every thread sees each finished reduction (softmax/layer_norm in one kernel)
//   per-output      one thread per outer index looping over the reduce axes, with the thread
//                   index running along the outer axis that is contiguous (coalesced columns)
//   segments        a segment_reduce's rows walked by one thread per output, a workgroup per
//                   segment, or warps pulling segments from a work queue (segment.cc)
//   contraction     64x64 output tiles per workgroup, 16-deep k slices staged in shared memory,
//                   4x4 outputs per thread, the elementwise epilogue applied per output
#include <algorithm>
#include <cstdlib>
#include <functional>
#include <map>
#include <tuple>
#include <unordered_map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "codegen/c_family/dialect.h"
#include "codegen/c_family/kernel_writer.h"
#include "codegen/c_family/renderer.h"

namespace kiln::codegen::gpu {

std::unique_ptr<DialectOps> make_cuda_dialect(bool hip);
std::unique_ptr<DialectOps> make_glsl_dialect();
std::unique_ptr<DialectOps> make_msl_dialect();

std::unique_ptr<DialectOps> make_dialect(Dialect d) {
  switch (d) {
    case Dialect::kCuda: return make_cuda_dialect(false);
    case Dialect::kHip: return make_cuda_dialect(true);
    case Dialect::kGlsl: return make_glsl_dialect();
    case Dialect::kMsl: return make_msl_dialect();
  }
  return nullptr;
}

// ---------------------------------------------------------------- DialectOps: storage, shared
// by every dialect (dialect.h lists the primitives each dialect spells).

namespace {
bool is_half(DType t) { return t == DType::kFloat16 || t == DType::kBFloat16; }
}  // namespace

std::string DialectOps::storage_type(DType t) const {
  if (t == DType::kBool) return type(DType::kUInt8);
  if (is_half(t)) return half_word_type();
  return type(t);
}

std::string DialectOps::from_storage(DType t, const std::string& e) const {
  switch (t) {
    case DType::kBool: return cast(DType::kUInt8, DType::kBool, e);
    case DType::kFloat16: return absl::StrCat("kiln_h2f(", e, ")");
    case DType::kBFloat16: return absl::StrCat("kiln_bf2f(", e, ")");
    default: return e;
  }
}

std::string DialectOps::to_storage(DType t, const std::string& v) const {
  switch (t) {
    case DType::kBool: {
      const DType b = DType::kUInt8;
      return select(v, literal(b, Scalar::from_int(1).cast_to(b)), literal(b, Scalar::from_int(0).cast_to(b)));
    }
    case DType::kFloat16: return absl::StrCat("kiln_f2h(", v, ")");
    case DType::kBFloat16: return absl::StrCat("kiln_f2bf(", v, ")");
    default: return v;
  }
}

std::string DialectOps::round_to(DType t, const std::string& v) const {
  // Through the 16-bit word where the word type always exists, else by 32-bit helpers.
  if (!half_words_optional()) return from_storage(t, to_storage(t, v));
  return absl::StrCat(t == DType::kFloat16 ? "kiln_round_h(" : "kiln_round_bf(", v, ")");
}

std::string DialectOps::load(int buf, DType dt, const std::string& index) const {
  return from_storage(dt, element(buffer_name(buf), index));
}

std::string DialectOps::store(int buf, DType dt, const std::string& index, const std::string& v) const {
  return absl::StrCat(element(buffer_name(buf), index), " = ", to_storage(dt, v), ";");
}

std::string DialectOps::bf16_round_portable_body() const {
  const std::string u = u32();
  return absl::StrCat("  ", u, " u = ", float_to_bits("f"), ";\n",  // NaNs stay NaN (quiet bit set)
                      "  if ((u & 0x7fffffffu) > 0x7f800000u) return ", bits_to_float("u | 0x400000u"), ";\n",
                      "  u += 0x7fffu + ((u >> 16) & 1u);\n",  //
                      "  return ", bits_to_float("u & 0xffff0000u"), ";\n");
}

std::string DialectOps::float_rounding_helpers() const {
  const std::string q = helper_prefix(), f = type(DType::kFloat32);
  std::string s;
  if (half_words_optional()) absl::StrAppend(&s, q, f, " kiln_round_h(", f, " f) { ", f16_round_body(), " }\n");
  absl::StrAppend(&s, q, f, " kiln_round_bf(", f, " f) {\n", bf16_round_body(), "}\n");
  return s;
}

std::string DialectOps::storage_word_helpers() const {
  const std::string q = helper_prefix(), f = type(DType::kFloat32), w = half_word_type();
  return absl::StrCat(
      q, f, " kiln_h2f(", w, " x) { ", f16_to_f32_body(), " }\n",  //
      q, w, " kiln_f2h(", f, " f) { ", f32_to_f16_body(), " }\n",  //
      q, f, " kiln_bf2f(", w, " x) { return ", bits_to_float(convert(u32(), "x") + " << 16"), "; }\n",
      q, w, " kiln_f2bf(", f, " f) { return ", convert(w, float_to_bits("kiln_round_bf(f)") + " >> 16"), "; }\n");
}

std::string DialectOps::saturating_casts(std::initializer_list<DType> to, DType from) const {
  std::string s;
  for (DType t : to) {
    const std::string ty = type(t);
    auto lit = [&](int64_t x) { return literal(t, Scalar::from_int(x)); };
    auto bound = [&](int64_t x) { return literal(from, Scalar::from_double(double(x))); };
    absl::StrAppend(&s, helper_prefix(), ty, " kiln_sat_", dtype_name(t), "(", type(from), " v) { return ", is_nan(from, "v"), " ? ",
                    lit(0), " : v >= ", bound(int_highest(t)), " ? ", lit(int_highest(t)), " : v <= ", bound(int_lowest(t)), " ? ",
                    lit(int_lowest(t)), " : ", convert(ty, convert(is_signed(t) ? type(DType::kInt32) : u32(), "v")), "; }\n");
  }
  return s;
}

std::string DialectOps::vec4_load(int buf, const std::string& index) const {
  return element(vec4_view(buf, /*write=*/false), index);
}

std::string DialectOps::vec4_store(int buf, const std::string& index, const std::vector<std::string>& l) const {
  return absl::StrCat(element(vec4_view(buf, /*write=*/true), index), " = ", vec4_ctor(), "(", absl::StrJoin(l, ", "),
                      ");");
}

// ---------------------------------------------------------------- rendering

using render_detail::Renderer;

absl::StatusOr<RenderedProgram> render(const ir::Program& p, Dialect d, const ir::TargetInfo& t) {
  std::unique_ptr<DialectOps> ops = make_dialect(d);
  if (!ops) return absl::UnimplementedError("render: this dialect has no renderer yet");
  RenderedProgram out;
  Features all;
  std::vector<std::string> bodies;
  for (size_t i = 0; i < p.kernels.size(); ++i) {
    const ir::Kernel& k = p.kernels[i];
    Renderer r(p, k, *ops, t);
    std::string name = absl::StrCat("kiln_", k.name);
    auto ks = r.run(name);
    if (!ks.ok()) return ks.status();
    Features f = r.features();
    all.f64 = all.f64 || f.f64;
    all.i64 = all.i64 || f.i64;
    all.i8 = all.i8 || f.i8;
    all.f16_storage = all.f16_storage || f.f16_storage;
    all.storage.insert(f.storage.begin(), f.storage.end());
    out.arch_specific = out.arch_specific || r.arch_specific();
    if (d == Dialect::kGlsl) ks->source = ops->preamble(f) + ks->source;
    out.kernels.push_back(*std::move(ks));
  }
  {
    const bool module = d != Dialect::kGlsl;  // CUDA, HIP, MSL: one translation unit
    if (module) out.module_source = ops->preamble(all);
    // A kernel whose text is an earlier one's but for its name and bindings calls that function
    // (GLSL: dispatches that shader).
    std::unordered_map<std::string, int> families;
    for (size_t i = 0; i < out.kernels.size(); ++i) {
      KernelSource& k = out.kernels[i];
      if (auto [at, fresh] = families.emplace(k.own_state ? k.name : canonical_text(k.source, k), int(i)); !fresh) {
        k.twin = at->second;
        k.source.clear();
        continue;
      }
      if (!module) continue;
      out.module_source += "\n";
      k.offset = out.module_source.size();
      out.module_source += k.source;
      k.source.clear();
    }
  }
  return out;
}

std::vector<std::string> tuning_candidates(const ir::Program& p, int k, Dialect d, const ir::TargetInfo& t,
                                           std::string* shape_class) {
  std::unique_ptr<DialectOps> ops = make_dialect(d);
  if (!ops || k < 0 || size_t(k) >= p.kernels.size()) return {};
  return Renderer(p, p.kernels[size_t(k)], *ops, t).tuning_candidates(shape_class);
}

namespace render_detail {

std::vector<std::string> Renderer::tuning_candidates(std::string* shape_class) const {
  if (attention_node() >= 0) return attention_sm90_candidates(shape_class);
  if (k_.contraction.reduce >= 0) return contraction_sm90_candidates(shape_class);
  return {};
}

}  // namespace render_detail
}  // namespace kiln::codegen::gpu

// Contractions on the matrix units of Apple GPUs (MSL's SIMD-group matrices) and AMD CDNA GPUs
// (MFMA instructions, through the compiler's builtins), from one skeleton:
//
//   - 64 x 64 output tiles of 4 warps (SIMD-groups / wavefronts) as 2 x 2, each holding its
//     32 x 32 outputs in accumulator fragments.
//   - k slices of 16: each thread reads its share of both operands' slices (any layout the SIMT
//     kernel reads: the operand expressions as float32, zero outside the bounds) into registers
//     and stores them row-major into shared memory (the lhs as m rows of k, the rhs as k rows of
//     n); after a barrier each warp takes its fragments from there and multiply-accumulates, and
//     a second barrier frees the slice.
//   - The epilogue: the fragments go into a 64 x 64 float tile in shared memory and every thread
//     applies the fused elementwise epilogue to consecutive outputs (coalesced stores), as the
//     other staged kernels do.
//
// What differs is the matrix unit (MatrixUnit below):
//
//   | | Metal (simdgroup_matrix) | HIP on CDNA (MFMA) |
//   | --- | --- | --- |
//   | warp | SIMD-group of 32; 128 threads | wavefront of 64; 256 threads |
//   | fragment | 8 x 8 float, loaded from threadgroup memory | 16 x 16 x 16, a lane holding 4 values of one row of A (one column of B) |
//   | operands | float32 (any float dtype, exact) | f16 (v_mfma_f32_16x16x16f16), bf16 on gfx90a and later (..._16x16x16bf16_1k) |
//   | a warp's 32 x 32 | 16 simdgroup_float8x8 | 4 float4 (lane l: column l % 16, rows 4 (l / 16) ..+3) |
//
// Written from the MSL specification and AMD's MFMA register layouts, checked by clang against
// tests/metal/shim (MSL) and compiled by comgr for gfx90a / gfx908 (HIP); neither has run on its
// GPU yet.
#include "codegen/c_family/renderer.h"

namespace kiln::codegen::gpu::render_detail {

namespace {

constexpr int kTile = 64, kBK = 16, kGroupM = 8;

// Whether `t` is an AMD CDNA GPU (MI100 gfx908, MI200 gfx90a, MI300 gfx94x): the ones with MFMA.
bool cdna(const ir::TargetInfo& t) {
  return t.name == "hip" && (t.cpu_name == "gfx908" || t.cpu_name == "gfx90a" || t.cpu_name.rfind("gfx94", 0) == 0);
}

}  // namespace

// The parts of the skeleton a matrix unit writes.
struct Renderer::MatrixUnit {
  int ws;         // threads per warp
  std::string what;  // for the strategy
  // Declarations before the tile loop, the accumulators' reset, one k slice's multiply-adds
  // (the slices in shared arrays `as` (m rows of kBK) and `bs` (k rows of kTile); the warp's
  // quadrant at rows wm * 32, columns wn * 32), and the accumulators into the float tile `cs`.
  std::function<void(KernelWriter&)> declare, reset;
  std::function<void(KernelWriter&, const std::string& as, const std::string& bs)> multiply;
  std::function<void(KernelWriter&, const std::string& cs)> store;
};

Renderer::MatrixUnit Renderer::matrix_unit() const {
  MatrixUnit u;
  const std::string T = std::to_string(kTile), BK = std::to_string(kBK);
  if (d_.kind() == Dialect::kMsl) {
    u.ws = 32;
    u.what = "8x8 float SIMD-group matrices";
    u.declare = [](KernelWriter& w) { w.line("simdgroup_float8x8 acc[16];"); };
    u.reset = [](KernelWriter& w) { w.line("for (int q = 0; q < 16; ++q) acc[q] = simdgroup_float8x8(0.0f);"); };
    u.multiply = [T, BK](KernelWriter& w, const std::string& as, const std::string& bs) {
      w.open("for (int kk = 0; kk < " + BK + "; kk += 8)");
      w.line("simdgroup_float8x8 fa[4], fb[4];");
      w.line("for (int i = 0; i < 4; ++i) simdgroup_load(fa[i], &" + as + "[(wm * 32 + i * 8) * " + BK + " + kk], " + BK + ");");
      w.line("for (int j = 0; j < 4; ++j) simdgroup_load(fb[j], &" + bs + "[kk * " + T + " + wn * 32 + j * 8], " + T + ");");
      w.line("for (int i = 0; i < 4; ++i) for (int j = 0; j < 4; ++j) simdgroup_multiply_accumulate(acc[i * 4 + j], fa[i], "
             "fb[j], acc[i * 4 + j]);");
      w.close();
    };
    u.store = [T](KernelWriter& w, const std::string& cs) {
      w.line("for (int i = 0; i < 4; ++i) for (int j = 0; j < 4; ++j) simdgroup_store(acc[i * 4 + j], &" + cs +
             "[(wm * 32 + i * 8) * " + T + " + wn * 32 + j * 8], " + T + ");");
    };
    return u;
  }
  // MFMA: A[i][k] of a 16 x 16 fragment is item k % 4 of lane i + 16 (k / 4), B[k][j] item k % 4
  // of lane j + 16 (k / 4), D[i][j] item i % 4 of lane j + 16 (i / 4).
  const bool bf = half_operands() == DType::kBFloat16;
  u.ws = 64;
  u.what = bf ? "MFMA 16x16x16 bf16 (f32 accumulators)" : "MFMA 16x16x16 f16 (f32 accumulators)";
  const std::string vec = bf ? "kiln_mfma_s4" : "kiln_mfma_h4";
  const std::string to = bf ? "(short)kiln_f2bf(" : "(_Float16)(";  // a staged float back to its exact 16-bit value
  const std::string op = bf ? "__builtin_amdgcn_mfma_f32_16x16x16bf16_1k" : "__builtin_amdgcn_mfma_f32_16x16x16f16";
  u.declare = [](KernelWriter& w) {
    w.line("int lane = lid % 64, lr = lane % 16, lk = (lane / 16) * 4;");
    w.line("kiln_mfma_f4 acc[4];");
  };
  u.reset = [](KernelWriter& w) { w.line("for (int q = 0; q < 4; ++q) acc[q] = (kiln_mfma_f4){0.0f, 0.0f, 0.0f, 0.0f};"); };
  u.multiply = [T, BK, vec, to, op](KernelWriter& w, const std::string& as, const std::string& bs) {
    w.line(vec + " fa[2], fb[2];");
    w.open("for (int q = 0; q < 4; ++q)");
    w.line("for (int i = 0; i < 2; ++i) fa[i][q] = " + to + as + "[(wm * 32 + i * 16 + lr) * " + BK + " + lk + q]);");
    w.line("for (int j = 0; j < 2; ++j) fb[j][q] = " + to + bs + "[(lk + q) * " + T + " + wn * 32 + j * 16 + lr]);");
    w.close();
    w.line("for (int i = 0; i < 2; ++i) for (int j = 0; j < 2; ++j) acc[i * 2 + j] = " + op +
           "(fa[i], fb[j], acc[i * 2 + j], 0, 0, 0);");
  };
  u.store = [T](KernelWriter& w, const std::string& cs) {
    w.line("for (int i = 0; i < 2; ++i) for (int j = 0; j < 2; ++j) for (int q = 0; q < 4; ++q) " + cs + "[(wm * 32 + i * 16 + lk + q) * " +
           T + " + wn * 32 + j * 16 + lr] = acc[i * 2 + j][q];");
  };
  return u;
}

bool Renderer::matrix_unit_applies() const {
  if (w_.acc_type(k_.contraction.reduce) != DType::kFloat32) return false;
  if (d_.kind() == Dialect::kMsl) {
    if (t_.subgroup_size != 32 || t_.max_workgroup < 128) return false;
  } else if (d_.kind() == Dialect::kHip && cdna(t_)) {
    const DType h = half_operands();
    if (t_.subgroup_size != 64 || t_.max_workgroup < 256) return false;
    if (h != DType::kFloat16 && !(h == DType::kBFloat16 && t_.cpu_name != "gfx908")) return false;  // (gfx908: no bf16_1k)
  } else {
    return false;
  }
  for (const ir::Store& s : k_.stores)
    if (w_.store_is_inner(s)) return false;
  return int64_t(2 * kTile * kBK + kTile * kTile) * 4 <= t_.shared_memory;  // both slices and the epilogue tile
}

int Renderer::contraction_matrix_unit(KernelSource* out) {
  const ir::Contraction& c = k_.contraction;
  const int64_t M = k_.shape[c.m_axis], N = k_.shape[c.n_axis];
  int64_t batch = 1;
  const std::vector<int> batch_axes = batch_axes_of(k_, &batch);
  const int64_t mt = ceil_div(M, kTile), nt = ceil_div(N, kTile), tiles = batch * mt * nt;
  const MatrixUnit u = matrix_unit();
  const int threads = 4 * u.ws, per = kTile * kBK / threads;  // slice elements per thread, each operand
  const std::string Mx = w_.extent(c.m_axis), Nx = w_.extent(c.n_axis), Kx = w_.extent(c.k_axis);
  const std::string as = shared_array(DType::kFloat32, kTile * kBK), bs = shared_array(DType::kFloat32, kBK * kTile),
                    cs = shared_array(DType::kFloat32, kTile * kTile);
  const std::string zero = d_.literal(DType::kFloat32, Scalar::from_int(0).cast_to(DType::kFloat32));
  w_.line(absl::StrCat("int lid = ", d_.local_id(), ";"));
  w_.line(absl::StrCat("int warp = ", d_.warp_of("lid", u.ws), ", wm = warp / 2, wn = warp % 2;"));
  u.declare(w_);
  w_.line(absl::StrCat("float ra[", per, "], rb[", per, "];"));
  grid_loop("tile", tiles_text(mt, nt, kTile, batch_axes), idx_cast(d_.group_id()), idx_cast(d_.num_groups()));
  grouped_tile("tile", mt, nt, kTile, kTile, kGroupM, batch_axes);
  u.reset(w_);
  w_.open(absl::StrCat("for (", w_.idx_t(), " k0 = ", w_.ilit(0), "; k0 < ", Kx, "; k0 += ", w_.ilit(kBK), ")"));
  // The lhs slice with k fastest (m rows of kBK), the rhs with n fastest (k rows of kTile): each
  // register r of thread lid is element lid + r * threads of its slice, stored there as is.
  operand_slice(c.lhs, {per, threads, "lid", zero, "ra"}, {"am", "m0", c.m_axis, Mx}, {"ak", "k0", c.k_axis, Kx}, kBK, c.n_axis);
  operand_slice(c.rhs, {per, threads, "lid", zero, "rb"}, {"bk", "k0", c.k_axis, Kx}, {"bn", "n0", c.n_axis, Nx}, kTile, c.m_axis);
  w_.clear_axis(c.k_axis);
  w_.line(absl::StrCat("for (int r = 0; r < ", per, "; ++r) { ", as, "[lid + r * ", threads, "] = ra[r]; ", bs, "[lid + r * ",
                       threads, "] = rb[r]; }"));
  w_.line(d_.barrier());
  u.multiply(w_, as, bs);
  w_.line(d_.barrier());
  w_.close();
  u.store(w_, cs);
  w_.line(d_.barrier());
  w_.open("");  // the tile is one 64-row half
  w_.line("const int h = 0;");
  half_epilogue(kTile, threads, absl::StrCat(cs, "[e]"));
  w_.close();
  w_.line(d_.barrier());
  w_.close();
  out->grid[0] = groups_for(tiles, 1);
  out->strategy = absl::StrCat("contraction matrix units: ", u.what, " on ", kTile, "x", kTile, " tiles of 4 warps of ", u.ws,
                               " (32x32 each), ", kBK, "-deep k slices in shared memory, tiles in groups of ", kGroupM,
                               " m-tiles");
  return threads;
}

}  // namespace kiln::codegen::gpu::render_detail

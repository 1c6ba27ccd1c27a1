// Contractions of f16 operands on Vulkan through the tensor cores: subgroup-scope cooperative
// matrices (GL_NV_cooperative_matrix; VK_NV_cooperative_matrix on the device, whose shape the
// target carries as coop_m x coop_n x coop_k: 16 x 16 x 16 or 16 x 8 x 16).
//
//   - 128 x 128 output tiles (128 x 64 when 128-wide ones would leave multiprocessors idle) of
//     128 threads: 4 subgroups of 32 as 2 x 2, each holding 64 x (tile width / 2) outputs in f32
//     accumulator matrices (KILN_VULKAN_COOP_WARPS=8: 8 subgroups as 2 x 4, 64 x (width / 4)).
//   - k blocks of 32: each thread reads its share of both operands' tiles as 16-byte pieces
//     (uvec4 loads through a buffer reference; a piece past m, n or k is zero) into registers
//     while the subgroups multiply the block staged before, then writes them to the other of
//     two shared-memory stages: one barrier per k block, as in the SIMT kernel
//     (KILN_VULKAN_COOP_BK=64: blocks of 64 in one stage, two barriers per block).
//   - Each operand is staged in its own layout (rows along the other axis, 16-byte pieces along
//     the contiguous one, rows padded by 16 bytes so that the rows a matrix load reads fall in
//     distinct banks); the matrix loads read a k-contiguous tile row-major and an m/n-contiguous
//     one column-major (lhs) or the other way (rhs), so transposed views need no copy.
//   - The epilogue: the accumulator matrices go through shared memory (the stages, idle by then)
//     one 64-row half at a time, and every thread applies the fused elementwise epilogue to
//     consecutive outputs (coalesced stores), as the CUDA kernels do.
// It applies where both operands are f16 loads 16 bytes at a time can read (copyable16) along k
// or along m / n, that axis a multiple of 8 elements; anything else keeps the SIMT kernel. bf16
// has no cooperative-matrix type in the NV extension, and Debian 12's glslang (12.0) predates
// GL_KHR_cooperative_matrix, so bf16 products stay on the SIMT kernel on Vulkan.
#include "codegen/c_family/renderer.h"
#include "support/options.h"

namespace kiln::codegen::gpu::render_detail {

namespace {

constexpr int kBM = 128;
constexpr int kWM = 64, kMI = kWM / 16;  // rows per subgroup; 16-row matrices per subgroup
constexpr int kGroupM = 8;               // m-tiles per group of the tile order
constexpr int kPer = 8;                  // f16 values per 16-byte piece

// The kernel's shape: 4 subgroups as 2 x 2 (64 x BN/2 each) or 8 as 2 x 4 (64 x BN/4); k blocks of
// 32 in two shared stages, or of 64 in one (two barriers per block; the same shared bytes). On an
// H200 4 subgroups with two stages are fastest (4096^3: 162 TFLOP/s; 8 subgroups 116, one stage
// of 64 143 and 154): 64 x 64 per subgroup loads a quarter fewer matrix fragments per multiply.
struct CoopShape {
  int threads, warps_n, bk, stages;
};
CoopShape coop_shape() {
  const support::Options& o = support::options();
  CoopShape c;
  c.threads = o.vulkan_coop_warps == 8 ? 256 : 128;
  c.warps_n = c.threads / 64;
  c.bk = o.vulkan_coop_bk == 64 ? 64 : 32;
  c.stages = c.bk == 64 ? 1 : 2;
  return c;
}

// One operand as staged, in 16-byte pieces (uvec4): `rows` rows of `cols` elements (cols along the
// contiguous axis), each row `pitch` pieces apart.
struct CoopTile {
  KNodeId node = -1;
  bool k_contiguous = false;
  int row_axis = 0, col_axis = 0, other_axis = 0;
  int rows = 0, cols = 0, pitch = 0;
  int pieces() const { return rows * pitch; }
};

// The most shared memory the stages take (both operands k-contiguous at full width), and the
// epilogue's half tile, in pieces.
int worst_stages(const CoopShape& c) { return c.stages * 2 * kBM * (c.bk / kPer + 1); }
constexpr int kEpilogue = 64 * (128 + 4) / 4;

}  // namespace

bool Renderer::coop_applies() const {
  if (d_.kind() != Dialect::kGlsl || t_.coop_m != 16 || t_.coop_k != 16 || (t_.coop_n != 16 && t_.coop_n != 8) ||
      t_.subgroup_size != 32 || t_.max_workgroup < coop_shape().threads || half_operands() != DType::kFloat16)
    return false;
  if (!operands_in_pieces()) return false;
  for (const ir::Store& s : k_.stores)
    if (w_.store_is_inner(s)) return false;
  return int64_t(std::max(worst_stages(coop_shape()), kEpilogue)) * 16 <= t_.shared_memory;
}

int Renderer::contraction_coop(KernelSource* out) {
  const ir::Contraction& c = k_.contraction;
  const int64_t M = k_.shape[c.m_axis], N = k_.shape[c.n_axis], K = k_.shape[c.k_axis];
  int64_t batch = 1;
  const std::vector<int> batch_axes = batch_axes_of(k_, &batch);
  coop_ = true;
  const CoopShape cs = coop_shape();
  const int threads = cs.threads, warps_n = cs.warps_n, BK = cs.bk;
  const int BN = batch * ceil_div(planned_rows(M), kBM) * ceil_div(N, 128) < t_.parallelism ? 64 : 128;
  const int WN = BN / warps_n, CN = t_.coop_n, NJ = WN / CN;  // a subgroup's columns, its matrices across them
  const int CP = (BN + 4) / 4;                                // pieces per row of the epilogue buffer
  auto staging = [&](KNodeId x, int mn_axis, int other_axis, int tile_mn) {
    CoopTile s;
    s.node = operand(x);
    s.other_axis = other_axis;
    s.k_contiguous = in_pieces_along(x, c.k_axis);
    s.row_axis = s.k_contiguous ? mn_axis : c.k_axis;
    s.col_axis = s.k_contiguous ? c.k_axis : mn_axis;
    s.rows = s.k_contiguous ? tile_mn : BK;
    s.cols = s.k_contiguous ? BK : tile_mn;
    s.pitch = s.cols / kPer + 1;
    return s;
  };
  const CoopTile A = staging(c.lhs, c.m_axis, c.n_axis, kBM), B = staging(c.rhs, c.n_axis, c.m_axis, BN);
  const int stage = A.pieces() + B.pieces();
  const int64_t mt = ceil_div(M, kBM), nt = ceil_div(N, BN), tiles = batch * mt * nt;
  const int64_t KB = ceil_div(K, BK);
  const std::string it = w_.idx_t();
  auto S_ = [](int64_t v) { return std::to_string(v); };
  const std::string acc_t = "fcoopmatNV<32, gl_ScopeSubgroup, 16, " + S_(CN) + ">";
  shared_.push_back({"uvec4", "kiln_cs", std::max(cs.stages * stage, 64 * CP)});

  w_.line("const int lid = int(gl_LocalInvocationID.x), sg = int(gl_SubgroupID);");
  w_.line("const int wm = sg / " + S_(warps_n) + ", wn = sg % " + S_(warps_n) + ";");
  // 16-byte views of the operands, readonly restrict where the kernel only reads them (as the
  // kernel's own buffer references are).
  for (const CoopTile* s : {&A, &B}) {
    const int id = k_.nodes[s->node].buffer;
    bool ro = true;
    for (const BufferParam& b : w_.params())
      if (b.id == id) ro = !b.written && !b.aliased;
    const std::string type = ro ? "BufQR" : "BufQ";
    w_.line(absl::StrCat(type, " ", s == &A ? "qa" : "qb", " = ", type, "(uint64_t(", d_.buffer_name(id), "));"));
  }
  w_.line(acc_t + " acc[" + S_(kMI * NJ) + "];");
  w_.line("uvec4 ra[" + S_(A.rows * (A.cols / kPer) / threads) + "], rb[" +
          S_(B.rows * (B.cols / kPer) / threads) + "];");
  grid_loop("tile", tiles_text(mt, nt, kBM, batch_axes), idx_cast(d_.group_id()), idx_cast(d_.num_groups()));
  grouped_tile("tile", mt, nt, kBM, BN, kGroupM, batch_axes);
  w_.line("[[unroll]]");
  w_.line("for (int q = 0; q < " + S_(kMI * NJ) + "; ++q) acc[q] = " + acc_t + "(0.0);");
  // Each thread's pieces of k block `kb` into registers (zero outside the operand), and from there
  // into stage `st`.
  auto fetch = [&](const std::string& kb) {
    for (const CoopTile* s : {&A, &B}) {
      const bool is_a = s == &A;
      const int per_row = s->cols / kPer, count = s->rows * per_row / threads;
      const std::string k0 = absl::StrCat(idx_cast(kb), " * ", BK);
      const std::string row0 = s->row_axis == c.k_axis ? k0 : (is_a ? "m0" : "n0");
      const std::string col0 = s->col_axis == c.k_axis ? k0 : (is_a ? "m0" : "n0");
      const ir::KNode& n = k_.nodes[s->node];
      w_.line("[[unroll]]");
      w_.open("for (int q = 0; q < " + S_(count) + "; ++q)");
      w_.line("const int e = lid + q * " + S_(threads) + ", row = e / " + S_(per_row) + ", col = (e % " + S_(per_row) +
              ") * " + S_(kPer) + ";");
      w_.line(absl::StrCat(it, " gr = ", row0, " + row, gc = ", col0, " + col;"));
      w_.line(absl::StrCat(is_a ? "ra" : "rb", "[q] = uvec4(0u);"));
      w_.open(absl::StrCat("if (gr < ", w_.extent(s->row_axis), " && gc < ", w_.extent(s->col_axis), ")"));
      w_.set_axis(s->row_axis, "gr");
      w_.set_axis(s->col_axis, "gc");
      w_.clear_axis(s->other_axis);
      w_.line(absl::StrCat(is_a ? "ra" : "rb", "[q] = ", is_a ? "qa" : "qb", ".v[uint((", w_.element_index(n.map), ") / ",
                           kPer, ")];"));
      w_.close();
      w_.close();
    }
    w_.clear_axis(c.k_axis);
    w_.clear_axis(c.m_axis);
    w_.clear_axis(c.n_axis);
  };
  auto stash = [&](const std::string& st) {
    for (const CoopTile* s : {&A, &B}) {
      const bool is_a = s == &A;
      const int per_row = s->cols / kPer, count = s->rows * per_row / threads;
      w_.line("[[unroll]]");
      w_.open("for (int q = 0; q < " + S_(count) + "; ++q)");
      w_.line("const int e = lid + q * " + S_(threads) + ";");
      w_.line(absl::StrCat("kiln_cs[(", st, ") * ", stage, is_a ? "" : absl::StrCat(" + ", A.pieces()), " + (e / ", per_row,
                           ") * ", s->pitch, " + e % ", per_row, "] = ", is_a ? "ra" : "rb", "[q];"));
      w_.close();
    }
  };
  // Two stages: block kb + 1 is fetched while kb is multiplied and stored into the other stage
  // after it, one barrier per block. One stage: block kb + 1 is fetched after kb is stored,
  // while kb is multiplied, and stored after a second barrier.
  fetch("0");
  if (cs.stages == 2) {
    stash("0");
    w_.line(d_.barrier());
  }
  w_.open(absl::StrCat("for (int kb = 0; kb < ", KB, "; ++kb)"));
  w_.line("const bool more = kb + 1 < " + S_(KB) + ";");
  if (cs.stages == 1) {
    stash("0");
    w_.line(d_.barrier());
  }
  w_.open("if (more)");
  fetch("kb + 1");
  w_.close();
  w_.line("const uint sa = " + std::string(cs.stages == 2 ? "uint(kb & 1) * " + S_(stage) + "u" : "0u") + ", sb = sa + " +
          S_(A.pieces()) + "u;");
  w_.line("[[unroll]]");
  w_.open("for (int ks = 0; ks < " + S_(BK) + "; ks += 16)");
  w_.line("fcoopmatNV<16, gl_ScopeSubgroup, 16, 16> fa[" + S_(kMI) + "];");
  w_.line("fcoopmatNV<16, gl_ScopeSubgroup, 16, " + S_(CN) + "> fb[" + S_(NJ) + "];");
  // Where the i-th 16-row (j-th CN-column) matrix of the subgroup starts at depth ks, in pieces:
  // a k-contiguous tile holds row r at r * pitch, an m/n-contiguous one k row ks at ks * pitch.
  const std::string a_at = A.k_contiguous ? "uint(wm * " + S_(kWM) + " + i * 16) * " + S_(A.pitch) + "u + uint(ks / 8)"
                                          : "uint(ks * " + S_(A.pitch) + " + (wm * " + S_(kWM) + " + i * 16) / 8)";
  const std::string b_at = B.k_contiguous ? "uint(wn * " + S_(WN) + " + j * " + S_(CN) + ") * " + S_(B.pitch) + "u + uint(ks / 8)"
                                          : "uint(ks * " + S_(B.pitch) + " + (wn * " + S_(WN) + " + j * " + S_(CN) + ") / 8)";
  // Row-major reads a k-contiguous lhs (M x K) and an n-contiguous rhs (K x N); the others are
  // column-major.
  w_.line("[[unroll]]");
  w_.line("for (int i = 0; i < " + S_(kMI) + "; ++i) coopMatLoadNV(fa[i], kiln_cs, sa + " + a_at + ", " + S_(A.pitch) +
          "u, " + (A.k_contiguous ? "false" : "true") + ");");
  w_.line("[[unroll]]");
  w_.line("for (int j = 0; j < " + S_(NJ) + "; ++j) coopMatLoadNV(fb[j], kiln_cs, sb + " + b_at + ", " + S_(B.pitch) +
          "u, " + (B.k_contiguous ? "true" : "false") + ");");
  w_.line("[[unroll]]");
  w_.line("for (int i = 0; i < " + S_(kMI) + "; ++i) for (int j = 0; j < " + S_(NJ) + "; ++j) acc[i * " + S_(NJ) +
          " + j] = coopMatMulAddNV(fa[i], fb[j], acc[i * " + S_(NJ) + " + j]);");
  w_.close();
  if (cs.stages == 2) {
    w_.open("if (more)");
    stash("(kb + 1) & 1");
    w_.close();
  }
  w_.line(d_.barrier());
  w_.close();
  // Epilogue, one 64-row half at a time: the subgroups holding it store their matrices (rows
  // i * 16.., columns wn * WN + j * CN..) as floats, 4 to a piece, then every thread takes
  // consecutive outputs.
  w_.open("for (int h = 0; h < 2; ++h)");
  w_.open("if (wm == h)");
  w_.line("[[unroll]]");
  w_.line("for (int i = 0; i < " + S_(kMI) + "; ++i) for (int j = 0; j < " + S_(NJ) + "; ++j) coopMatStoreNV(acc[i * " +
          S_(NJ) + " + j], kiln_cs, uint(i * 16 * " + S_(CP) + " + (wn * " + S_(WN) + " + j * " + S_(CN) + ") / 4), " +
          S_(CP) + "u, false);");
  w_.close();
  w_.line(d_.barrier());
  half_epilogue(BN, threads, "uintBitsToFloat(kiln_cs[(e / " + S_(BN) + ") * " + S_(CP) + " + (e % " + S_(BN) + ") / 4][e & 3])");
  w_.line(d_.barrier());
  w_.close();
  w_.close();
  out->grid[0] = groups_for(tiles, 1);
  out->strategy = absl::StrCat("contraction coop: cooperative matrices 16x", CN, "x16 (f16 -> f32) on ", kBM, "x", BN,
                               " tiles of ", threads / 32, " subgroups, ", BK, "-deep k blocks in ", cs.stages,
                               " shared stage", cs.stages == 2 ? "s" : "", " (lhs ",
                               A.k_contiguous ? "k" : "m", "-contiguous, rhs ", B.k_contiguous ? "k" : "n",
                               "-contiguous), tiles in groups of ", kGroupM, " m-tiles");
  return threads;
}

}  // namespace kiln::codegen::gpu::render_detail

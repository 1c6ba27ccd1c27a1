// Contractions of bf16/f16 operands, or of float32 operands a dot allows to take as TF32, on CUDA
// sm_80+ (Ampere, Ada, and Hopper where the sm_90a path does not apply, e.g. a TF32 product whose
// rhs is n-major), pipelined the way those GPUs want it:
//
//   - cp.async: each operand tile is copied global -> shared memory in 16-byte pieces without
//     passing through registers, into a ring of up to 4 stages, so that the loads of the next
//     k blocks are in flight while the tensor cores work on this one (one __syncthreads per k
//     block). Ragged edges: a piece past the end of m, n or k is zero-filled by the copy itself.
//   - Each operand is staged in its own memory layout (rows along the other axis, 16-byte pieces
//     along the contiguous one, rows padded by 16 bytes so that the 8 rows one ldmatrix phase
//     reads fall in distinct banks); ldmatrix (.trans for an m-major lhs or an n-major rhs) turns
//     either layout into mma.sync fragments, so transposed views need no copy.
//   - 128 x 128 output tiles (128 x 64 when that leaves multiprocessors idle: decode-like
//     products), 8 warps of 64 x 32 (or 64 x 16) mma.sync tiles, k blocks of 64
//     bytes per row (32 bf16/f16 values: m16n8k16; 16 TF32 values: m16n8k8), tiles walked in
//     groups of 8 m-tiles (a wave of blocks shares its operand panels in L2).
//   - TF32: in bytes a k-contiguous tile is laid out as a 16-bit one, so the same ldmatrix reads
//     give m16n8k8 fragments; an m/n-contiguous one is read with 32-bit loads (ldmatrix cannot
//     transpose 32-bit values); each fragment is rounded to TF32 (cvt.rna) before the mma.
//   - The epilogue: the accumulators go through shared memory (the stage ring, free by then) one
//     64-row half at a time, and every thread applies the fused elementwise epilogue to
//     consecutive outputs (coalesced stores).
// It applies where both operands are plain loads cp.async can copy (copyable16) along k or along
// m / n, that axis a whole number of 16-byte pieces long; anything else keeps contraction_mma.
#include "codegen/c_family/renderer.h"

namespace kiln::codegen::gpu::render_detail {

namespace {

constexpr int kBM = 128, kThreads = 256;
constexpr int kRowBytes = 64;  // a k block: 32 bf16/f16 values (two m16n8k16 steps), 16 TF32 (two m16n8k8)
constexpr int kWM = 64, kWarpsN = 4, kMI = kWM / 16;   // 2 x 4 warps; m16 tiles per warp
constexpr int kGroupM = 8;                               // m-tiles per group of the tile order

// One operand as staged: `rows` rows of `cols` elements of `eb` bytes (cols along the contiguous
// axis), each row padded to `pitch` elements.
struct Staging {
  KNodeId node = -1;
  bool k_contiguous = false;
  int eb = 2;
  int row_axis = 0, col_axis = 0, other_axis = 0;
  int rows = 0, cols = 0, pitch = 0;
  int bytes() const { return rows * pitch * eb; }
};

const char* kHelpers = R"(#ifndef KILN_SM80_HELPERS
#define KILN_SM80_HELPERS
__device__ __forceinline__ unsigned kiln_lds32(unsigned a) {
  unsigned r;
  asm volatile("ld.shared.b32 %0, [%1];" : "=r"(r) : "r"(a));
  return r;
}
__device__ __forceinline__ unsigned kiln_tf32(unsigned x) {
  unsigned r;
  asm("cvt.rna.tf32.f32 %0, %1;" : "=r"(r) : "f"(__uint_as_float(x)));
  return r;
}
#endif
)";

// Stages that fit in `shared` bytes (at most 4, at least 2; 0 when 2 do not fit).
int stages_for(int stage_bytes, int64_t shared) {
  for (int s = 4; s >= 2; --s)
    if (int64_t(s) * stage_bytes <= shared) return s;
  return 0;
}

}  // namespace

bool Renderer::sm80_applies() const {
  if (d_.kind() != Dialect::kCuda || t_.compute_capability < 80 || !(half_mma_applies() || tf32_mma_applies()))
    return false;
  if (!support::options().cuda_cp_async) return false;
  if (!operands_in_pieces()) return false;
  for (const ir::Store& s : k_.stores)
    if (w_.store_is_inner(s)) return false;
  const int worst_stage = (kBM + 128) * (kRowBytes + 32);
  return stages_for(worst_stage, t_.shared_memory) >= 2;
}

int Renderer::contraction_sm80(KernelSource* out) {
  const ir::Contraction& c = k_.contraction;
  const int64_t M = k_.shape[c.m_axis], N = k_.shape[c.n_axis], K = k_.shape[c.k_axis];
  int64_t batch = 1;
  const std::vector<int> batch_axes = batch_axes_of(k_, &batch);
  const bool tf = !half_mma_applies();  // float32 operands taken as TF32
  const int eb = tf ? 4 : 2, kBK = kRowBytes / eb, KM = 32 / eb;  // k per block, per mma step
  auto staging = [&](KNodeId x, int mn_axis, int other_axis, int tile_mn) {
    Staging s;
    s.node = operand(x);
    s.eb = eb;
    s.other_axis = other_axis;
    s.k_contiguous = in_pieces_along(x, c.k_axis);
    s.row_axis = s.k_contiguous ? mn_axis : c.k_axis;
    s.col_axis = s.k_contiguous ? c.k_axis : mn_axis;
    s.rows = s.k_contiguous ? tile_mn : kBK;
    s.cols = s.k_contiguous ? kBK : tile_mn;
    // Rows padded by 16 bytes: the 8 rows one ldmatrix phase reads fall in distinct banks. A
    // TF32 m/n-contiguous tile is read by 32-bit loads instead (ldmatrix cannot transpose 32-bit
    // values): 8 words of padding put the lanes' rows k = tg, tg + 4 in distinct banks.
    s.pitch = s.cols + (tf && !s.k_contiguous ? 8 : 16 / eb);
    return s;
  };
  // 128 columns per tile, or 64 where 128-wide tiles would leave multiprocessors idle (decode-like
  // products: twice the blocks streaming the rhs).
  const int BN = batch * ceil_div(planned_rows(M), kBM) * ceil_div(N, 128) < t_.parallelism ? 64 : 128;
  const int WN = BN / kWarpsN, NJ = WN / 8;  // a warp's columns, its n8 mma tiles
  const int CPitch = BN + 4;                 // floats per row of the epilogue buffer
  const Staging A = staging(c.lhs, c.m_axis, c.n_axis, kBM), B = staging(c.rhs, c.n_axis, c.m_axis, BN);
  const int stage_bytes = A.bytes() + B.bytes();
  const int S = stages_for(stage_bytes, t_.shared_memory);
  const int c_bytes = 64 * CPitch * 4;  // one 64-row half of the tile as floats
  const bool bf = k_.nodes[A.node].dtype == DType::kBFloat16;
  const std::string mma = tf   ? "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"
                          : bf ? "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
                               : "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32";
  const int64_t mt = ceil_div(M, kBM), nt = ceil_div(N, BN), tiles = batch * mt * nt;
  const int64_t KB = ceil_div(K, kBK);
  const std::string it = w_.idx_t();
  auto S_ = [](int64_t v) { return std::to_string(v); };
  helpers_ = std::string(attention_device_helpers()) + kHelpers;
  dsmem_threads_ = kThreads;

  w_.line("const int lid = (int)threadIdx.x, warp = lid >> 5, lane = lid & 31, g = lane >> 2, tg = lane & 3;");
  w_.line("const int wm = warp / " + S_(kWarpsN) + ", wn = warp % " + S_(kWarpsN) + ";");
  w_.line("const unsigned sbase = kiln_smem_addr(kiln_dsmem);");
  // Each lane's ldmatrix row address within a stage's tile (bytes), before the k-step and tile
  // offsets: see the PTX ISA's ldmatrix fragment layouts. A k-contiguous tile is read as is, an
  // m/n-contiguous one transposed.
  // In bytes, a TF32 k-contiguous tile is laid out as a 16-bit one (16-byte pieces of 4 values
  // instead of 8), so the same ldmatrix addresses give the m16n8k8 fragments. A TF32 m/n-contiguous
  // tile: each lane's word at k = tg and column g instead.
  const std::string P8 = S_(16 / eb);  // elements per 16 bytes
  if (A.k_contiguous)
    w_.line("const unsigned a_lane = ((wm * " + S_(kWM) + " + (lane & 7) + ((lane >> 3) & 1) * 8) * " + S_(A.pitch) +
            " + (lane >> 4) * " + P8 + ") * " + S_(eb) + ";");
  else if (!tf)
    w_.line("const unsigned a_lane = (((lane & 7) + (lane >> 4) * 8) * " + S_(A.pitch) + " + wm * " + S_(kWM) +
            " + ((lane >> 3) & 1) * 8) * 2;");
  else
    w_.line("const unsigned a_lane = (tg * " + S_(A.pitch) + " + wm * " + S_(kWM) + " + g) * 4;");
  if (B.k_contiguous)
    w_.line("const unsigned b_lane = ((wn * " + S_(WN) + " + (lane & 7) + (lane >> 4) * 8) * " + S_(B.pitch) +
            " + ((lane >> 3) & 1) * " + P8 + ") * " + S_(eb) + ";");
  else if (!tf)
    w_.line("const unsigned b_lane = (((lane & 7) + ((lane >> 3) & 1) * 8) * " + S_(B.pitch) + " + wn * " + S_(WN) +
            " + (lane >> 4) * 8) * 2;");
  else
    w_.line("const unsigned b_lane = (tg * " + S_(B.pitch) + " + wn * " + S_(WN) + " + g) * 4;");
  w_.line("float acc[" + S_(kMI * NJ * 4) + "];");
  grid_loop("tile", tiles_text(mt, nt, kBM, batch_axes), idx_cast(d_.group_id()), idx_cast(d_.num_groups()));
  grouped_tile("tile", mt, nt, kBM, BN, kGroupM, batch_axes);
  w_.line("#pragma unroll");
  w_.line("for (int q = 0; q < " + S_(kMI * NJ * 4) + "; ++q) acc[q] = 0.0f;");
  // The copies of k block `kb` into stage `st`: each thread's share of each operand's 16-byte
  // pieces, zero-filled outside the operand.
  auto issue = [&](const std::string& st, const std::string& kb) {
    for (const Staging* s : {&A, &B}) {
      const bool is_a = s == &A;
      const int per = 16 / s->eb, per_row = s->cols / per, pieces = s->rows * per_row;
      const std::string row0 = s->row_axis == c.k_axis ? absl::StrCat("(", it, ")(", kb, ") * ", kBK)
                                                       : (is_a ? "m0" : "n0");
      const std::string col0 = s->col_axis == c.k_axis ? absl::StrCat("(", it, ")(", kb, ") * ", kBK)
                                                       : (is_a ? "m0" : "n0");
      const ir::KNode& n = k_.nodes[s->node];
      const std::string buf = DialectOps::buffer_name(n.buffer);
      w_.line("#pragma unroll");
      w_.open("for (int q = 0; q < " + S_(pieces / kThreads) + "; ++q)");
      w_.line("const int e = lid + q * " + S_(kThreads) + ", row = e / " + S_(per_row) + ", col = (e % " + S_(per_row) +
              ") * " + S_(per) + ";");
      w_.line(absl::StrCat(it, " gr = ", row0, " + row, gc = ", col0, " + col;"));
      w_.line(absl::StrCat("const bool inside = gr < ", w_.extent(s->row_axis), " && gc < ", w_.extent(s->col_axis), ";"));
      w_.set_axis(s->row_axis, "gr");
      w_.set_axis(s->col_axis, "gc");
      w_.clear_axis(s->other_axis);
      w_.line(absl::StrCat("const ", d_.storage_type(n.dtype), "* src = ", buf, ";"));
      w_.line(absl::StrCat("if (inside) src += ", w_.element_index(n.map), ";"));
      w_.line(absl::StrCat("kiln_cp16(sbase + (", st, ") * ", stage_bytes, is_a ? "" : absl::StrCat(" + ", A.bytes()),
                           " + (row * ", s->pitch, " + col) * ", s->eb, ", src, inside);"));
      w_.close();
    }
    w_.clear_axis(c.k_axis);
    w_.clear_axis(c.m_axis);
    w_.clear_axis(c.n_axis);
  };
  // Prologue: the first S - 1 k blocks in flight (one commit group each, empty past the end).
  for (int s = 0; s + 1 < S; ++s) {
    w_.open(absl::StrCat("if (", s, " < ", w_.ilit(KB), ")"));
    issue(S_(s), S_(s));
    w_.close();
    w_.line("kiln_cp_commit();");
  }
  w_.open(absl::StrCat("for (int kb = 0; kb < ", KB, "; ++kb)"));
  // Block kb has landed once at most S - 2 later groups are pending; the barrier also tells every
  // warp that block kb - 1's stage, refilled next, has been read.
  w_.line("asm volatile(\"cp.async.wait_group " + S_(S - 2) + ";\" ::: \"memory\");");
  w_.line("__syncthreads();");
  w_.line("const int nk = kb + " + S_(S - 1) + ";");
  w_.open(absl::StrCat("if (nk < ", KB, ")"));
  issue("nk % " + S_(S), "nk");
  w_.close();
  w_.line("kiln_cp_commit();");
  w_.line("const unsigned sa = sbase + (kb % " + S_(S) + ") * " + S_(stage_bytes) + ", sb = sa + " + S_(A.bytes()) + ";");
  w_.line("#pragma unroll");
  w_.open("for (int ks = 0; ks < " + S_(kBK) + "; ks += " + S_(KM) + ")");
  w_.line("unsigned a[" + S_(kMI) + "][4], b[" + S_(NJ) + "][2];");
  // Offsets (bytes) of k step ks and of the warp's i-th m16 (j-th n16 / n8) block in each layout.
  const std::string a_ks = A.k_contiguous ? "ks * " + S_(eb) : "ks * " + S_(A.pitch * eb);
  const std::string b_ks = B.k_contiguous ? "ks * " + S_(eb) : "ks * " + S_(B.pitch * eb);
  if (A.k_contiguous || !tf) {
    const std::string a_i = A.k_contiguous ? S_(16 * A.pitch * eb) : "32";
    w_.line("#pragma unroll");
    w_.line(absl::StrCat("for (int i = 0; i < ", kMI, "; ++i) ", A.k_contiguous ? "kiln_ldsm4" : "kiln_ldsm4t",
                         "(sa + a_lane + ", a_ks, " + i * ", a_i, ", a[i][0], a[i][1], a[i][2], a[i][3]);"));
  } else {  // TF32 [k][m]: rows g, g + 8 at k = tg, tg + 4
    const std::string k4 = S_(4 * A.pitch * 4);
    w_.line("#pragma unroll");
    w_.open(absl::StrCat("for (int i = 0; i < ", kMI, "; ++i)"));
    w_.line(absl::StrCat("const unsigned at = sa + a_lane + ", a_ks, " + i * 64;"));
    w_.line(absl::StrCat("a[i][0] = kiln_lds32(at), a[i][1] = kiln_lds32(at + 32), a[i][2] = kiln_lds32(at + ", k4,
                         "), a[i][3] = kiln_lds32(at + ", k4, " + 32);"));
    w_.close();
  }
  if (B.k_contiguous || !tf) {
    const std::string b_j = B.k_contiguous ? S_(16 * B.pitch * eb) : "32";
    w_.line("#pragma unroll");
    w_.line(absl::StrCat("for (int j = 0; j < ", NJ / 2, "; ++j) ", B.k_contiguous ? "kiln_ldsm4" : "kiln_ldsm4t",
                         "(sb + b_lane + ", b_ks, " + j * ", b_j, ", b[2 * j][0], b[2 * j][1], b[2 * j + 1][0], b[2 * j + 1][1]);"));
  } else {  // TF32 [k][n]: column g at k = tg, tg + 4
    w_.line("#pragma unroll");
    w_.line(absl::StrCat("for (int j = 0; j < ", NJ, "; ++j) b[j][0] = kiln_lds32(sb + b_lane + ", b_ks,
                         " + j * 32), b[j][1] = kiln_lds32(sb + b_lane + ", b_ks, " + j * 32 + ", 4 * B.pitch * 4, ");"));
  }
  if (tf) {  // the operands rounded to TF32 (cvt.rna), as the register-staged kernel does
    w_.line("#pragma unroll");
    w_.line(absl::StrCat("for (int i = 0; i < ", kMI, "; ++i) for (int r = 0; r < 4; ++r) a[i][r] = kiln_tf32(a[i][r]);"));
    w_.line("#pragma unroll");
    w_.line(absl::StrCat("for (int j = 0; j < ", NJ, "; ++j) for (int r = 0; r < 2; ++r) b[j][r] = kiln_tf32(b[j][r]);"));
  }
  mma_tiles(mma, kMI, NJ);
  w_.close();
  w_.close();
  // Epilogue, one 64-row half at a time through the (now idle) stage ring: the warps holding the
  // half write their accumulators (thread (g, tg) holds rows g and g + 8, columns 2tg and 2tg + 1
  // of each 16 x 8 tile), then every thread takes consecutive outputs.
  w_.line("kiln_cp_wait0();");
  w_.line("__syncthreads();");
  w_.line("float* const cs = reinterpret_cast<float*>(kiln_dsmem);");
  w_.open("for (int h = 0; h < 2; ++h)");
  w_.open("if (wm == h)");
  w_.line("#pragma unroll");
  w_.open("for (int q = 0; q < " + S_(kMI * NJ * 4) + "; ++q)");
  w_.line("const int i = q / " + S_(NJ * 4) + ", j = (q / 4) % " + S_(NJ) + ", v = q & 3;");
  w_.line("cs[(i * 16 + g + (v >> 1) * 8) * " + S_(CPitch) + " + wn * " + S_(WN) + " + j * 8 + tg * 2 + (v & 1)] = acc[q];");
  w_.close();
  w_.close();
  w_.line("__syncthreads();");
  half_epilogue(BN, kThreads, "cs[(e / " + S_(BN) + ") * " + S_(CPitch) + " + e % " + S_(BN) + "]");
  w_.line("__syncthreads();");
  w_.close();
  w_.close();
  out->grid[0] = groups_for(tiles, 1);
  out->shared_bytes = uint32_t(std::max(S * stage_bytes, c_bytes));
  out->strategy = absl::StrCat("contraction sm_80: cp.async into ", S, " stages of ", kBM, "x", BN, "x", kBK, " (lhs ",
                               A.k_contiguous ? "k" : "m", "-contiguous, rhs ", B.k_contiguous ? "k" : "n",
                               "-contiguous), ldmatrix, ", tf ? "mma.sync m16n8k8 in TF32 (operands rounded)" : "mma.sync m16n8k16",
                               " on 8 warps of ", kWM, "x", WN,
                               ", tiles in groups of ", kGroupM, " m-tiles");
  return kThreads;
}

}  // namespace kiln::codegen::gpu::render_detail

// Contractions: a shared-memory tiled SIMT kernel for every dialect and dtype, and a tensor-core
// (mma.sync) kernel for bf16/f16 operands on CUDA.
#include "codegen/c_family/renderer.h"

namespace kiln::codegen::gpu::render_detail {

using ir::KNodeId;
using ir::Op;

std::vector<int> batch_axes_of(const ir::Kernel& k, int64_t* batch) {
  const ir::Contraction& c = k.contraction;
  std::vector<int> axes;
  *batch = 1;
  for (int a = 0; a < int(k.shape.size()); ++a)
    if (a != c.m_axis && a != c.n_axis && a != c.k_axis) {
      axes.push_back(a);
      *batch *= k.shape[a];
    }
  return axes;
}

void Renderer::operand_slice(KNodeId node, const SliceRegs& regs, const SliceAxis& row, const SliceAxis& col, int cols,
                             int other) {
  w_.open(absl::StrCat("for (int r = 0; r < ", regs.count, "; ++r)"));
  w_.line(absl::StrCat("int e = ", regs.lid, " + r * ", regs.block, ";"));
  w_.line(absl::StrCat(w_.idx_t(), " ", row.var, " = ", row.base, " + ", idx_cast(absl::StrCat("e / ", cols)), ";"));
  w_.line(absl::StrCat(w_.idx_t(), " ", col.var, " = ", col.base, " + ", idx_cast(absl::StrCat("e % ", cols)), ";"));
  w_.line(absl::StrCat(regs.reg, "[r] = ", regs.zero, ";"));
  w_.open(absl::StrCat("if (", row.var, " < ", row.bound, " && ", col.var, " < ", col.bound, ")"));
  w_.set_axis(row.axis, row.var);
  w_.set_axis(col.axis, col.var);
  w_.clear_axis(other);
  w_.line(absl::StrCat(regs.reg, "[r] = ", w_.eval(node), ";"));
  w_.close();
  w_.close();
}

int Renderer::contraction(KernelSource* out) {
  const ir::Contraction& c = k_.contraction;
  int64_t M = k_.shape[c.m_axis], N = k_.shape[c.n_axis], K = k_.shape[c.k_axis];
  int64_t batch = 1;
  const std::vector<int> batch_axes = batch_axes_of(k_, &batch);
  // 256 threads as 16 x 16, each computing TM x TN outputs at rows ty + 16 i and columns tx + 16 j
  // (neighbouring threads on neighbouring columns: conflict-free shared reads, coalesced stores).
  // Large products take 128x128 tiles with 8x8 per thread (four times the multiply-adds per shared
  // load of 64x64 with 4x4) when that still leaves two tiles per multiprocessor.
  DType at = w_.acc_type(c.reduce);
  const bool wide = dtype_size(at) > 4;  // 8-byte accumulators: half the k depth (shared memory)
  // A symbolic m (or batch) extent is taken as large: the choice must not depend on the size.
  const bool big = !wide && N >= 128 &&
                   (k_.any_symbolic() || (M >= 128 && batch * ceil_div(M, 128) * ceil_div(N, 128) >= 2 * int64_t(t_.parallelism)));
  const int BM = big ? 128 : 64, BN = BM, BK = big || wide ? 8 : 16, TM = BM / 16, TN = BN / 16, block = 256;
  // Large tiles with a long k walk (k >= 256) put each thread on rows and columns in runs of 4
  // (4 ty + r + 64 q, 4 tx + r + 64 q): its operands are 4 adjacent values of a shared k row,
  // which the compiler reads as one 16-byte load (a quarter of the shared-memory instructions
  // per multiply-add). Its stores are then 16 bytes apart across a warp instead of adjacent, so
  // products with a short k keep the strided rows and columns (ty + 16 i, tx + 16 j), as every
  // product does with KILN_SIMT_RUNS=0.
  const bool runs = big && K >= 256 && support::options().simt_runs;
  auto row_of = [&](const std::string& t, const std::string& i) {
    return runs ? absl::StrCat("4 * ", t, " + (", i, ") % 4 + 64 * ((", i, ") / 4)") : absl::StrCat(t, " + 16 * (", i, ")");
  };
  // The lhs slice is staged with k fastest across threads (coalesced for a k-contiguous lhs), so
  // its rows are padded: by one element, a warp's stores fall in distinct banks; by four (runs),
  // rows stay 16-byte aligned and with 8-deep slices a warp's stores still fall in distinct banks.
  const int AS = BM + (runs ? 4 : 1), LA = BM * BK / block, LB = BK * BN / block;
  int64_t mt = ceil_div(M, BM), nt = ceil_div(N, BN), tiles = batch * mt * nt;
  // The bounds as text: symbolic extents read their params (KernelWriter::extent).
  const std::string Mx = w_.extent(c.m_axis), Nx = w_.extent(c.n_axis), Kx = w_.extent(c.k_axis);
  const std::string mtx = m_tiles_text(mt, BM);
  // Two shared buffers: the next k slice is loaded into registers while this one is multiplied,
  // then stored into the other buffer, one barrier per slice.
  std::string as = shared_array(at, 2 * BK * AS), bs = shared_array(at, 2 * BK * BN);
  std::string lid = w_.fresh("lid");
  w_.line(absl::StrCat("int ", lid, " = ", d_.local_id(), ";"));
  w_.line(absl::StrCat("int tx = ", lid, " % 16;"));
  w_.line(absl::StrCat("int ty = ", lid, " / 16;"));
  grid_loop("tile", tiles_text(mt, nt, BM, batch_axes), idx_cast(d_.group_id()), idx_cast(d_.num_groups()));
  w_.line(absl::StrCat(w_.idx_t(), " mtile = tile % ", mtx, ";"));
  w_.line(absl::StrCat(w_.idx_t(), " rest = tile / ", mtx, ";"));
  w_.line(absl::StrCat(w_.idx_t(), " ntile = rest % ", w_.ilit(nt), ";"));
  w_.line(absl::StrCat(w_.idx_t(), " bt = rest / ", w_.ilit(nt), ";"));
  w_.unravel("bt", batch_axes);
  w_.line(absl::StrCat(w_.idx_t(), " m0 = mtile * ", w_.ilit(BM), ";"));
  w_.line(absl::StrCat(w_.idx_t(), " n0 = ntile * ", w_.ilit(BN), ";"));
  std::string zero = d_.literal(at, Scalar::from_int(0).cast_to(at));
  w_.line(absl::StrCat(d_.type(at), " acc[", TM * TN, "];"));
  w_.line(absl::StrCat("for (int q = 0; q < ", TM * TN, "; ++q) acc[q] = ", zero, ";"));
  w_.line(absl::StrCat(d_.type(at), " ra[", LA, "];"));
  w_.line(absl::StrCat(d_.type(at), " rb[", LB, "];"));
  // The slice at k `kb` into ra / rb: the lhs BM x BK with k fastest across threads, the rhs
  // BK x BN with n fastest.
  auto load = [&](const std::string& kb) {
    operand_slice(c.lhs, {LA, block, lid, zero, "ra"}, {"am", "m0", c.m_axis, Mx}, {"ak", kb, c.k_axis, Kx}, BK, c.n_axis);
    operand_slice(c.rhs, {LB, block, lid, zero, "rb"}, {"bk", kb, c.k_axis, Kx}, {"bn", "n0", c.n_axis, Nx}, BN, c.m_axis);
    w_.clear_axis(c.k_axis);
  };
  // ra / rb into shared buffer `buf` (0 or 1).
  auto store = [&](const std::string& buf) {
    w_.open(absl::StrCat("for (int r = 0; r < ", LA, "; ++r)"));
    w_.line(absl::StrCat("int e = ", lid, " + r * ", block, ";"));
    w_.line(absl::StrCat(as, "[", buf, " * ", BK * AS, " + (e % ", BK, ") * ", AS, " + e / ", BK, "] = ra[r];"));
    w_.close();
    w_.open(absl::StrCat("for (int r = 0; r < ", LB, "; ++r)"));
    w_.line(absl::StrCat("int e = ", lid, " + r * ", block, ";"));
    w_.line(absl::StrCat(bs, "[", buf, " * ", BK * BN, " + e] = rb[r];"));
    w_.close();
  };
  load(w_.ilit(0));
  store("0");
  w_.line(d_.barrier());
  w_.line("int buf = 0;");
  w_.open(absl::StrCat("for (", w_.idx_t(), " k0 = ", w_.ilit(0), "; k0 < ", w_.ilit(K), "; k0 += ", w_.ilit(BK), ")"));
  w_.line(absl::StrCat("bool more = k0 + ", w_.ilit(BK), " < ", w_.ilit(K), ";"));
  w_.open("if (more)");
  load(absl::StrCat("(k0 + ", w_.ilit(BK), ")"));
  w_.close();
  w_.open(absl::StrCat("for (int kk = 0; kk < ", BK, "; ++kk)"));
  w_.line(absl::StrCat(d_.type(at), " a[", TM, "];"));
  w_.line(absl::StrCat(d_.type(at), " b[", TN, "];"));
  w_.line(absl::StrCat("for (int i = 0; i < ", TM, "; ++i) a[i] = ", as, "[buf * ", BK * AS, " + kk * ", AS, " + ", row_of("ty", "i"), "];"));
  w_.line(absl::StrCat("for (int j = 0; j < ", TN, "; ++j) b[j] = ", bs, "[buf * ", BK * BN, " + kk * ", BN, " + ", row_of("tx", "j"), "];"));
  w_.line(absl::StrCat("for (int i = 0; i < ", TM, "; ++i) for (int j = 0; j < ", TN, "; ++j) acc[i * ", TN,
                       " + j] = ", d_.op(Op::kAdd, at, {absl::StrCat("acc[i * ", TN, " + j]"), d_.op(Op::kMul, at, {"a[i]", "b[j]"})}), ";"));
  w_.close();
  w_.open("if (more)");
  store("(1 - buf)");
  w_.close();
  w_.line(d_.barrier());
  w_.line("buf = 1 - buf;");
  w_.close();
  // Epilogue per output of the thread's TM x TN outputs.
  w_.open(absl::StrCat("for (int i = 0; i < ", TM, "; ++i)"));
  w_.open(absl::StrCat("for (int j = 0; j < ", TN, "; ++j)"));
  w_.line(absl::StrCat(w_.idx_t(), " om = m0 + ", idx_cast(row_of("ty", "i")), ";"));
  w_.line(absl::StrCat(w_.idx_t(), " on = n0 + ", idx_cast(row_of("tx", "j")), ";"));
  w_.open(absl::StrCat("if (om < ", Mx, " && on < ", Nx, ")"));
  w_.set_axis(c.m_axis, "om");
  w_.set_axis(c.n_axis, "on");
  w_.bind(c.reduce, absl::StrCat("acc[i * ", TN, " + j]"));
  for (const ir::Store& s : k_.stores) w_.store(s);
  w_.close();
  w_.close();
  w_.close();
  w_.close();
  out->grid[0] = groups_for(tiles, 1);
  out->strategy = absl::StrCat("contraction: ", BM, "x", BN, " tiles, ", BK, "-deep shared-memory k slices, ", TM, "x", TN,
                               " per thread", runs ? " in runs of 4" : "");
  return block;
}

}  // namespace kiln::codegen::gpu::render_detail

namespace kiln::codegen::gpu::render_detail {

std::string Renderer::m_tiles_text(int64_t mt, int BM) const {
  if (!k_.symbolic(k_.contraction.m_axis)) return w_.ilit(mt);
  return absl::StrCat("((", w_.extent(k_.contraction.m_axis), " + ", w_.ilit(BM - 1), ") / ", w_.ilit(BM), ")");
}

std::string Renderer::tiles_text(int64_t mt, int64_t nt, int BM, const std::vector<int>& batch_axes) const {
  if (!k_.any_symbolic()) {
    int64_t batch = 1;
    for (int a : batch_axes) batch *= k_.shape[size_t(a)];
    return w_.ilit(batch * mt * nt);
  }
  return absl::StrCat("(", w_.extent_product(batch_axes), " * ", m_tiles_text(mt, BM), " * ", w_.ilit(nt), ")");
}

void Renderer::grouped_tile(const std::string& tile, int64_t mt, int64_t nt, int BM, int BN, int group_m,
                            const std::vector<int>& batch_axes) {
  const std::string it = w_.idx_t();
  const std::string mtx = m_tiles_text(mt, BM);
  const std::string per_batch = k_.symbolic(k_.contraction.m_axis) ? absl::StrCat("(", mtx, " * ", w_.ilit(nt), ")")
                                                                    : w_.ilit(mt * nt);
  w_.line(absl::StrCat(it, " bt = ", tile, " / ", per_batch, ", rest = ", tile, " % ", per_batch, ";"));
  w_.line(absl::StrCat(it, " first_m = (rest / ", w_.ilit(group_m * nt), ") * ", w_.ilit(group_m), ";"));
  w_.line(absl::StrCat(it, " gsize = ", mtx, " - first_m < ", w_.ilit(group_m), " ? ", mtx, " - first_m : ",
                       w_.ilit(group_m), ";"));
  w_.line(absl::StrCat(it, " in_group = rest % ", w_.ilit(group_m * nt), ";"));
  w_.line(absl::StrCat(it, " m0 = (first_m + in_group % gsize) * ", w_.ilit(BM), ", n0 = (in_group / gsize) * ", w_.ilit(BN),
                       ";"));
  w_.unravel("bt", batch_axes);
}

void Renderer::half_epilogue(int BN, int threads, const std::string& value) {
  const ir::Contraction& c = k_.contraction;
  const std::string n = std::to_string(BN);
  w_.open(absl::StrCat("for (int e = lid; e < ", 64 * BN, "; e += ", threads, ")"));
  w_.line(absl::StrCat(w_.idx_t(), " om = m0 + h * 64 + ", idx_cast("e / " + n), ";"));
  w_.line(absl::StrCat(w_.idx_t(), " on = n0 + ", idx_cast("e % " + n), ";"));
  w_.open(absl::StrCat("if (om < ", w_.extent(c.m_axis), " && on < ", w_.extent(c.n_axis), ")"));
  w_.set_axis(c.m_axis, "om");
  w_.set_axis(c.n_axis, "on");
  w_.bind(c.reduce, value);
  for (const ir::Store& st : k_.stores) w_.store(st);
  w_.close();
  w_.close();
}

void Renderer::mma_tiles(const std::string& instr, int MI, int NJ) {
  auto S = [](int v) { return std::to_string(v); };
  w_.line("#pragma unroll");
  w_.open("for (int i = 0; i < " + S(MI) + "; ++i)");
  w_.line("#pragma unroll");
  w_.open("for (int j = 0; j < " + S(NJ) + "; ++j)");
  w_.line("float* d = &acc[(i * " + S(NJ) + " + j) * 4];");
  w_.line(absl::StrCat("asm volatile(\"", instr, " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\" "
                       ": \"+f\"(d[0]), \"+f\"(d[1]), \"+f\"(d[2]), \"+f\"(d[3]) "
                       ": \"r\"(a[i][0]), \"r\"(a[i][1]), \"r\"(a[i][2]), \"r\"(a[i][3]), \"r\"(b[j][0]), \"r\"(b[j][1]));"));
  w_.close();
  w_.close();
}

bool Renderer::copyable16(KNodeId id, int vec_axis) const {
  const ir::KNode& n = k_.nodes[id];
  if (n.op != Op::kLoad || n.map.views.size() != 1 || n.map.has_mask()) return false;
  const int64_t eb = dtype_size(n.dtype), per = 16 / eb;
  if ((eb != 2 && eb != 4) || p_.buffers[n.buffer].dtype != n.dtype) return false;
  const ir::View& v = n.map.views[0];
  if (v.strides.size() != k_.shape.size() || v.strides[vec_axis] != 1 || v.offset % per != 0) return false;
  for (size_t d = 0; d < v.strides.size(); ++d)
    if (int(d) != vec_axis && v.strides[d] % per != 0) return false;
  return true;
}

DType Renderer::half_operands() const {
  const ir::Contraction& c = k_.contraction;
  const ir::KNode& l = k_.nodes[c.lhs];
  const ir::KNode& r = k_.nodes[c.rhs];
  if (l.op != Op::kCast || r.op != Op::kCast || l.dtype != DType::kFloat32 || r.dtype != DType::kFloat32)
    return DType::kFloat32;
  DType a = k_.nodes[l.inputs[0]].dtype, b = k_.nodes[r.inputs[0]].dtype;
  return a == b && (a == DType::kBFloat16 || a == DType::kFloat16) ? a : DType::kFloat32;
}

bool Renderer::in_pieces_along(KNodeId x, int axis) const {
  const KNodeId id = operand(x);
  return copyable16(id, axis) && k_.shape[axis] % (16 / int64_t(dtype_size(k_.nodes[id].dtype))) == 0;
}

bool Renderer::operands_in_pieces() const {
  const ir::Contraction& c = k_.contraction;
  return (in_pieces_along(c.lhs, c.k_axis) || in_pieces_along(c.lhs, c.m_axis)) &&
         (in_pieces_along(c.rhs, c.k_axis) || in_pieces_along(c.rhs, c.n_axis));
}

bool Renderer::half_mma_applies() const {
  return d_.kind() == Dialect::kCuda && t_.compute_capability >= 80 && half_operands() != DType::kFloat32;
}

bool Renderer::tf32_mma_applies() const {
  if (d_.kind() != Dialect::kCuda || t_.compute_capability < 80) return false;
  const ir::Contraction& c = k_.contraction;
  return c.tf32 && k_.nodes[c.lhs].dtype == DType::kFloat32 && k_.nodes[c.rhs].dtype == DType::kFloat32 &&
         k_.nodes[c.reduce].dtype == DType::kFloat32;
}

// 128x64 output tiles per block of 8 warps (4 x 2, each warp 32x32 = 2x4 mma tiles of 16x8), k
// slices staged in shared memory (B transposed so that both operands' k runs are adjacent), the
// next slice's global loads in flight while the tensor cores work on the current one, and the
// elementwise epilogue applied per output. bf16/f16 operands: 32-deep slices of 16-bit values,
// m16n8k16. TF32 (float32 operands the dot allows to round): 16-deep slices of f32 values rounded
// to TF32 (cvt.rna) as they are staged, m16n8k8; one register holds one element instead of two.
int Renderer::contraction_mma(KernelSource* out) {
  const ir::Contraction& c = k_.contraction;
  const bool tf = !half_mma_applies();  // else tf32_mma_applies()
  const int BK = tf ? 16 : 32, LD = BK + (tf ? 4 : 8);
  const int P = tf ? 1 : 2;  // elements per 32-bit fragment register
  constexpr int BM = 128, BN = 64, block = 256;
  constexpr int WM = 32, WN = 32, MI = WM / 16, NJ = WN / 8, WARPS_N = BN / WN, ACC = MI * NJ * 4;
  const int PER_A = BM * BK / block, PER_B = BK * BN / block;
  static_assert((BM / WM) * WARPS_N * 32 == block, "8 warps");
  int64_t M = k_.shape[c.m_axis], N = k_.shape[c.n_axis], K = k_.shape[c.k_axis];
  int64_t batch = 1;
  const std::vector<int> batch_axes = batch_axes_of(k_, &batch);
  int64_t mt = ceil_div(M, BM), nt = ceil_div(N, BN), tiles = batch * mt * nt;
  bool bf = !tf && k_.nodes[k_.nodes[c.lhs].inputs[0]].dtype == DType::kBFloat16;
  KNodeId lhs = tf ? c.lhs : k_.nodes[c.lhs].inputs[0], rhs = tf ? c.rhs : k_.nodes[c.rhs].inputs[0];
  const DType half = bf ? DType::kBFloat16 : DType::kFloat16;
  std::string mma = tf   ? "mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32"
                    : bf ? "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
                         : "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32";
  const std::string elem = tf ? "unsigned" : "unsigned short";  // staged bit patterns
  shared_.push_back({elem, "As", BM * LD});
  shared_.push_back({elem, "Bs", BN * LD});
  shared_.push_back({"float", "Cs", BM * BN});
  const std::string it = w_.idx_t();
  auto S = [](int v) { return std::to_string(v); };
  w_.line("int lid = (int)threadIdx.x;");
  w_.line("int warp = lid >> 5, lane = lid & 31, g = lane >> 2, tg = lane & 3;");
  w_.line("int wm = warp / " + S(WARPS_N) + ", wn = warp % " + S(WARPS_N) + ";");
  w_.line(elem + " ra[" + S(PER_A) + "], rb[" + S(PER_B) + "];");
  w_.line("float acc[" + S(ACC) + "];");
  grid_loop("tile", tiles, idx_cast(d_.group_id()), idx_cast(d_.num_groups()));
  w_.line(absl::StrCat(it, " mtile = tile % ", w_.ilit(mt), ";"));
  w_.line(absl::StrCat(it, " rest = tile / ", w_.ilit(mt), ";"));
  w_.line(absl::StrCat(it, " ntile = rest % ", w_.ilit(nt), ";"));
  w_.line(absl::StrCat(it, " bt = rest / ", w_.ilit(nt), ";"));
  w_.unravel("bt", batch_axes);
  w_.line(absl::StrCat(it, " m0 = mtile * ", w_.ilit(BM), ";"));
  w_.line(absl::StrCat(it, " n0 = ntile * ", w_.ilit(BN), ";"));
  w_.line("#pragma unroll");
  w_.line("for (int q = 0; q < " + S(ACC) + "; ++q) acc[q] = 0.0f;");
  // An operand copyable 16 bytes at a time is staged 8 elements at a time with 16-byte loads (no
  // per-element address arithmetic or conversions).
  bool fast_a = !tf && copyable16(lhs, c.k_axis) && M % BM == 0 && K % BK == 0;
  bool fast_b = !tf && copyable16(rhs, c.n_axis) && N % BN == 0 && K % BK == 0;
  if (fast_a) w_.line("uint4 va[" + S(BM * BK / 8 / block) + "];");
  if (fast_b) w_.line("uint4 vb[" + S(BK * BN / 8 / block) + "];");
  // Loads one operand's part of a k slice into registers (16-bit patterns, zero outside): a
  // rows x cols block at (row0, col0) of a bound_r x bound_c matrix whose rows walk kernel axis
  // row_axis and columns col_axis; `p` names its registers (vp[] staged 8 at a time when `fast`,
  // rp[] otherwise) and index variables (pr, pc).
  auto load_operand = [&](const std::string& p, KNodeId id, bool fast, int row_axis, int col_axis, int other_axis,
                          const std::string& row0, const std::string& col0, int rows, int cols, int64_t bound_r,
                          int64_t bound_c) {
    const std::string r = p + "r", c = p + "c";
    w_.line("#pragma unroll");
    w_.open("for (int q = 0; q < " + S(rows * cols / (fast ? 8 : 1) / block) + "; ++q)");
    w_.line("int e = lid + q * " + S(block) + ";");
    if (fast) {
      w_.line(absl::StrCat(it, " ", r, " = ", row0, " + ", idx_cast("e / " + S(cols / 8)), ", ", c, " = ", col0, " + ",
                           idx_cast("(e % " + S(cols / 8) + ") * 8"), ";"));
    } else {
      w_.line(absl::StrCat(it, " ", r, " = ", row0, " + ", idx_cast("e / " + S(cols)), ", ", c, " = ", col0, " + ",
                           idx_cast("e % " + S(cols)), ";"));
    }
    w_.set_axis(row_axis, r);
    w_.set_axis(col_axis, c);
    w_.clear_axis(other_axis);
    if (fast) {
      w_.line(absl::StrCat("v", p, "[q] = *reinterpret_cast<const uint4*>(b", k_.nodes[id].buffer, " + ",
                           w_.element_index(k_.nodes[id].map), ");"));
    } else {
      w_.line(elem + " " + p + "x = 0;");
      w_.open(absl::StrCat("if (", r, " < ", w_.ilit(bound_r), " && ", c, " < ", w_.ilit(bound_c), ")"));
      if (tf) {
        w_.line(absl::StrCat("float ", p, "f = ", w_.eval(id), ";"));
        w_.line(absl::StrCat("asm(\"cvt.rna.tf32.f32 %0, %1;\" : \"=r\"(", p, "x) : \"f\"(", p, "f));"));
      } else {
        w_.line(absl::StrCat(p, "x = ", d_.to_storage(half, w_.eval(id)), ";"));
      }
      w_.close();
      w_.line("r" + p + "[q] = " + p + "x;");
    }
    w_.close();
  };
  auto load_slice = [&](const std::string& k0) {
    load_operand("a", lhs, fast_a, c.m_axis, c.k_axis, c.n_axis, "m0", k0, BM, BK, M, K);
    load_operand("b", rhs, fast_b, c.k_axis, c.n_axis, c.m_axis, k0, "n0", BK, BN, K, N);
    w_.clear_axis(c.k_axis);
  };
  load_slice(w_.ilit(0));
  w_.open(absl::StrCat("for (", it, " k0 = ", w_.ilit(0), "; k0 < ", w_.ilit(K), "; k0 += ", w_.ilit(BK), ")"));
  if (fast_a) {
    w_.line("#pragma unroll");
    w_.open("for (int q = 0; q < " + S(BM * BK / 8 / block) + "; ++q)");
    w_.line("int e = lid + q * " + S(block) + ";");
    w_.line("*reinterpret_cast<uint4*>(&As[(e / " + S(BK / 8) + ") * " + S(LD) + " + (e % " + S(BK / 8) + ") * 8]) = va[q];");
    w_.close();
  } else {
    w_.line("#pragma unroll");
    w_.open("for (int q = 0; q < " + S(PER_A) + "; ++q)");
    w_.line("int e = lid + q * " + S(block) + ";");
    w_.line("As[(e / " + S(BK) + ") * " + S(LD) + " + e % " + S(BK) + "] = ra[q];");
    w_.close();
  }
  if (fast_b) {
    w_.line("#pragma unroll");
    w_.open("for (int q = 0; q < " + S(BK * BN / 8 / block) + "; ++q)");
    w_.line("int e = lid + q * " + S(block) + ";");
    w_.line("int kk = e / " + S(BN / 8) + ", nv = (e % " + S(BN / 8) + ") * 8;");
    w_.line("const unsigned short* h = reinterpret_cast<const unsigned short*>(&vb[q]);");
    w_.line("#pragma unroll");
    w_.line("for (int t = 0; t < 8; ++t) Bs[(nv + t) * " + S(LD) + " + kk] = h[t];");
    w_.close();
  } else {
    w_.line("#pragma unroll");
    w_.open("for (int q = 0; q < " + S(PER_B) + "; ++q)");
    w_.line("int e = lid + q * " + S(block) + ";");
    w_.line("Bs[(e % " + S(BN) + ") * " + S(LD) + " + e / " + S(BN) + "] = rb[q];");
    w_.close();
  }
  w_.line("__syncthreads();");
  w_.open(absl::StrCat("if (k0 + ", w_.ilit(BK), " < ", w_.ilit(K), ")"));
  load_slice(absl::StrCat("(k0 + ", w_.ilit(BK), ")"));
  w_.close();
  w_.line("#pragma unroll");
  // Fragments (PTX ISA, mma.m16n8k16 / m16n8k8): thread (g, tg) holds k elements P*tg.. of
  // rows g and g + 8, and the same 4*P further along k.
  const std::string hk = S(4 * P);
  w_.open("for (int ks = 0; ks < " + S(BK) + "; ks += " + S(8 * P) + ")");
  w_.line("unsigned a[" + S(MI) + "][4], b[" + S(NJ) + "][2];");
  w_.line("#pragma unroll");
  w_.open("for (int i = 0; i < " + S(MI) + "; ++i)");
  w_.line("int base = (wm * " + S(WM) + " + i * 16 + g) * " + S(LD) + " + ks + tg * " + S(P) + ";");
  w_.line("a[i][0] = *reinterpret_cast<const unsigned*>(&As[base]);");
  w_.line("a[i][1] = *reinterpret_cast<const unsigned*>(&As[base + 8 * " + S(LD) + "]);");
  w_.line("a[i][2] = *reinterpret_cast<const unsigned*>(&As[base + " + hk + "]);");
  w_.line("a[i][3] = *reinterpret_cast<const unsigned*>(&As[base + 8 * " + S(LD) + " + " + hk + "]);");
  w_.close();
  w_.line("#pragma unroll");
  w_.open("for (int j = 0; j < " + S(NJ) + "; ++j)");
  w_.line("int base = (wn * " + S(WN) + " + j * 8 + g) * " + S(LD) + " + ks + tg * " + S(P) + ";");
  w_.line("b[j][0] = *reinterpret_cast<const unsigned*>(&Bs[base]);");
  w_.line("b[j][1] = *reinterpret_cast<const unsigned*>(&Bs[base + " + hk + "]);");
  w_.close();
  mma_tiles(mma, MI, NJ);
  w_.close();
  w_.line("__syncthreads();");
  w_.close();
  // Epilogue: the accumulators go through shared memory (thread (g, tg) holds rows g and g+8,
  // columns 2tg and 2tg+1 of every 16x8 tile), then every thread applies the elementwise
  // epilogue to consecutive outputs: coalesced stores and no unrolled copy of the epilogue.
  w_.line("#pragma unroll");
  w_.open("for (int q = 0; q < " + S(ACC) + "; ++q)");
  w_.line("int i = q / " + S(NJ * 4) + ", j = (q / 4) % " + S(NJ) + ", cc = q & 3;");
  w_.line("Cs[(wm * " + S(WM) + " + i * 16 + g + (cc >= 2 ? 8 : 0)) * " + S(BN) + " + wn * " + S(WN) +
          " + j * 8 + tg * 2 + (cc & 1)] = acc[q];");
  w_.close();
  w_.line("__syncthreads();");
  w_.open("for (int e = lid; e < " + S(BM * BN) + "; e += " + S(block) + ")");
  w_.line(absl::StrCat(it, " om = m0 + ", idx_cast("e / " + S(BN)), ";"));
  w_.line(absl::StrCat(it, " on = n0 + ", idx_cast("e % " + S(BN)), ";"));
  w_.open(absl::StrCat("if (om < ", w_.ilit(M), " && on < ", w_.ilit(N), ")"));
  w_.set_axis(c.m_axis, "om");
  w_.set_axis(c.n_axis, "on");
  w_.bind(c.reduce, "Cs[e]");
  for (const ir::Store& st : k_.stores) w_.store(st);
  w_.close();
  w_.close();
  w_.line("__syncthreads();");
  w_.close();
  out->grid[0] = groups_for(tiles, 1);
  out->strategy = tf ? "contraction: tensor cores in TF32 (mma.sync m16n8k8), 128x64 tiles of 8 warps (32x32 each), 16-deep k slices"
                     : "contraction: tensor cores (mma.sync m16n8k16), 128x64 tiles of 8 warps (32x32 each), 32-deep k slices";
  return block;
}

}  // namespace kiln::codegen::gpu::render_detail

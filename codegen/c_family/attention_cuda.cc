// Fused attention on CUDA (sm_80 and later): one kernel computes softmax(scale * q k^T + bias) v
// for a tile of 64 queries without writing scores or probabilities anywhere.
//
//   - 8 warps per block, 16 query rows each (128 queries: every k/v tile brought into shared
//     memory serves 128 queries, which halves the L2 traffic of 64; KILN_CUDA_ATTENTION_ROWS=64
//     gives 4 warps); the q tile is loaded once and kept in registers as mma.sync A fragments
//     (ldmatrix from a swizzled shared tile).
//   - k and v stream through shared memory in 64-key tiles, double-buffered with cp.async
//     (16-byte copies, zero-filled past the last key) when the operand is a plain 16-byte aligned
//     strided load contiguous along the head dim; any other operand (a computed value, a masked
//     or unaligned view) is evaluated element by element into the same tiles.
//   - Scores S = Q K^T and the output O += P V use mma.sync m16n8k16 (bf16 or f16, f32
//     accumulation); the probabilities P go from the score accumulators straight into A
//     fragments (rounded to the input dtype), V through ldmatrix.trans.
//   - Online softmax in base 2 with per-row running max and sum; a causal mask skips key tiles
//     past the diagonal and the grid starts with the longest query tiles; a bias is evaluated
//     per score through the shared expression writer (a loaded mask, or one computed from
//     indices); a row with no finite score ends as 0/0 = NaN, like the written-out form.
//   - The epilogue binds the attention value per output element and runs the kernel's stores,
//     so elementwise consumers fused into the kernel are applied in registers.
#include "codegen/c_family/renderer.h"

namespace kiln::codegen::gpu::render_detail {

namespace {

constexpr int kBC = 64;

// Queries per block (16 per warp).
int rows_knob() { return support::options().cuda_attention_rows == 64 ? 64 : 128; }

const char* kAttentionHelpers = R"(#ifndef KILN_ATTN_HELPERS
#define KILN_ATTN_HELPERS
#define KILN_NEG_INF __int_as_float(0xff800000)
// Two floats as one register of two 16-bit values, `lo` in the low half (the lower column).
__device__ __forceinline__ unsigned kiln_pack_bf(float lo, float hi) {
  unsigned r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
__device__ __forceinline__ unsigned kiln_pack_h(float lo, float hi) {
  unsigned r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
__device__ __forceinline__ float kiln_ex2(float x) {  // 2^x, subnormal results flushed to 0
  float r;
  asm("ex2.approx.ftz.f32 %0, %1;" : "=f"(r) : "f"(x));
  return r;
}
__device__ __forceinline__ unsigned kiln_smem_addr(const void* p) {
  return (unsigned)__cvta_generic_to_shared(p);
}
__device__ __forceinline__ void kiln_cp16(unsigned dst, const void* src, bool full) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;" :: "r"(dst), "l"(src), "r"(full ? 16 : 0) : "memory");
}
__device__ __forceinline__ void kiln_cp_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
__device__ __forceinline__ void kiln_cp_wait1() { asm volatile("cp.async.wait_group 1;" ::: "memory"); }
__device__ __forceinline__ void kiln_cp_wait0() { asm volatile("cp.async.wait_group 0;" ::: "memory"); }
__device__ __forceinline__ void kiln_ldsm4(unsigned a, unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(a));
}
__device__ __forceinline__ void kiln_ldsm4t(unsigned a, unsigned& r0, unsigned& r1, unsigned& r2, unsigned& r3) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];"
               : "=r"(r0), "=r"(r1), "=r"(r2), "=r"(r3) : "r"(a));
}
// Element (row, col) of a tile with `cols` 16-bit columns: 16-byte chunks XOR-swizzled by row
// so that the 8 rows an ldmatrix reads fall in different banks.
__device__ __forceinline__ int kiln_swz(int row, int col, int cols) {
  return row * cols + ((((col >> 3) ^ (row & 7))) << 3) + (col & 7);
}
#endif
)";

}  // namespace

const char* attention_device_helpers() { return kAttentionHelpers; }

// The attention node of the kernel, or -1.
KNodeId Renderer::attention_node() const {
  for (size_t i = 0; i < k_.nodes.size(); ++i)
    if (k_.nodes[i].op == Op::kAttention) return KNodeId(i);
  return -1;
}

absl::StatusOr<int> Renderer::attention(KernelSource* out) {
  std::string sm90_why;
  if (attention_sm90_applies(&sm90_why)) return attention_sm90(out);
  const KNodeId an = attention_node();
  const ir::KNode& a = k_.nodes[an];
  const int r = int(k_.shape.size());
  const int sq_ax = r - 4, dv_ax = r - 3, sk_ax = r - 2, d_ax = r - 1;
  const int64_t Sq = k_.shape[sq_ax], Dv = k_.shape[dv_ax], Sk = k_.shape[sk_ax], D = k_.shape[d_ax];
  const DType dt = k_.nodes[a.inputs[0]].dtype;
  if (d_.kind() != Dialect::kCuda || (D != 64 && D != 128) || Dv != D ||
      (dt != DType::kBFloat16 && dt != DType::kFloat16) || t_.compute_capability < 80)
    return absl::InternalError(absl::StrCat("attention kernel: no fused kernel for ", dtype_name(dt), " D=", D, " Dv=",
                                            Dv, " on this target (passes/attention.cc should have expanded it)"));
  const bool bf = dt == DType::kBFloat16;
  const int kBR = rows_knob(), kThreads = 2 * kBR;
  dsmem_threads_ = kThreads;
  const bool causal = a.ints[0] != 0;
  const bool has_bias = a.inputs.size() > 3;
  const double scale = a.scalar.as_double();
  auto S = [](int64_t v) { return std::to_string(v); };
  const std::string it = w_.idx_t();
  std::vector<int> batch_axes;
  int64_t batch = 1;
  for (int ax = 0; ax < sq_ax; ++ax) {
    batch_axes.push_back(ax);
    batch *= k_.shape[ax];
  }
  const int64_t MT = ceil_div(Sq, kBR), NT = ceil_div(Sk, kBC), tiles = batch * MT;
  const std::string mma = bf ? "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32"
                             : "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32";
  helpers_ = kAttentionHelpers;

  const bool fast_q = copyable16(a.inputs[0], d_ax), fast_k = copyable16(a.inputs[1], d_ax),
             fast_v = copyable16(a.inputs[2], dv_ax);
  // Emits the loads of a rows x D tile of operand `id` into shared `dst` (swizzled): rows walk
  // `row_axis` from `row0` (bounded by `bound`), columns `col_axis`.
  auto load_tile = [&](KNodeId id, bool fast, int row_axis, int col_axis, const std::string& row0, int64_t bound,
                       const std::string& dst, int rows) {
    w_.set_axis(sq_ax, "0");
    w_.set_axis(sk_ax, "0");
    w_.set_axis(d_ax, "0");
    w_.set_axis(dv_ax, "0");
    const ir::KNode& n = k_.nodes[id];
    if (fast) {
      w_.line("#pragma unroll");
      w_.open("for (int q = 0; q < " + S(rows * D / 8 / kThreads) + "; ++q)");
      w_.line("const int e = tid + q * " + S(kThreads) + ", tr = e / " + S(D / 8) + ", tc = (e % " + S(D / 8) + ") * 8;");
      w_.line(absl::StrCat(it, " gr = ", row0, " + ", idx_cast("tr"), ";"));
      w_.line("const bool in = gr < " + w_.ilit(bound) + ";");
      w_.line(absl::StrCat(it, " cr = in ? gr : ", w_.ilit(0), ";"));
      w_.line(absl::StrCat(it, " cc = ", idx_cast("tc"), ";"));
      w_.set_axis(row_axis, "cr");
      w_.set_axis(col_axis, "cc");
      w_.line(absl::StrCat("kiln_cp16(kiln_smem_addr(", dst, " + kiln_swz(tr, tc, ", D, ")), b", n.buffer, " + ",
                           w_.element_index(n.map), ", in);"));
      w_.close();
    } else {
      w_.open("for (int e = tid; e < " + S(rows * D) + "; e += " + S(kThreads) + ")");
      w_.line("const int tr = e / " + S(D) + ", tc = e % " + S(D) + ";");
      w_.line(absl::StrCat(it, " gr = ", row0, " + ", idx_cast("tr"), ";"));
      w_.line(absl::StrCat(it, " cc = ", idx_cast("tc"), ";"));
      w_.line("unsigned short h = 0;");
      w_.open("if (gr < " + w_.ilit(bound) + ")");
      w_.set_axis(row_axis, "gr");
      w_.set_axis(col_axis, "cc");
      w_.line(absl::StrCat("h = ", d_.to_storage(dt, w_.eval(id)), ";"));
      w_.close();
      w_.line(dst + "[kiln_swz(tr, tc, " + S(D) + ")] = h;");
      w_.close();
    }
  };

  w_.line("unsigned short* Qs = reinterpret_cast<unsigned short*>(kiln_dsmem);");
  w_.line("unsigned short* Ks = Qs + " + S(kBR * D) + ";");
  w_.line("unsigned short* Vs = Ks + " + S(2 * kBC * D) + ";");
  w_.line("const int tid = threadIdx.x, warp = tid / 32, lane = tid % 32, g = lane / 4, tq = lane % 4;");
  // A symbolic batch (passes/symbolic.h) reads its size: the text serves every batch size.
  grid_loop("tile", k_.any_symbolic() ? absl::StrCat("(", w_.extent_product(batch_axes), " * ", w_.ilit(MT), ")") : w_.ilit(tiles),
            idx_cast("blockIdx.x"), idx_cast("gridDim.x"));
  // Longest query tiles first (causal rows near the end see the most keys).
  w_.line(absl::StrCat(it, " mt = ", w_.ilit(MT - 1), " - tile % ", w_.ilit(MT), ";"));
  w_.line(absl::StrCat(it, " bt = tile / ", w_.ilit(MT), ";"));
  w_.unravel("bt", batch_axes);
  w_.line(absl::StrCat(it, " m0 = mt * ", w_.ilit(kBR), ";"));
  w_.line("__syncthreads();");  // the previous tile's readers of Qs/Ks/Vs are done
  load_tile(a.inputs[0], fast_q, sq_ax, d_ax, "m0", Sq, "Qs", kBR);
  w_.line("kiln_cp_commit();");
  const std::string ntiles =
      causal ? absl::StrCat("(int)min(", w_.ilit(NT), ", (m0 + ", w_.ilit(kBR + kBC - 1), ") / ", w_.ilit(kBC), ")")
             : S(NT);
  w_.line("const int nkv = " + ntiles + ";");
  auto load_kv = [&](const std::string& j, const std::string& buf) {
    const std::string n0 = absl::StrCat("(", idx_cast(j), " * ", w_.ilit(kBC), ")");
    load_tile(a.inputs[1], fast_k, sk_ax, d_ax, n0, Sk, "(Ks + " + buf + " * " + S(kBC * D) + ")", kBC);
    load_tile(a.inputs[2], fast_v, sk_ax, dv_ax, n0, Sk, "(Vs + " + buf + " * " + S(kBC * D) + ")", kBC);
    w_.line("kiln_cp_commit();");
  };
  load_kv("0", "0");
  w_.line("kiln_cp_wait1();");
  w_.line("__syncthreads();");
  // Q fragments: rows warp*16 .. +15, every k16 step of D.
  w_.line("unsigned qf[" + S(D / 16) + "][4];");
  w_.line("#pragma unroll");
  w_.open("for (int kk = 0; kk < " + S(D / 16) + "; ++kk)");
  w_.line("kiln_ldsm4(kiln_smem_addr(Qs + kiln_swz(warp * 16 + (lane % 16), kk * 16 + (lane / 16) * 8, " + S(D) +
          ")), qf[kk][0], qf[kk][1], qf[kk][2], qf[kk][3]);");
  w_.close();
  w_.line("float o[" + S(D / 8) + "][4];");
  w_.line("#pragma unroll");
  w_.line("for (int x = 0; x < " + S(D / 8) + "; ++x) o[x][0] = o[x][1] = o[x][2] = o[x][3] = 0.0f;");
  w_.line("float mrow[2] = {KILN_NEG_INF, KILN_NEG_INF}, lrow[2] = {0.0f, 0.0f};");
  w_.line(absl::StrCat(it, " row0 = m0 + ", idx_cast("warp * 16 + g"), ";"));
  w_.open("for (int j = 0; j < nkv; ++j)");
  w_.line("const int buf = j & 1;");
  w_.open("if (j + 1 < nkv)");
  load_kv("(j + 1)", "((j + 1) & 1)");
  w_.line("kiln_cp_wait1();");
  w_.close();
  w_.line("else kiln_cp_wait0();");
  w_.line("__syncthreads();");
  // Causal: a warp whose rows all precede this key tile has nothing to add (its scores are all
  // masked); it skips the math but keeps to the block's barriers.
  if (causal) w_.open(absl::StrCat("if (", idx_cast("j * " + S(kBC)), " <= row0 + ", w_.ilit(15), " - ", idx_cast("g"), ")"));
  w_.line("const unsigned short* Kb = Ks + buf * " + S(kBC * D) + ";");
  w_.line("const unsigned short* Vb = Vs + buf * " + S(kBC * D) + ";");
  // S = Q K^T: 8 n-tiles of 8 keys.
  w_.line("float s[" + S(kBC / 8) + "][4];");
  w_.line("#pragma unroll");
  w_.line("for (int x = 0; x < " + S(kBC / 8) + "; ++x) s[x][0] = s[x][1] = s[x][2] = s[x][3] = 0.0f;");
  w_.line("#pragma unroll");
  w_.open("for (int kk = 0; kk < " + S(D / 16) + "; ++kk)");
  w_.line("#pragma unroll");
  w_.open("for (int np = 0; np < " + S(kBC / 16) + "; ++np)");
  w_.line("unsigned b0, b1, b2, b3;");
  w_.line("kiln_ldsm4(kiln_smem_addr(Kb + kiln_swz(np * 16 + (lane % 8) + (lane / 16) * 8, kk * 16 + ((lane / 8) % 2) * 8, " +
          S(D) + ")), b0, b1, b2, b3);");
  for (int h = 0; h < 2; ++h) {
    const std::string x = h ? "np * 2 + 1" : "np * 2", c0 = h ? "b2" : "b0", c1 = h ? "b3" : "b1";
    w_.line(absl::StrCat("asm volatile(\"", mma, " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\" : \"+f\"(s[",
                         x, "][0]), \"+f\"(s[", x, "][1]), \"+f\"(s[", x, "][2]), \"+f\"(s[", x,
                         "][3]) : \"r\"(qf[kk][0]), \"r\"(qf[kk][1]), \"r\"(qf[kk][2]), \"r\"(qf[kk][3]), \"r\"(", c0,
                         "), \"r\"(", c1, "));"));
  }
  w_.close();
  w_.close();
  // Scores in base 2, bias, masks.
  const std::string scale2 = c_float_literal(double(float(scale * 1.4426950408889634)), false, "f");
  w_.line("#pragma unroll");
  w_.open("for (int x = 0; x < " + S(kBC / 8) + "; ++x)");
  w_.line("#pragma unroll");
  w_.open("for (int c = 0; c < 4; ++c)");
  w_.line(absl::StrCat(it, " qi = row0 + ", idx_cast("(c >> 1) * 8"), ";"));
  w_.line(absl::StrCat(it, " kj = ", idx_cast("j * " + S(kBC) + " + x * 8 + tq * 2 + (c & 1)"), ";"));
  w_.line(std::string("float v = s[x][c] * ") + scale2 + ";");
  if (has_bias) {
    w_.open("if (qi < " + w_.ilit(Sq) + " && kj < " + w_.ilit(Sk) + ")");
    w_.set_axis(sq_ax, "qi");
    w_.set_axis(sk_ax, "kj");
    w_.set_axis(d_ax, "0");
    w_.set_axis(dv_ax, "0");
    w_.line("v += (" + d_.cast(k_.nodes[a.inputs[3]].dtype, DType::kFloat32, w_.eval(a.inputs[3])) +
            ") * 1.44269504f;");
    w_.close();
  }
  w_.line(std::string("if (kj >= ") + w_.ilit(Sk) + (causal ? " || kj > qi" : "") + ") v = KILN_NEG_INF;");
  w_.line("s[x][c] = v;");
  w_.close();
  w_.close();
  // Online softmax: thread (g, tq) holds rows g and g + 8 of its warp; a row lives in one quad.
  w_.line("#pragma unroll");
  w_.open("for (int h = 0; h < 2; ++h)");
  w_.line("float mx = KILN_NEG_INF;");
  w_.line("#pragma unroll");
  w_.line("for (int x = 0; x < " + S(kBC / 8) + "; ++x) mx = fmaxf(mx, fmaxf(s[x][2 * h], s[x][2 * h + 1]));");
  w_.line("mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));");
  w_.line("mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));");
  w_.line("const float mnew = fmaxf(mrow[h], mx);");
  w_.line("const float base = mnew == KILN_NEG_INF ? 0.0f : mnew;");
  w_.line("const float corr = exp2f(mrow[h] - base);");
  w_.line("mrow[h] = mnew;");
  w_.line("float sum = 0.0f;");
  w_.line("#pragma unroll");
  w_.open("for (int x = 0; x < " + S(kBC / 8) + "; ++x)");
  w_.line("s[x][2 * h] = exp2f(s[x][2 * h] - base);");
  w_.line("s[x][2 * h + 1] = exp2f(s[x][2 * h + 1] - base);");
  w_.line("sum += s[x][2 * h] + s[x][2 * h + 1];");
  w_.close();
  w_.line("lrow[h] = lrow[h] * corr + sum;");
  w_.line("#pragma unroll");
  w_.line("for (int x = 0; x < " + S(D / 8) + "; ++x) { o[x][2 * h] *= corr; o[x][2 * h + 1] *= corr; }");
  w_.close();
  // O += P V: P from the score registers (k = keys), V via ldmatrix.trans (n = head dim).
  const std::string pack = bf ? "kiln_pack_bf" : "kiln_pack_h";
  w_.line("#pragma unroll");
  w_.open("for (int kk = 0; kk < " + S(kBC / 16) + "; ++kk)");
  w_.line("unsigned pa0 = " + pack + "(s[2 * kk][0], s[2 * kk][1]), pa1 = " + pack + "(s[2 * kk][2], s[2 * kk][3]);");
  w_.line("unsigned pa2 = " + pack + "(s[2 * kk + 1][0], s[2 * kk + 1][1]), pa3 = " + pack +
          "(s[2 * kk + 1][2], s[2 * kk + 1][3]);");
  w_.line("#pragma unroll");
  w_.open("for (int dp = 0; dp < " + S(D / 16) + "; ++dp)");
  w_.line("unsigned b0, b1, b2, b3;");
  w_.line("kiln_ldsm4t(kiln_smem_addr(Vb + kiln_swz(kk * 16 + (lane % 8) + ((lane / 8) % 2) * 8, dp * 16 + (lane / 16) * 8, " +
          S(D) + ")), b0, b1, b2, b3);");
  for (int h = 0; h < 2; ++h) {
    const std::string x = h ? "dp * 2 + 1" : "dp * 2", c0 = h ? "b2" : "b0", c1 = h ? "b3" : "b1";
    w_.line(absl::StrCat("asm volatile(\"", mma, " {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\" : \"+f\"(o[",
                         x, "][0]), \"+f\"(o[", x, "][1]), \"+f\"(o[", x, "][2]), \"+f\"(o[", x,
                         "][3]) : \"r\"(pa0), \"r\"(pa1), \"r\"(pa2), \"r\"(pa3), \"r\"(", c0, "), \"r\"(", c1, "));"));
  }
  w_.close();
  w_.close();
  if (causal) w_.close();
  w_.line("__syncthreads();");  // this buffer is refilled two iterations on
  w_.close();
  attention_epilogue(an, "o[x][c]");
  w_.close();  // tile loop

  out->grid[0] = uint32_t(std::max<int64_t>(1, std::min<int64_t>(tiles, max_groups_)));
  out->shared_bytes = uint32_t((kBR * D + 4 * kBC * D) * 2);
  out->strategy = absl::StrCat("attention: flash (mma.sync m16n8k16 ", bf ? "bf16" : "f16", "), ", kBR,
                               " queries x ", kBC, "-key tiles, ", kBR / 16, " warps, q/k/v ", fast_q ? "cp.async" : "computed", "/",
                               fast_k ? "cp.async" : "computed", "/", fast_v ? "cp.async" : "computed",
                               causal ? ", causal tiles skipped" : "", has_bias ? ", bias per score" : "",
                               sm90_why.empty() ? "" : "; not sm_90a: ", sm90_why);
  return kThreads;
}

// The attention kernels' epilogue, shared by the mma.sync and Hopper kernels: the row sums meet
// across the quad (thread (g, tq) of a warp holds rows row0 and row0 + 8, head-dim columns
// 8x + 2tq (+1)); each element O / l is bound as the attention's value and the kernel's stores
// run, so fused elementwise consumers apply in registers. `acc` reads accumulator (x, c).
void Renderer::attention_epilogue(KNodeId an, const std::string& acc) {
  const int r = int(k_.shape.size());
  const int sq_ax = r - 4, dv_ax = r - 3, sk_ax = r - 2, d_ax = r - 1;
  const std::string it = w_.idx_t();
  w_.line("#pragma unroll");
  w_.open("for (int h = 0; h < 2; ++h)");
  w_.line("lrow[h] += __shfl_xor_sync(0xffffffffu, lrow[h], 1);");
  w_.line("lrow[h] += __shfl_xor_sync(0xffffffffu, lrow[h], 2);");
  w_.close();
  w_.line("#pragma unroll");
  w_.open(absl::StrCat("for (int x = 0; x < ", k_.shape[dv_ax] / 8, "; ++x)"));
  w_.line("#pragma unroll");
  w_.open("for (int c = 0; c < 4; ++c)");
  w_.line(absl::StrCat(it, " oi = row0 + ", idx_cast("(c >> 1) * 8"), ";"));
  w_.line(absl::StrCat(it, " od = ", idx_cast("x * 8 + tq * 2 + (c & 1)"), ";"));
  w_.open("if (oi < " + w_.ilit(k_.shape[sq_ax]) + ")");
  w_.set_axis(sq_ax, "oi");
  w_.set_axis(dv_ax, "od");
  w_.set_axis(sk_ax, "0");
  w_.set_axis(d_ax, "0");
  w_.line("const float val = " + acc + " / lrow[c >> 1];");
  w_.bind(an, "val");
  for (const ir::Store& st : k_.stores) w_.store(st);
  w_.close();
  w_.close();
  w_.close();
}

std::string Renderer::dsmem_kernel_open(const std::string& name) const {
  std::string p;
  for (const BufferParam& b : w_.params())
    absl::StrAppend(&p, p.empty() ? "" : ", ", b.written ? "" : "const ", d_.storage_type(b.dtype), b.aliased ? "* " : "* __restrict__ ",
                    DialectOps::buffer_name(b.id));
  for (int slot : w_.scalar_params()) absl::StrAppend(&p, ", ", d_.param_arg(slot));
  return absl::StrCat(helpers_, "extern \"C\" __global__ void __launch_bounds__(", dsmem_threads_, ") ", name, "(", p,
                      ") {\n  extern __shared__ __align__(128) unsigned char kiln_dsmem[];\n");
}

}  // namespace kiln::codegen::gpu::render_detail

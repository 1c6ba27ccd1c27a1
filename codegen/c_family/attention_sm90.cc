// Fused attention on Hopper (sm_90a): softmax(scale * q k^T + bias) v for 128 queries per block,
// with the tensor copy engine and wgmma instead of cp.async and mma.sync (attention_cuda.cc).
//
//   - q, k and v are plain strided views of 16-bit buffers, contiguous along the head dim: one
//     tensor map each (dims: head dim, rows, the batch axes that have a stride), 64-column boxes
//     with the 128-byte swizzle wgmma reads; rows past the end arrive as zeros.
//   - Warpgroup 0 produces: one thread loads the q tile and the k tiles of 128 keys, another the
//     v tiles, into a ring of stages; a k tile is released once its scores have landed, a v tile
//     once its product has, so k runs ahead of v (separate full and empty barriers per side).
//   - Warpgroups 1 and 2 consume, 64 queries each: S = Q K^T with wgmma m64n128k16 (both operands
//     from shared memory, k-major), online softmax in base 2 on the accumulators, then
//     O += P V with wgmma m64nDk16 taking P from registers (the accumulator layout of S is the
//     A-fragment layout, rounded to the input dtype) and V from shared memory, n-major. By
//     default the scores of key tile j are issued with the product of tile j-1 behind them, so
//     the softmax of tile j runs while that product does, and the two warpgroups take turns at
//     the tensor cores (named barriers): KILN_CUDA_SM90_ATTENTION_SCHEDULE picks plain,
//     pipelined or pingpong.
//   - Masks (keys past the end, causal, a bias evaluated per score) are applied only on the key
//     tiles that need them; a causal block loads no key tile past its last query.
//   - Each block takes two 128-query tiles of one batch entry, MT-1-p then p (equal work under a
//     causal mask), loading the second's q while the first finishes; the epilogue binds the
//     attention value per output element and runs the kernel's stores, as attention_cuda.cc.
// Whatever this path cannot fetch with the copy engine (a computed or masked operand, a stride
// that is not a multiple of 16 bytes) runs on the mma.sync kernel, which KILN_DEBUG=2 names.
#include "codegen/c_family/renderer.h"

namespace kiln::codegen::gpu::render_detail {

namespace {

constexpr int kBR = 128, kBC = 128, kThreads = 384;

struct AttnAxes {
  int sq, dv, sk, d;
  std::vector<int> batch;  // leading axes
};

AttnAxes attn_axes(const ir::Kernel& k) {
  const int r = int(k.shape.size());
  AttnAxes a{r - 4, r - 3, r - 2, r - 1, {}};
  for (int ax = 0; ax < r - 4; ++ax) a.batch.push_back(ax);
  return a;
}

// An operand of the attention as the copy engine sees it: `map` (dims: head dim, rows, batch
// axes with a stride) and which kernel axes those batch dims are.
struct AttnOperand {
  TensorMapSpec map;
  std::vector<int> batch_axes;
};

// Fills `op` for operand `id`: rows along `row_axis` (boxes of `box_rows`), contiguous along
// `col_axis`, constant along `other` axes; false with a reason otherwise.
bool tma_operand(const ir::Program& p, const ir::Kernel& k, KNodeId id, const char* which, int row_axis, int col_axis,
                 int box_rows, const std::vector<int>& other, const std::vector<int>& batch_axes, AttnOperand* op, std::string* why) {
  const ir::KNode& n = k.nodes[id];
  if (!tma_plain_load(p, k, id, which, why)) return false;
  const ir::View& v = n.map.views[0];
  for (int a : other)
    if (v.strides[a] != 0 && k.shape[a] > 1) {
      *why = absl::StrCat(which, " varies along an axis it should not");
      return false;
    }
  auto ok16 = [](int64_t s) { return s > 0 && s % 8 == 0; };  // a positive multiple of 16 bytes
  // A single row may have any stride: the engine reads only row 0.
  const int64_t row_stride = k.shape[row_axis] == 1 ? 8 * ceil_div(k.shape[col_axis], 8) : v.strides[row_axis];
  if (v.strides[col_axis] != 1 || !ok16(row_stride)) {
    *why = absl::StrCat(which, " has strides ", v.strides[row_axis], " (rows) and ", v.strides[col_axis],
                        " (head dim): the copy engine needs the head dim contiguous and rows 16-byte aligned");
    return false;
  }
  if (v.offset < 0 || v.offset % 8 != 0) {
    *why = absl::StrCat(which, " starts at element ", v.offset, " (the copy engine needs 16-byte alignment)");
    return false;
  }
  TensorMapSpec& m = op->map;
  m.buffer = n.buffer;
  m.elem_bytes = 2;
  m.bf16 = n.dtype == DType::kBFloat16;
  m.offset = v.offset;
  m.swizzle = 128;
  m.dims = {k.shape[col_axis], k.shape[row_axis]};
  m.strides = {row_stride};
  m.box = {64u, uint32_t(box_rows)};
  for (int a : batch_axes) {
    if (k.shape[a] == 1 || v.strides[a] == 0) continue;  // broadcast: not a dim of the map
    if (!ok16(v.strides[a])) {
      *why = absl::StrCat(which, " has batch stride ", v.strides[a], " (the copy engine needs a positive multiple of 8)");
      return false;
    }
    m.dims.push_back(k.shape[a]);
    m.strides.push_back(v.strides[a]);
    m.box.push_back(1);
    op->batch_axes.push_back(a);
  }
  if (m.dims.size() > 5) {
    *why = absl::StrCat(which, " needs ", m.dims.size(), " tensor dims (the copy engine takes 5)");
    return false;
  }
  for (int64_t d : m.dims)
    if (d >= (int64_t(1) << 31)) {
      *why = absl::StrCat(which, " has a dim of ", d, " (over 2^31)");
      return false;
    }
  return true;
}

// Bytes of the q tile, of one k (or v) tile, and the stages that fit in `shared` bytes.
int q_bytes(int64_t D) { return int(kBR * D * 2); }
int kv_bytes(int64_t D) { return int(kBC * D * 2); }
int stages_for(int64_t D, int64_t shared) {
  return int(std::min<int64_t>(4, (shared - q_bytes(D) - 2048) / (2 * kv_bytes(D))));
}

// How the consumer warpgroups order their work (KILN_CUDA_SM90_ATTENTION_SCHEDULE): "plain" (each
// key tile's two products waited for in turn), "pipelined" (the next tile's scores issued before
// the previous tile's P V is waited for), "pingpong" (the default: pipelined, and the two
// warpgroups take turns issuing their products). On an H200, W9: 391, 408 and 403 TFLOP/s
// (bench/results/h200-2026-11-26-attention-sm90, call6).
std::string schedule(const ir::Kernel& k) {
  const std::string tuned = config_value(k.config, "schedule");
  if (tuned == "plain" || tuned == "pipelined" || tuned == "pingpong") return tuned;
  const std::string& s = support::options().cuda_sm90_attention_schedule;
  return s.empty() ? "pingpong" : s;
}

// Blocks per cluster: 2 with KILN_CUDA_SM90_ATTENTION_CLUSTER=2 or a tuned "cluster=2", where
// the query tiles pair up in fours (MT % 4 == 0); else 1.
int cluster_of(const ir::Kernel& k, int64_t MT) {
  const std::string tuned = config_value(k.config, "cluster");
  const bool want = tuned.empty() ? support::options().cuda_sm90_attention_cluster == 2 : tuned == "2";
  return want && MT % 4 == 0 ? 2 : 1;
}

}  // namespace

bool Renderer::attention_sm90_applies(std::string* why) const {
  if (d_.kind() != Dialect::kCuda || t_.compute_capability != 90) return false;
  if (!support::options().cuda_sm90_attention) {
    *why = "KILN_CUDA_SM90_ATTENTION=0";
    return false;
  }
  const ir::KNode& a = k_.nodes[attention_node()];
  const AttnAxes ax = attn_axes(k_);
  const int64_t D = k_.shape[ax.d];
  if (k_.shape[ax.sq] < 1 || k_.shape[ax.sk] < 1) {
    *why = "no queries or no keys";
    return false;
  }
  if ((D != 64 && D != 128) || k_.shape[ax.dv] != D) {
    *why = absl::StrCat("head dims ", D, " and ", k_.shape[ax.dv]);
    return false;
  }
  if (stages_for(D, t_.shared_memory) < 2) {
    *why = absl::StrCat("the target's ", t_.shared_memory, " bytes of shared memory hold fewer than 2 stages");
    return false;
  }
  int64_t blocks = ceil_div(ceil_div(k_.shape[ax.sq], kBR), 2);
  for (int b : ax.batch) blocks *= k_.shape[b];
  if (blocks >= (int64_t(1) << 31)) {
    *why = absl::StrCat(blocks, " blocks of query tiles (over 2^31)");
    return false;
  }
  AttnOperand q, k, v;
  return tma_operand(p_, k_, a.inputs[0], "q", ax.sq, ax.d, kBR, {ax.sk, ax.dv}, ax.batch, &q, why) &&
         tma_operand(p_, k_, a.inputs[1], "k", ax.sk, ax.d, kBC, {ax.sq, ax.dv}, ax.batch, &k, why) &&
         tma_operand(p_, k_, a.inputs[2], "v", ax.sk, ax.dv, kBC, {ax.sq, ax.d}, ax.batch, &v, why);
}

std::vector<std::string> Renderer::attention_sm90_candidates(std::string* shape_class) const {
  std::string why;
  if (attention_node() < 0 || !attention_sm90_applies(&why)) return {};
  const ir::KNode& a = k_.nodes[attention_node()];
  const AttnAxes ax = attn_axes(k_);
  const int64_t Sq = k_.shape[ax.sq], Sk = k_.shape[ax.sk], D = k_.shape[ax.d], MT = ceil_div(Sq, kBR);
  int64_t batch = 1;
  for (int b : ax.batch) batch *= k_.shape[b];
  auto config = [](const std::string& sched, int cluster) {
    return absl::StrCat("schedule=", sched, " cluster=", cluster);
  };
  std::vector<std::string> out = {config(schedule(k_), cluster_of(k_, MT))};
  for (const char* sched : {"pingpong", "pipelined", "plain"})
    for (int cluster : {1, 2}) {
      if (cluster == 2 && MT % 4 != 0) continue;
      const std::string s = config(sched, cluster);
      if (std::find(out.begin(), out.end(), s) == out.end()) out.push_back(s);
    }
  *shape_class = absl::StrCat("cuda sm_90a attention ", dtype_name(k_.nodes[a.inputs[0]].dtype), " batch ", batch, " sq ",
                              Sq, " sk ", Sk, " d ", D, a.ints[0] ? " causal" : "", a.inputs.size() > 3 ? " bias" : "");
  return out;
}

int Renderer::attention_sm90(KernelSource* out) {
  const KNodeId an = attention_node();
  const ir::KNode& a = k_.nodes[an];
  const AttnAxes ax = attn_axes(k_);
  const int64_t Sq = k_.shape[ax.sq], Sk = k_.shape[ax.sk], D = k_.shape[ax.d];
  const bool bf = k_.nodes[a.inputs[0]].dtype == DType::kBFloat16;
  const bool causal = a.ints[0] != 0, has_bias = a.inputs.size() > 3;
  const double scale = a.scalar.as_double();
  int64_t batch = 1;
  for (int b : ax.batch) batch *= k_.shape[b];
  AttnOperand Q, K, V;
  std::string unused;
  tma_operand(p_, k_, a.inputs[0], "q", ax.sq, ax.d, kBR, {ax.sk, ax.dv}, ax.batch, &Q, &unused);
  tma_operand(p_, k_, a.inputs[1], "k", ax.sk, ax.d, kBC, {ax.sq, ax.dv}, ax.batch, &K, &unused);
  tma_operand(p_, k_, a.inputs[2], "v", ax.sk, ax.dv, kBC, {ax.sq, ax.d}, ax.batch, &V, &unused);
  sm90_ = true;
  const int S = stages_for(D, t_.shared_memory), qb = q_bytes(D), kvb = kv_bytes(D), chunks = int(D / 64);
  // Each block computes a pair of query tiles of one batch entry, MT-1-p then p: under a causal
  // mask every pair holds the same number of key tiles, and the producer loads the second
  // tile's q, k and v while the consumers finish the first.
  const int64_t MT = ceil_div(Sq, kBR), NT = ceil_div(Sk, kBC), P = ceil_div(MT, 2), blocks = batch * P;
  // KILN_CUDA_SM90_ATTENTION_CLUSTER=2: blocks of pairs 2i and 2i+1 form a cluster that shares
  // every k and v tile (each loads half of it, multicast into both), halving what L2 serves.
  // Both walk the longer of their two key ranges (a causal tile past its diagonal is all masked).
  const int C = cluster_of(k_, MT);
  sm90_maps_ = 3;
  sm90_cluster_ = C;
  helpers_ = attention_device_helpers();
  K.map.box[1] = V.map.box[1] = uint32_t(kBC / C);
  out->tensor_maps = {Q.map, K.map, V.map};
  const std::string it = w_.idx_t();
  auto N = [](int64_t v) { return std::to_string(v); };

  w_.line("const unsigned smem = (kiln_smem_u32(kiln_dsmem) + 1023u) & ~1023u;");
  w_.line(absl::StrCat("const unsigned qs = smem, kv0 = smem + ", qb, ", qbar = kv0 + ", int64_t(S) * 2 * kvb,
                       ", qfree = qbar + 8;"));
  w_.line(absl::StrCat("const unsigned fullk0 = qbar + 16, fullv0 = fullk0 + ", 8 * S, ", emptyk0 = fullv0 + ", 8 * S,
                       ", emptyv0 = emptyk0 + ", 8 * S, ";"));
  w_.line("const int tid = (int)threadIdx.x;");
  w_.open("if (tid == 0)");
  w_.line("kiln_mbar_init(qbar, 1), kiln_mbar_init(qfree, 8);");
  w_.open("for (int s = 0; s < " + N(S) + "; ++s)");
  w_.line("kiln_mbar_init(fullk0 + 8 * s, 1), kiln_mbar_init(fullv0 + 8 * s, 1);");
  w_.line(absl::StrCat("kiln_mbar_init(emptyk0 + 8 * s, ", 8 * C, "), kiln_mbar_init(emptyv0 + 8 * s, ", 8 * C,
                       ");  // lane 0 of each consumer warp (of the cluster)"));
  w_.close();
  w_.line("asm volatile(\"fence.mbarrier_init.release.cluster;\" ::: \"memory\");");
  w_.close();
  if (C > 1) {
    // The peer multicasts into this block's stages and arrives on its barriers: both must exist.
    w_.line("kiln_cluster_sync();");
    w_.line(absl::StrCat("const int rank = (int)kiln_cluster_rank(), cid = (int)blockIdx.x / ", C, ", ncl = (int)gridDim.x / ", C,
                         ";"));
  } else {
    w_.line("__syncthreads();");
    w_.line("const int rank = 0, cid = (int)blockIdx.x, ncl = (int)gridDim.x;");
  }
  // Key tiles of query tile `mt`; a block's u-th tile walks those of the cluster's longest.
  w_.line(causal ? absl::StrCat("auto kv_tiles = [&](long long mt) { return (int)min(", NT, "LL, (mt * ", kBR, " + ",
                                kBR + kBC - 1, ") / ", kBC, "); };")
                 : absl::StrCat("auto kv_tiles = [&](long long) { return ", NT, "; };"));
  w_.line(absl::StrCat("auto nkv_of = [&](long long pair, int u) { const long long p0 = pair - rank; return kv_tiles(u == 0 ? ",
                       MT - 1, "LL - p0 : p0 + ", C - 1, "); };"));
  // Opens the loops over the block's work (a cluster walks items cid, cid + ncl, ...; the
  // runtime may launch fewer clusters than items) and its tiles (u = 0, 1): the batch index,
  // first query m0 and key tiles nkv; g0 counts the key tiles before (the rings run on across
  // tiles), uu the tiles before (the q barriers' phase).
  auto open_tiles = [&] {
    w_.line("int g0 = 0, uu = 0;");
    // A symbolic batch (passes/symbolic.h) reads its size: the text serves every batch size.
    const std::string items = k_.any_symbolic() ? absl::StrCat("(long long)", w_.extent_product(ax.batch), " * ", P / C, "LL")
                                                : absl::StrCat(blocks / C, "LL");
    w_.open(absl::StrCat("for (long long item = cid; item < ", items, "; item += ncl)"));
    w_.line(absl::StrCat("const long long b = item * ", C, " + rank, pair = b % ", P, "LL;"));
    w_.line(absl::StrCat("const int ntiles = pair == ", MT - 1, "LL - pair ? 1 : 2;"));
    w_.open("for (int u = 0; u < ntiles; g0 += nkv_of(pair, u), ++u, ++uu)");
    w_.line(absl::StrCat(it, " bt = ", idx_cast(absl::StrCat("b / ", P, "LL")), ";"));
    w_.unravel("bt", ax.batch);
    w_.line(absl::StrCat("const int m0 = (int)(u == 0 ? ", MT - 1, "LL - pair : pair) * ", kBR, ";"));
    w_.line("const int nkv = nkv_of(pair, u);");
  };

  // ---- producer warpgroup: thread 0 copies q and the k tiles, thread 32 the v tiles. A k tile
  // is free once its scores have landed, a v tile only once its product has: the two rings run
  // apart, so k is loaded ahead of v.
  w_.open("if (tid < 128)");
  w_.line("asm volatile(\"setmaxnreg.dec.sync.aligned.u32 40;\");");
  // One operand tile of `box_rows` rows (64-column chunks); with a cluster (k and v), this block's
  // share of its rows, multicast into the same place in both blocks.
  auto copy = [&](const AttnOperand& op, int map, const std::string& dst, int box_rows, const std::string& row,
                  const std::string& bar, bool shared) {
    const bool mc = shared && C > 1;
    for (int c = 0; c < chunks; ++c) {
      std::string args = absl::StrCat(dst, " + ", c * box_rows * 128, mc ? absl::StrCat(" + rank * ", box_rows / C * 128) : "",
                                      ", &tm", map, ", ", bar, ", ", c * 64, ", ", row,
                                      mc ? absl::StrCat(" + rank * ", box_rows / C) : "");
      for (int b : op.batch_axes) absl::StrAppend(&args, ", (int)", w_.axis(b));
      if (mc) absl::StrAppend(&args, ", (unsigned short)", (1 << C) - 1);
      w_.line(absl::StrCat("kiln_tma", op.map.dims.size(), mc ? "_mc(" : "(", args, ");"));
    }
  };
  for (bool kside : {true, false}) {
    w_.open(kside ? "if (tid == 0)" : "else if (tid == 32)");
    open_tiles();
    if (kside) {
      w_.line("kiln_mbar_wait(qfree, (uu & 1) ^ 1);  // the consumers are done with the previous q tile");
      w_.line(absl::StrCat("kiln_mbar_expect_tx(qbar, ", qb, ");"));
      copy(Q, 0, "qs", kBR, "m0", "qbar", false);
    }
    w_.open("for (int j = 0; j < nkv; ++j)");
    w_.line(absl::StrCat("const int g = g0 + j, s = g % ", S, ";"));
    const std::string side = kside ? "k" : "v";
    w_.line(absl::StrCat("kiln_mbar_wait(empty", side, "0 + 8 * s, ((g / ", S, ") & 1) ^ 1);"));
    w_.line(absl::StrCat("kiln_mbar_expect_tx(full", side, "0 + 8 * s, ", kvb, ");"));
    copy(kside ? K : V, kside ? 1 : 2, absl::StrCat("kv0 + s * ", 2 * kvb, kside ? "" : absl::StrCat(" + ", kvb)), kBC,
         absl::StrCat("j * ", kBC), absl::StrCat("full", side, "0 + 8 * s"), true);
    w_.close();
    w_.close();
    w_.close();
    w_.close();
  }
  w_.close();

  // ---- consumer warpgroups: 64 queries each
  const std::string sched = schedule(k_);
  const bool pipelined = sched != "plain", turns = sched == "pingpong";
  w_.open("else");
  w_.line("asm volatile(\"setmaxnreg.inc.sync.aligned.u32 232;\");");
  w_.line("const int wg = tid / 128 - 1, cw = (tid / 32) % 4, lane = tid % 32, tq = lane % 4;");
  // wgmma descriptors: the q tile's rows of this warpgroup, and the k / v tiles of stage 0; a
  // descriptor's address field is (byte address) / 16, so an offset within shared memory is a
  // plain add.
  w_.line("const unsigned long long dq = kiln_gmma_desc(qs + wg * 8192, 16, 1024, 1);");
  w_.line(absl::StrCat("const unsigned long long dk0 = kiln_gmma_desc(kv0, 16, 1024, 1), dv0 = kiln_gmma_desc(kv0 + ", kvb,
                       ", ", kBC * 128, ", 1024, 1);"));
  w_.line(absl::StrCat("float o[", D / 2, "], sc[", kBC / 2, "], corr[2];"));
  w_.line(absl::StrCat("unsigned pf[", kBC / 16, "][4];"));
  const std::string ty = bf ? ".bf16.bf16" : ".f16.f16";
  const std::string scale2 = c_float_literal(double(float(scale * 1.4426950408889634)), false, "f");
  // Ping-pong: named barrier 1 + w is warpgroup w's turn to issue wgmma; each warpgroup hands the
  // turn to the other once it has issued, so one's softmax runs while the other's products do.
  auto turn_begin = [&] {
    if (turns) w_.line("asm volatile(\"bar.sync %0, 256;\" :: \"r\"(1 + wg) : \"memory\");");
  };
  auto turn_end = [&] {
    if (turns) w_.line("asm volatile(\"bar.arrive %0, 256;\" :: \"r\"(2 - wg) : \"memory\");");
  };
  auto wait_group = [&](int n) { w_.line(absl::StrCat("asm volatile(\"wgmma.wait_group.sync.aligned ", n, ";\" ::: \"memory\");")); };
  auto commit = [&] { w_.line("asm volatile(\"wgmma.commit_group.sync.aligned;\" ::: \"memory\");"); };
  auto fence = [&] { w_.line("asm volatile(\"wgmma.fence.sync.aligned;\" ::: \"memory\");"); };
  // Issues S = Q K^T for the k tile in stage `st` (phase `ph`): k16 steps along the head dim,
  // 32 bytes into a 128-byte swizzled row; the first step overwrites the accumulators.
  auto issue_scores = [&](const std::string& st, const std::string& ph) {
    std::string regs, cons;
    for (int q = 0; q < kBC / 2; ++q) {
      absl::StrAppend(&regs, q ? ", " : "", "%", q);
      absl::StrAppend(&cons, q ? ", " : "", "\"+f\"(sc[", q, "])");
    }
    w_.line(absl::StrCat("kiln_mbar_wait(fullk0 + 8 * ", st, ", ", ph, ");"));
    fence();
    w_.line(absl::StrCat("const unsigned long long dk = dk0 + (unsigned long long)(", st, " * ", 2 * kvb / 16, ");"));
    w_.line("#pragma unroll");
    w_.open(absl::StrCat("for (int kk = 0; kk < ", D / 16, "; ++kk)"));
    w_.line(absl::StrCat("const unsigned long long off = (kk / 4) * ", kBC * 8, " + (kk % 4) * 2;"));
    w_.line(absl::StrCat("asm volatile(\"{\\n .reg .pred p;\\n setp.ne.b32 p, %", kBC / 2 + 2,
                         ", 0;\\n wgmma.mma_async.sync.aligned.m64n", kBC, "k16.f32", ty, " {", regs, "}, %", kBC / 2,
                         ", %", kBC / 2 + 1, ", p, 1, 1, 0, 0;\\n}\" : ", cons,
                         " : \"l\"(dq + (kk / 4) * ", kBR * 8, " + (kk % 4) * 2), \"l\"(dk + off), \"r\"(kk));"));
    w_.close();
    commit();
  };
  // Issues O += P V for the v tile in stage `st`: V n-major (rows are keys, 64-column boxes
  // 128 * 128 bytes apart), k16 = 16 rows; P from registers.
  auto issue_pv = [&](const std::string& st, const std::string& ph) {
    std::string regs, cons;
    for (int q = 0; q < D / 2; ++q) {
      absl::StrAppend(&regs, q ? ", " : "", "%", q);
      absl::StrAppend(&cons, q ? ", " : "", "\"+f\"(o[", q, "])");
    }
    const int64_t n = D / 2;
    w_.line(absl::StrCat("kiln_mbar_wait(fullv0 + 8 * ", st, ", ", ph, ");"));
    fence();
    w_.line(absl::StrCat("const unsigned long long dv = dv0 + (unsigned long long)(", st, " * ", 2 * kvb / 16, ");"));
    w_.line("#pragma unroll");
    w_.open(absl::StrCat("for (int kk = 0; kk < ", kBC / 16, "; ++kk)"));
    w_.line(absl::StrCat("asm volatile(\"wgmma.mma_async.sync.aligned.m64n", D, "k16.f32", ty, " {", regs, "}, {%", n,
                         ", %", n + 1, ", %", n + 2, ", %", n + 3, "}, %", n + 4, ", 1, 1, 1, 1;\" : ", cons,
                         " : \"r\"(pf[kk][0]), \"r\"(pf[kk][1]), \"r\"(pf[kk][2]), \"r\"(pf[kk][3]), \"l\"(dv + kk * 128));"));
    w_.close();
    commit();
  };
  // Masks of key tile `j`, only where a tile reaches past the keys, the diagonal, or has a bias;
  // scores stay unscaled (the softmax folds the scale into its exponent), so a bias is added
  // divided by the scale. Thread (warp cw, lane) holds rows row0 (+8) and keys 8x + 2tq (+1):
  // sc[4x + c].
  const std::string inv_scale = c_float_literal(double(float(1.0 / scale)), false, "f");
  auto mask_scale = [&](const std::string& j) {
    std::string edge = absl::StrCat("(", j, " + 1) * ", kBC, " > ", Sk);
    if (causal) absl::StrAppend(&edge, " || ", j, " * ", kBC, " + ", kBC - 1, " > wrow");
    if (has_bias) edge = "true";
    w_.open("if (" + edge + ")");
    w_.line("#pragma unroll");
    w_.open(absl::StrCat("for (int x = 0; x < ", kBC / 8, "; ++x)"));
    w_.line("#pragma unroll");
    w_.open("for (int c = 0; c < 4; ++c)");
    w_.line(absl::StrCat(it, " qi = row0 + ", idx_cast("(c >> 1) * 8"), ";"));
    w_.line(absl::StrCat(it, " kj = ", idx_cast(absl::StrCat(j, " * ", kBC, " + x * 8 + tq * 2 + (c & 1)")), ";"));
    w_.line("float v = sc[4 * x + c];");
    if (has_bias) {
      w_.open("if (qi < " + w_.ilit(Sq) + " && kj < " + w_.ilit(Sk) + ")");
      w_.set_axis(ax.sq, "qi");
      w_.set_axis(ax.sk, "kj");
      w_.set_axis(ax.d, "0");
      w_.set_axis(ax.dv, "0");
      w_.line("v += (" + d_.cast(k_.nodes[a.inputs[3]].dtype, DType::kFloat32, w_.eval(a.inputs[3])) + ") * " +
              inv_scale + ";");
      w_.close();
    }
    w_.line(std::string("if (kj >= ") + w_.ilit(Sk) + (causal ? " || kj > qi" : "") + ") v = KILN_NEG_INF;");
    w_.line("sc[4 * x + c] = v;");
    w_.close();
    w_.close();
    w_.close();
  };
  // Online softmax in base 2: a row lives in the 4 threads of a quad; the running max is kept
  // unscaled (the scale is positive) and each exponent is one fma. corr[h] rescales what O holds.
  auto softmax = [&] {
    w_.line("#pragma unroll");
    w_.open("for (int h = 0; h < 2; ++h)");
    w_.line("float mx = KILN_NEG_INF;");
    w_.line("#pragma unroll");
    w_.line(absl::StrCat("for (int x = 0; x < ", kBC / 8,
                         "; ++x) mx = fmaxf(mx, fmaxf(sc[4 * x + 2 * h], sc[4 * x + 2 * h + 1]));"));
    w_.line("mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));");
    w_.line("mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));");
    w_.line("const float mnew = fmaxf(mrow[h], mx);");
    w_.line(absl::StrCat("const float base = mnew == KILN_NEG_INF ? 0.0f : mnew * ", scale2, ";"));
    w_.line(absl::StrCat("corr[h] = kiln_ex2(mrow[h] * ", scale2, " - base);"));
    w_.line("mrow[h] = mnew;");
    w_.line("float sum = 0.0f;");
    w_.line("#pragma unroll");
    w_.open(absl::StrCat("for (int x = 0; x < ", kBC / 8, "; ++x)"));
    w_.line(absl::StrCat("sc[4 * x + 2 * h] = kiln_ex2(fmaf(sc[4 * x + 2 * h], ", scale2, ", -base));"));
    w_.line(absl::StrCat("sc[4 * x + 2 * h + 1] = kiln_ex2(fmaf(sc[4 * x + 2 * h + 1], ", scale2, ", -base));"));
    w_.line("sum += sc[4 * x + 2 * h] + sc[4 * x + 2 * h + 1];");
    w_.close();
    w_.line("lrow[h] = lrow[h] * corr[h] + sum;");
    w_.close();
  };
  auto rescale = [&] {
    w_.line("#pragma unroll");
    w_.line(absl::StrCat("for (int x = 0; x < ", D / 8,
                         "; ++x) { o[4 * x] *= corr[0]; o[4 * x + 1] *= corr[0]; o[4 * x + 2] *= corr[1]; o[4 * x + 3] *= corr[1]; }"));
  };
  // P as A fragments of k16 steps over the keys (the accumulator layout of S, rounded).
  const std::string pk = bf ? "kiln_pack_bf" : "kiln_pack_h";
  auto pack = [&] {
    w_.line("#pragma unroll");
    w_.open(absl::StrCat("for (int kk = 0; kk < ", kBC / 16, "; ++kk)"));
    w_.line(absl::StrCat("pf[kk][0] = ", pk, "(sc[8 * kk], sc[8 * kk + 1]), pf[kk][1] = ", pk,
                         "(sc[8 * kk + 2], sc[8 * kk + 3]);"));
    w_.line(absl::StrCat("pf[kk][2] = ", pk, "(sc[8 * kk + 4], sc[8 * kk + 5]), pf[kk][3] = ", pk,
                         "(sc[8 * kk + 6], sc[8 * kk + 7]);"));
    w_.close();
  };
  // A consumer warp frees a stage in every block of the cluster (the peer's producer multicasts
  // into it).
  auto release_to = [&](const std::string& bar) {
    w_.line(C > 1 ? absl::StrCat("if (lane == 0) for (unsigned r = 0; r < ", C, "u; ++r) kiln_mbar_arrive_cluster(", bar, ", r);")
                  : absl::StrCat("if (lane == 0) kiln_mbar_arrive(", bar, ");"));
  };
  auto release_k = [&](const std::string& st) { release_to("emptyk0 + 8 * " + st); };
  auto release_v = [&](const std::string& st) { release_to("emptyv0 + 8 * " + st); };
  auto stage_of = [&](const std::string& j, const std::string& st, const std::string& ph) {
    w_.line(absl::StrCat("const int ", st, " = (g0 + ", j, ") % ", S, ";"));
    w_.line(absl::StrCat("const unsigned ", ph, " = (unsigned)(((g0 + ", j, ") / ", S, ") & 1);"));
  };
  // Once the tile's last scores have landed, q is free for the next tile's copy.
  auto release_q = [&] { w_.line("if (lane == 0) kiln_mbar_arrive(qfree);"); };
  if (turns) w_.line("if (wg == 1) asm volatile(\"bar.arrive 1, 256;\" ::: \"memory\");  // warpgroup 0 goes first");
  open_tiles();
  w_.line("const int wrow = m0 + wg * 64;  // the warpgroup's first query");
  w_.line(absl::StrCat(it, " row0 = ", idx_cast("wrow + cw * 16 + lane / 4"), ";"));
  w_.line("#pragma unroll");
  w_.line(absl::StrCat("for (int x = 0; x < ", D / 2, "; ++x) o[x] = 0.0f;"));
  w_.line("float mrow[2] = {KILN_NEG_INF, KILN_NEG_INF}, lrow[2] = {0.0f, 0.0f};");
  w_.line("kiln_mbar_wait(qbar, (unsigned)(uu & 1));");
  if (!pipelined) {
    w_.open("for (int j = 0; j < nkv; ++j)");
    stage_of("j", "s", "ph");
    issue_scores("s", "ph");
    wait_group(0);
    release_k("s");
    w_.line("if (j + 1 == nkv) " + std::string("{ if (lane == 0) kiln_mbar_arrive(qfree); }"));
    mask_scale("j");
    softmax();
    rescale();
    pack();
    issue_pv("s", "ph");
    wait_group(0);
    release_v("s");
    w_.close();
  } else {
    // S_j is issued with O += P_{j-1} V_{j-1} behind it, and the softmax of S_j runs while the
    // tensor cores compute that product. O is rescaled between the two issues (none of its
    // products is in flight then). The wait for P_{j-1} V_{j-1} opens the next iteration: ptxas
    // moves a wgmma wait up to the start of its basic block, so a wait after the softmax in the
    // same block would run before it.
    w_.open("");
    stage_of("0", "s", "ph");
    turn_begin();
    issue_scores("s", "ph");
    turn_end();
    wait_group(0);
    release_k("s");
    mask_scale("0");
    softmax();
    w_.close();
    // Once P_{j-2} V_{j-2} has landed (iteration j's first step): its v tile is free, and P_{j-1}
    // is packed into the registers it read.
    auto landed = [&](const std::string& j) {
      wait_group(0);
      w_.open(absl::StrCat("if (", j, " >= 2)"));
      stage_of(j + " - 2", "pps", "ppph");
      release_v("pps");
      w_.close();
    };
    w_.open("for (int j = 1; j < nkv; ++j)");
    stage_of("j", "s", "ph");
    stage_of("j - 1", "ps", "pph");
    landed("j");
    pack();
    turn_begin();
    issue_scores("s", "ph");
    rescale();
    issue_pv("ps", "pph");
    turn_end();
    wait_group(1);
    release_k("s");
    mask_scale("j");
    softmax();
    w_.close();
    w_.open("");
    stage_of("nkv - 1", "s", "ph");
    landed("nkv");
    release_q();
    pack();
    turn_begin();
    rescale();
    issue_pv("s", "ph");
    turn_end();
    wait_group(0);
    release_v("s");
    w_.close();
  }
  attention_epilogue(an, "o[4 * x + c]");
  w_.close();  // tile loop
  w_.close();  // work loop
  if (turns) w_.line("if (wg == 0) asm volatile(\"bar.sync 1, 256;\" ::: \"memory\");  // warpgroup 1's last hand-over");
  w_.close();
  // No block leaves while its peer may still multicast into it or arrive on its barriers.
  if (C > 1) w_.line("kiln_cluster_sync();");

  out->grid[0] = uint32_t(std::max<int64_t>(1, blocks));
  out->shared_bytes = uint32_t(qb + int64_t(S) * 2 * kvb + 8 * (2 + 4 * S) + 1024);
  out->strategy = absl::StrCat("attention sm_90a: q/k/v through TMA (128B swizzle) into ", S, " stages of ", kBC,
                               " keys, wgmma m64n", kBC, "k16 (S = QK^T) and m64n", D, "k16 (O += PV, P from registers), ",
                               bf ? "bf16" : "f16", ", 2 consumer warpgroups x 64 queries + 1 producer warpgroup, ", blocks,
                               " blocks of 2 query tiles, ", sched, " schedule", C > 1 ? ", clusters of 2 sharing k/v (multicast)" : "", causal ? ", causal tiles skipped" : "",
                               has_bias ? ", bias per score" : "");
  return kThreads;
}

}  // namespace kiln::codegen::gpu::render_detail
